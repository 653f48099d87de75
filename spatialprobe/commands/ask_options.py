"""The options the commands that ask a source's items of a model share (``bench``, ``vsr``,
``spatialmqa``, ``qa text``, ``qa image``), declared once.

:func:`ask_options` adds the options a command names (:data:`ASK_OPTIONS`: ``--protocol``,
``--image-condition``, ``--blind``, ``--max-new-tokens``, ``--scorer-arg``, ``--seed``,
``--device-map``, ``--max-memory``, ``--backend``, ``--items``, ``--protocol-variants``) to its
signature, in the order named (none named: all of them), and hands the command the run's
:class:`~spatialprobe.benchmarks.asking.Asked` as ``asked``, read from them: a ``--max-memory``,
``--protocol-variants`` or ``--scorer-arg`` that does not read is refused in one sentence before
the command reads any data. The command sets what is its own (``device``, ``batch_size``, a
``--method`` that fixes the protocol) with :func:`dataclasses.replace`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

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

if TYPE_CHECKING:
    from spatialprobe.benchmarks.asking import Asked

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


def read_asked(values: Mapping[str, Any]) -> Asked:
    """The run's :class:`~spatialprobe.benchmarks.asking.Asked` from the shared options typed
    (``values``: parameter name -> value; the command sets its device and batch size); a
    ``--max-memory``, ``--protocol-variants`` or ``--scorer-arg`` that does not read is refused in
    one sentence."""
    from spatialprobe.benchmarks.asking import Asked
    from spatialprobe.commands.errors import refusals
    from spatialprobe.commands.model_options import device_map_settings
    from spatialprobe.models.options import parse_pairs
    from spatialprobe.sources.variants import parse_variants

    given = {name: values.get(name, default.default) for name, (_, default) in ASK_OPTIONS.items()}
    device_map, max_memory = device_map_settings(given["device_map"], given["max_memory"])
    with refusals():
        variants = parse_variants(given["protocol_variants"])
        scorer_args = parse_pairs(given["scorer_arg"])
    items = given["items"]
    return Asked(given["protocol"], given["image_condition"], given["blind"], given["max_new_tokens"], given["seed"],
                 backend=given["backend"], scorer_args=scorer_args, device_map=device_map, max_memory=max_memory,
                 items=None if items is None else str(items), protocol_variants=variants)


def ask_options(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: the command (whose keyword-only ``asked`` parameter takes the run's
    :class:`~spatialprobe.benchmarks.asking.Asked`) with the shared options ``names`` (keys of
    :data:`ASK_OPTIONS`; none named: every one) added after its own, in this order."""
    names = names or tuple(ASK_OPTIONS)

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command)
        own = signature.replace(parameters=[p for p in signature.parameters.values() if p.name != "asked"])
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ASK_OPTIONS[name][0],
                                   default=ASK_OPTIONS[name][1]) for name in names]

        @functools.wraps(command)
        def with_ask_options(*args: Any, **kwargs: Any) -> Any:
            return command(*args, asked=read_asked({name: kwargs.pop(name) for name in names}), **kwargs)

        with_ask_options.__annotations__ = {k: v for k, v in command.__annotations__.items() if k != "asked"}
        return with_options(with_ask_options, own, added)

    return decorate
