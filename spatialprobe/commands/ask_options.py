"""The options the commands that ask a source's items of a model share (``bench``, ``vsr``,
``spatialmqa``, ``qa text``, ``qa image``), declared once.

:func:`ask_options` adds the options a command names (:data:`ASK_OPTIONS`: ``--protocol``,
``--image-condition``, ``--blind``, ``--max-new-tokens``, ``--scorer-arg``, ``--seed``,
``--device-map``, ``--max-memory``, ``--backend``, ``--items``, ``--protocol-variants``) to its
signature, in the order named (none named: all of them), and hands the command one :class:`AskFlags` as ``flags``.
``--max-memory`` and ``--protocol-variants`` are read there, so a bad one is refused in one
sentence before the command reads any data; the command turns the flags into its run's
:class:`~spatialprobe.benchmarks.asking.Asked` with :meth:`AskFlags.asked`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from spatialprobe.commands.ask import (
    BackendOption,
    BlindOption,
    ImageConditionOption,
    ItemsOption,
    MaxNewTokensOption,
    ProtocolOption,
    ProtocolVariantsOption,
    ScorerArgOption,
    SeedOption,
)
from spatialprobe.commands.hub import with_options
from spatialprobe.commands.model_options import DeviceMapOption, MaxMemoryOption

ASK_OPTIONS: dict[str, tuple[Any, Any]] = {  # typer reads Optional[...], not X | None
    "protocol": (Optional[str], ProtocolOption),  # noqa: UP045
    "image_condition": (Optional[str], ImageConditionOption),  # noqa: UP045
    "blind": (bool, BlindOption),
    "max_new_tokens": (Optional[int], MaxNewTokensOption),  # noqa: UP045
    "scorer_arg": (list[str], ScorerArgOption),
    "seed": (int, SeedOption),
    "device_map": (Optional[str], DeviceMapOption),  # noqa: UP045
    "max_memory": (list[str], MaxMemoryOption),
    "backend": (Optional[str], BackendOption),  # noqa: UP045
    "items": (Optional[Path], ItemsOption),  # noqa: UP045
    "protocol_variants": (Optional[str], ProtocolVariantsOption),  # noqa: UP045
}
"""Each shared option's parameter name -> (its type, its typer option: flag, default, help)."""


@dataclass(frozen=True)
class AskFlags:
    """What the shared options were given; an option the command does not take keeps its default."""

    protocol: str | None = None
    image_condition: str | None = None
    blind: bool = False
    max_new_tokens: int | None = None
    scorer_arg: tuple[str, ...] = ()
    """``--scorer-arg`` as typed (KEY=VALUE), read by :meth:`asked`."""
    seed: int = 0
    backend: str | None = None
    items: Path | None = None
    device_map: str | None = None
    max_memory: dict[str, str] | None = None
    """``--max-memory`` read per device (None when not given)."""
    protocol_variants: tuple[str, ...] = field(default=())
    """``--protocol-variants`` read (:func:`spatialprobe.sources.variants.parse_variants`)."""

    def asked(self, device: str, batch_size: int, scorer_defaults: Mapping[str, str] | None = None,
              **settings: Any) -> Any:
        """The run's :class:`~spatialprobe.benchmarks.asking.Asked`: these flags with the command's
        ``device`` and ``batch_size``, ``--scorer-arg`` over ``scorer_defaults``, and ``settings``
        (Asked's fields: ``protocol``, ``condition``, ``wordings``) in place of the flags'."""
        from dataclasses import replace

        from spatialprobe.benchmarks.asking import Asked
        from spatialprobe.models.options import parse_pairs

        given = Asked(self.protocol, self.image_condition, self.blind, self.max_new_tokens, self.seed, device,
                      batch_size, self.backend, {**(scorer_defaults or {}), **parse_pairs(self.scorer_arg)},
                      self.device_map, self.max_memory, items=None if self.items is None else str(self.items),
                      protocol_variants=self.protocol_variants)
        return replace(given, **settings)


def read_flags(values: Mapping[str, Any]) -> AskFlags:
    """The flags of the options typed (``values``: parameter name -> value); a ``--max-memory``
    or ``--protocol-variants`` that does not read is refused in one sentence."""
    from spatialprobe.commands.errors import refusals
    from spatialprobe.commands.model_options import device_map_settings
    from spatialprobe.sources.variants import parse_variants

    given = dict(values)
    device_map, max_memory = device_map_settings(given.pop("device_map", None), given.pop("max_memory", []))
    with refusals():
        variants = parse_variants(given.pop("protocol_variants", None))
    return AskFlags(**{**given, "scorer_arg": tuple(given.get("scorer_arg", ()))}, device_map=device_map,
                    max_memory=max_memory, protocol_variants=variants)


def ask_options(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: the command (whose ``flags`` parameter takes an :class:`AskFlags`) with the
    shared options ``names`` (keys of :data:`ASK_OPTIONS`; none named: every one) added after its
    own, in this order."""
    names = names or tuple(ASK_OPTIONS)

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command)
        own = signature.replace(parameters=[p for p in signature.parameters.values() if p.name != "flags"])
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ASK_OPTIONS[name][0],
                                   default=ASK_OPTIONS[name][1]) for name in names]

        @functools.wraps(command)
        def with_ask_options(*args: Any, **kwargs: Any) -> Any:
            flags = read_flags({name: kwargs.pop(name) for name in names})
            return command(*args, flags=flags, **kwargs)

        return with_options(with_ask_options, own, added)

    return decorate
