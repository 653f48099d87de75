"""An ask run from what a command is given: the source, the checkpoint, and the options a user
typed. The adapter is chosen from the checkpoint's configuration by the adapters' own
declarations (:func:`spatialprobe.models.choice.choose`), never by the command."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from spatialprobe.benchmarks.base import Source
from spatialprobe.engine.run import AskRun, AskRunSettings
from spatialprobe.engine.wording import choose_wording
from spatialprobe.errors import UsageError
from spatialprobe.image_conditions import BLIND, check_condition
from spatialprobe.runner.settings import Component

RUNTIME_OPTIONS = ("batch_size",)
"""Options of an adapter that say how it runs, not what it computes (the run's runtime)."""


@dataclass(frozen=True)
class AskOptions:
    """What a command was given for an ask run, beyond the source and the checkpoint."""

    protocol: str | None = None
    condition: str | None = None
    blind: bool = False
    max_new_tokens: int | None = None
    seed: int = 0
    device: str = "auto"
    batch_size: int = 8
    backend: str | None = None
    """``--backend`` (alias ``--scorer``): one of the adapters that accept the checkpoint; None: the first."""
    scorer_args: dict[str, str] = field(default_factory=dict)
    device_map: str | None = None
    max_memory: dict[str, str] | None = None
    wordings: tuple[str, ...] | None = None
    """Ask only in these of the source's wordings (``spatialmqa --method clip``: ``contrastive``);
    None: any it offers."""
    items: str | None = None
    """``--items FILE``: ask only the items a subset file keeps (:mod:`spatialprobe.engine.subset`);
    its hash enters the run's identity through the source's settings."""
    protocol_variants: tuple[str, ...] = ()
    """``--protocol-variants circular,swap``: the robustness variants the engine generates
    (:mod:`spatialprobe.engine.variants`); part of the run's identity through the source's settings."""
    server: dict[str, str | None] = field(default_factory=dict)
    """``--base-url`` and ``--api-key-env`` (adapter option -> value, None where not given): the
    options of a model behind a server (:func:`spatialprobe.models.options.with_server_flags`)."""
    samples: int = 1
    """``--samples K``: each item asked K times (:mod:`spatialprobe.engine.repeated_sampling`)."""
    temperature: float | None = None
    """``--temperature T``: sample the generate protocol's replies at T; None: greedy."""


def ask_kind(source: Source, model: str, given: AskOptions, command: str) -> AskRun:
    """The ask run of ``source`` with ``model``, its adapter loaded; refused in one sentence
    (before anything is written) where a setting does not apply."""
    from spatialprobe.engine.load import load_model
    from spatialprobe.engine.protocols import protocols_of
    from spatialprobe.engine.repeated_sampling import check_sampling
    from spatialprobe.models.choice import choose
    from spatialprobe.models.options import resolve, sharding, with_server_flags

    if given.items is not None:
        from spatialprobe.engine.rebuild import restrict

        source = restrict(source, given.items, seed=given.seed)
    if given.protocol_variants:
        from spatialprobe.engine.variants import with_variants

        source = with_variants(source, given.protocol_variants)
    # a benchmark with items that have no options (numeric answers) can only be read from a reply
    protocol = given.protocol or ("generate" if any(not item.options for item in source.items) else "likelihood")
    protocols_of(protocol)  # refused from what was typed, before the configuration is read
    if given.max_new_tokens is not None and protocol == "likelihood":
        raise UsageError("--max-new-tokens applies to the generate protocol; --protocol likelihood generates nothing.")
    condition = given.condition or ("real" if any(i.image for i in source.items) else "none")
    check_condition(condition)
    if given.blind and condition != "real":
        raise UsageError("--blind runs the real condition beside the blind ones; it does not apply "
                         f"with --image-condition {condition}.")
    name, _ = choose(model, given.wordings or source.offered(), command, given.backend)
    _hub_options_apply(name)
    unused = [key for key in given.scorer_args if key in _declared(name, "not_asked")]
    if unused:
        raise UsageError(f"--scorer-arg {unused[0]} does not apply when the {name} model is asked {source.name} "
                         "items: the source words the question, and --max-new-tokens bounds a reply.")
    scorer_args = with_server_flags(name, given.server, given.scorer_args)
    options = resolve(name, {**({"batch_size": given.batch_size} if _option(name, "batch_size") else {}),
                             **scorer_args})
    _answers(name, protocol)  # from the adapter's declaration: before any weights load
    if given.samples > 1 or given.temperature is not None:
        check_sampling(given.samples, given.temperature, protocol, name, bool(_declared_flag(name, "samples")))
    if given.samples > 1 and given.protocol_variants:
        raise UsageError("--protocol-variants and --samples do not combine: a variant group's consistent accuracy "
                         "would mix the samples of its items.")
    runtime = {key: options.pop(key) for key in RUNTIME_OPTIONS if key in options}
    batch_size = int(runtime.get("batch_size", given.batch_size))
    model_runtime = {key: options.pop(key) for key in _declared(name, "runtime_options") if key in options}
    spread = sharding(name, given.device, given.device_map or "none", given.max_memory)  # refused here
    component = Component(name, {"model": model, **options})
    settings = AskRunSettings(component, dict(source.settings), protocol,
                              list(("real", *BLIND) if given.blind else (condition,)), given.seed,
                              given.max_new_tokens or 16, given.device, batch_size,
                              spread.get("device_map", "none"), spread.get("max_memory"),
                              samples=given.samples if given.samples > 1 else None, temperature=given.temperature,
                              model_runtime=model_runtime or None)
    loaded = load_model(component, given.device, batch_size, settings.device_map, settings.max_memory,
                        settings.model_runtime)
    wording = choose_wording(loaded, source, name)
    return AskRun(replace(settings, wording=None if wording == "question" else wording), source, loaded)


def _hub_options_apply(name: str) -> None:
    """Refuse ``--revision`` and ``--trust-remote-code`` for an adapter that loads no checkpoint
    here (a model behind a server: the server chose its weights)."""
    from spatialprobe.loading import hub_defaults
    from spatialprobe.models.choice import needs_config

    revision, trust = hub_defaults()
    if (revision is not None or trust) and not needs_config(name):
        flag = f"--revision {revision}" if revision is not None else "--trust-remote-code"
        raise UsageError(f"{flag} applies to a checkpoint loaded in this process; the {name} model is whatever "
                         "its server loaded.")


def _answers(name: str, protocol: str) -> None:
    """Refuse ``protocol`` in one sentence where the ``name`` adapter declares it cannot answer by
    it (its class's ``protocols``), so the refusal comes before its model loads."""
    from types import SimpleNamespace

    from spatialprobe.engine.protocols import check_protocol

    check_protocol(SimpleNamespace(name=name, protocols=_declared(name, "protocols")), protocol)


def _declared(name: str, attribute: str) -> tuple[str, ...]:
    from spatialprobe import registry

    return tuple(getattr(registry.lookup("model", name), attribute, ()))


def _declared_flag(name: str, attribute: str) -> object:
    from spatialprobe import registry

    return getattr(registry.lookup("model", name), attribute, False)


def _option(name: str, key: str) -> bool:
    from spatialprobe import registry

    return key in getattr(registry.lookup("model", name), "options", {})


def run_ask(source: Source, model: str, given: AskOptions, out: Any, command: str,
            progress: Any = None) -> tuple[AskRun, dict[str, Any]]:
    """Build the run (:func:`ask_kind`) and execute it into ``out``: (the run, its summary)."""
    from spatialprobe.runner import execute

    kind = ask_kind(source, model, given, command)
    return kind, execute(kind, out, progress)
