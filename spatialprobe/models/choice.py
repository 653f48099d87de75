"""``--scorer auto``: which scorer a checkpoint needs, read from its configuration, never its name.

The configuration is a local directory's ``config.json``, or, for a hub id,
``transformers.AutoConfig`` (from the local cache when offline). Each registered adapter says
itself whether it accepts it (:class:`~spatialprobe.models.base.Declared`: a causal head for the
causal scorer, a masked-LM head for the masked one, ViLT for ViLT's); the first that accepts it and
scores cloze prompts is chosen. A configuration that cannot be read falls back to the adapter that
declares itself the fallback, and the reason says so: a name is never read (a ViLT saved in a
folder called "bert-..." is a ViLT), and no adapter is named here.

:func:`auto_model` chooses for the other commands (``qa``, ``vsr``, ``spatialmqa``) among the
model adapters they take, by the same rule: :func:`adapters_for` lists, for a configuration, the
registered ``model`` adapters that can load it, the most specific first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def auto_scorer(model: str) -> tuple[str, str]:
    """(scorer name, the reason for it in one sentence) for ``--scorer auto``: the first of the
    adapters that accept the checkpoint's configuration (:func:`adapters_for`) and score cloze
    prompts; where none does, or the configuration cannot be read, the adapter that declares itself
    the ``fallback`` (:class:`~spatialprobe.models.base.Declared`), and the reason says so."""
    if model == "dummy":
        return "dummy", "--model dummy is the untrained smoke scorer"
    config, where = _read_config(model)
    if config is None:
        return _fallback(), f"no readable configuration ({where}); fell back to the {_fallback()} scorer"
    what = _described(config)
    found = [name for name in adapters_for(config) if "cloze" in _wordings(name)]
    if found:
        return found[0], f"{what} in {where}"
    return _fallback(), f"no cloze scorer accepts {what} in {where}; fell back to the {_fallback()} scorer"


def _described(config: dict[str, Any]) -> str:
    """A checkpoint's configuration in a few words: its first architecture, else its model_type."""
    architectures = [str(a) for a in config.get("architectures") or []]
    if architectures:
        return f"architecture {architectures[0]}"
    return f"model_type {str(config.get('model_type') or '')!r} (no architectures)"


def _wordings(name: str) -> tuple[str, ...]:
    from spatialprobe import registry

    return tuple(getattr(registry.lookup("model", name), "wordings", ()))


def _fallback() -> str:
    """The adapter that declares itself the fallback of ``--scorer auto``."""
    from spatialprobe import registry

    return next(name for name in registry.names("model") if getattr(registry.lookup("model", name), "fallback", False))


_CONFIGS: dict[tuple[str, str | None, int | None], tuple[dict[str, Any] | None, str]] = {}
"""The configurations read in this process, by (model, revision asked, local config.json's mtime):
one command reads a checkpoint's configuration once, whichever code asks."""


def _read_config(model: str) -> tuple[dict[str, Any] | None, str]:
    """The configuration as a dict and where it came from; (None, why not) when it cannot be read.
    Read once per (model, revision) in a process (:data:`_CONFIGS`)."""
    from spatialprobe.loading import hub_defaults

    local = Path(model) / "config.json"
    key = (model, hub_defaults()[0], local.stat().st_mtime_ns if local.is_file() else None)
    if key not in _CONFIGS:
        _CONFIGS[key] = _config_now(model)
    config, where = _CONFIGS[key]
    return (dict(config) if config is not None else None), where


def _config_now(model: str) -> tuple[dict[str, Any] | None, str]:
    local = Path(model) / "config.json"
    if local.is_file():
        try:
            data = json.loads(local.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            return None, f"{local} is not readable JSON: {err}"
        return (data, str(local)) if isinstance(data, dict) else (None, f"{local} is not a JSON object")
    if Path(model).exists():
        return None, f"{model} has no config.json"
    from transformers import AutoConfig

    from spatialprobe.loading import ModelLoadError, load_pretrained

    try:
        config = load_pretrained(AutoConfig, model, "the configuration of")
    except ModelLoadError:
        return None, f"the configuration of {model!r} is neither local nor in the Hugging Face cache"
    return config.to_dict(), f"the configuration of {model!r}"


def causal_only_type(model_type: str) -> bool:
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


def adapters_for(config: dict[str, Any]) -> list[str]:
    """The registered ``model`` adapters that accept a checkpoint of ``config`` (each class's own
    ``accepts``, :class:`~spatialprobe.models.base.Declared`), the most specific first: those that
    prefer it, then by their declared ``specificity``."""
    from spatialprobe import registry

    found = []
    for name in registry.names("model"):
        adapter = registry.lookup("model", name)
        if getattr(adapter, "accepts", None) is not None and adapter.accepts(config):
            found.append((not adapter.prefers(config), adapter.specificity, name))
    return [name for *_, name in sorted(found)]


def judge_adapter() -> str:
    """The registered adapter the VQA judge asks a multimodal LLM through: the first that declares
    ``judges_images`` (:class:`~spatialprobe.models.base.Declared`)."""
    from spatialprobe import registry

    return next(name for name in registry.names("model")
                if getattr(registry.lookup("model", name), "judges_images", False))


def auto_model(model: str, among: tuple[str, ...], command: str) -> tuple[str, str]:
    """(adapter name, why) for ``model``: the first of :func:`adapters_for` that ``command`` takes."""
    from spatialprobe.errors import ModelLoadError, UsageError

    config, where = _read_config(model)
    if config is None:
        raise ModelLoadError(f"{command} cannot tell which model {model!r} is: {where}.")
    found = adapters_for(config)
    for name in found:
        if name in among:
            return name, f"model_type {config.get('model_type')!r} in {where}"
    kind = (f"a {config.get('model_type')!r} checkpoint (architectures "
            f"{', '.join(config.get('architectures') or []) or 'none'})")
    raise UsageError(f"{command} does not take {model!r}: it is {kind}, which the "
                     f"{', '.join(found) or 'no'} adapter(s) load; {command} takes "
                     f"{', '.join(among)}.")


def needs_config(name: str) -> bool:
    """Whether the ``name`` adapter loads a checkpoint whose ``config.json`` says if it applies
    (:attr:`~spatialprobe.models.base.Declared.reads_config`); a server's adapter does not."""
    from spatialprobe import registry

    return bool(getattr(registry.lookup("model", name), "reads_config", True))


def choose(model: str, wordings: tuple[str, ...], command: str, backend: str | None = None) -> tuple[str, str]:
    """(adapter name, why) for asking ``model`` items worded as ``wordings`` (a source offers them).

    ``backend`` (``--backend``, alias ``--scorer``) is taken by name first: it must understand one
    of the wordings, and only an adapter that :func:`needs_config` reads the checkpoint's
    configuration (once), to check that it accepts it; ``model`` is then whatever that adapter
    understands (a served model's name for a server). Without one: among the adapters that accept
    the configuration (:func:`adapters_for`, the most specific first), the first that understands
    the items. One sentence where none fits."""
    from spatialprobe import registry
    from spatialprobe.errors import UsageError

    def understands(name: str) -> bool:
        return bool(set(getattr(registry.lookup("model", name), "wordings", ())) & set(wordings))

    if backend not in (None, "auto"):
        name = str(backend)
        registry.lookup("model", name)  # an unknown name: its own sentence, with close matches
        if not understands(name):
            raise UsageError(f"--backend {name} cannot ask the items of {command}: it understands "
                             f"{', '.join(getattr(registry.lookup('model', name), 'wordings', ())) or 'no'} "
                             f"wording, and they offer {', '.join(wordings)}.")
        if needs_config(name) and model != "dummy":
            found = adapters_for(_config_of(model, command))
            if name not in found:
                fitting = [n for n in found if understands(n)]
                raise UsageError(f"--backend {name} does not apply to {model!r} in {command}: the adapters that "
                                 f"accept it and understand its items are {', '.join(fitting) or 'none'}.")
        return name, f"--backend {name}"
    if model == "dummy":
        found, where = ["dummy"], "--model dummy"
    else:
        found, where = adapters_for(_config_of(model, command)), "its configuration"
    fitting = [name for name in found if understands(name)]
    if not fitting:
        raise UsageError(f"{command} cannot ask {model!r}: the {', '.join(found) or 'no'} adapter(s) that accept "
                         f"it understand none of the wordings its items offer ({', '.join(wordings)}).")
    return fitting[0], f"the first adapter that accepts {where} and understands its items"


def _config_of(model: str, command: str) -> dict[str, Any]:
    """The checkpoint's configuration (:func:`_read_config`), or the one sentence saying why it
    cannot be read (a hub id's: the loader's own, naming the revision and the cache)."""
    from spatialprobe.errors import ModelLoadError

    config, where = _read_config(model)
    if config is None and not Path(model).exists():
        from transformers import AutoConfig

        from spatialprobe.loading import load_pretrained

        config = load_pretrained(AutoConfig, model, "the configuration of").to_dict()
    if config is None:
        raise ModelLoadError(f"{command} cannot tell which model {model!r} is: {where}.")
    return config


def asks(model: str, wordings: tuple[str, ...], backend: str | None = None) -> bool:
    """Whether an adapter that accepts ``model`` understands one of ``wordings`` (so a command asks
    it the items rather than probing it another way); False where its configuration is unreadable."""
    from spatialprobe.errors import SpatialprobeError

    try:
        choose(model, wordings, "", backend)
    except SpatialprobeError:
        return False
    return True


def probe_route(model: str, scorer: str) -> str | None:
    """How ``probe`` puts a task to ``model``: the adapter that asks it the task's question (a chat
    model: a multimodal LLM, a server), or None where it is probed by cloze prompts (``--scorer
    auto`` then chooses by :func:`auto_scorer`). ``scorer`` (``--scorer``/``--backend``) is taken by
    name first; the configuration is read once, and only where an adapter needs it. A multimodal
    LLM adapter named for a checkpoint that is not one is refused in one sentence."""
    from spatialprobe.errors import SpatialprobeError

    if scorer != "auto" and scorer == judge_adapter():
        refuse_unaccepted(scorer, model, "--model",
                          f"a multimodal LLM (image-text-to-text), as --backend {scorer} needs")
    try:
        name, _ = choose(model, ("question",), "probe", scorer)
    except SpatialprobeError:
        return None
    return name


def refuse_unaccepted(adapter: str, model: str, option: str, what: str) -> None:
    """Refuse ``model`` (given as ``option``) in one sentence before any weights load when its
    ``config.json`` shows the ``adapter`` does not accept it: it is not ``what`` (e.g. "a multimodal
    LLM (image-text-to-text)"). A configuration that cannot be read here is left to the loader."""
    from spatialprobe import registry
    from spatialprobe.errors import UsageError

    if model == "dummy" or not (Path(model) / "config.json").is_file():
        return
    config, where = _read_config(model)
    if config is None or registry.lookup("model", adapter).accepts(config):
        return
    found = adapters_for(config)
    raise UsageError(f"{option} {model!r} is not {what}: {where} declares model_type "
                     f"{config.get('model_type')!r} (architectures "
                     f"{', '.join(config.get('architectures') or []) or 'none'}), which the "
                     f"{', '.join(found) or 'no'} adapter(s) load, not {adapter}.")
