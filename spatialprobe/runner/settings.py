"""A run kind's typed settings: one dataclass per kind, to and from a run's ``config.json``.

``to_spec`` turns the dataclass into the spec (its fields as a dict, split into ``settings``
and ``runtime`` by :data:`RUNTIME_KEYS`), so the config holds exactly the dataclass's fields.
``from_config`` is the one way back, for every kind: each key of the config is checked against
the dataclass's fields and their types (nested dataclasses included), so a hand-edited config
is refused in one sentence naming the key (unknown, missing, wrong type or empty) rather than
with a ``KeyError`` or a traceback deep inside the kind.

A field whose metadata has ``nonempty=True`` refuses an empty list, tuple, dict or string; one
with :data:`OPTIONAL` metadata is left out of the config while it is ``None`` (a setting only some
runs of a kind have, e.g. a QA run's image run).

A field that names what a run reads says so in its metadata — :func:`model` (a model path or id,
or a component whose ``model`` argument is one), :func:`models` (a dict some of whose keys name
models) or :func:`data_file` — and :func:`inputs_of` finds every such input of a kind's settings
(nested dataclasses included) and fingerprints it (:mod:`spatialprobe.fingerprints`): a run's
inputs are never listed by hand.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.runner.spec import RUNTIME_KEYS, RunSpec


def to_spec(kind: str, settings: Any) -> RunSpec:
    """The spec of a kind whose resolved settings are the dataclass ``settings``."""
    values = {f.name: _local_models(f, _plain(getattr(settings, f.name))) for f in dataclasses.fields(settings)
              if not (f.metadata.get("absent_if_none") and getattr(settings, f.name) is None)}
    runtime = {k: v for k, v in values.items() if k in RUNTIME_KEYS}
    return RunSpec(kind, {k: v for k, v in values.items() if k not in RUNTIME_KEYS}, runtime)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _local_models(f, _plain(getattr(value, f.name))) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _local_models(f: dataclasses.Field, value: Any) -> Any:
    """A field's plain value with each model it names (its :func:`model` or :func:`models`
    metadata) that is a local path written absolute (:func:`spatialprobe.fingerprints.local_path`):
    the config then names the same folder from any directory, and its fingerprint decides."""
    from spatialprobe.fingerprints import local_path

    how, named = f.metadata.get("input", ("model" if f.metadata.get("names_model") else None, {}))
    if how == "model" and isinstance(value, str):
        return local_path(value)
    if how == "model" and isinstance(value, dict) and isinstance((value.get("args") or {}).get("model"), str) \
            and names_checkpoint(str(value.get("name"))):
        return {**value, "args": {**value["args"], "model": local_path(value["args"]["model"])}}
    if how == "models" and isinstance(value, dict):
        return {k: local_path(v) if k in named and isinstance(v, str) else v for k, v in value.items()}
    return value


def names_checkpoint(adapter: str) -> bool:
    """Whether the ``model`` argument of the registered model adapter ``adapter`` names a checkpoint
    (a local path is then written absolute); not for an adapter that reads no configuration (a
    server's: ``--model`` is the server's name for the model, whatever folders lie here)."""
    from spatialprobe import registry
    from spatialprobe.errors import UnknownComponent

    try:
        return bool(getattr(registry.lookup("model", adapter), "reads_config", True))
    except UnknownComponent:
        return True


NAMES_MODEL = {"names_model": True}
"""Metadata of a field that names a model another field records as an input (a probe's
``model``, beside its scorer's): written absolute where it is a local path, as inputs are."""

OPTIONAL = {"absent_if_none": True}
"""Metadata of a field (``field(default=None, metadata=OPTIONAL)``) left out of the config while
it is ``None``."""


def model(what: str, key: str | None = None, **more: Any) -> dict[str, Any]:
    """Metadata of a field naming a model the run reads: a name or path, or a component (a
    :class:`Component` or registry spec) whose ``model`` argument is one (none: no input).
    ``what`` names it in a refusal ("the detector"); ``key`` is its name among the run's inputs
    (default: the field's)."""
    return {"input": ("model", {key: what}), **more}


def models(**what_by_key: str) -> dict[str, Any]:
    """Metadata of a dict field some of whose keys name models (a synthesis backend's ``vqgan``
    and ``clip``): each key present with a string value is an input of that name."""
    return {"input": ("models", what_by_key)}


def data_file(what: str, key: str | None = None) -> dict[str, Any]:
    """Metadata of a field naming a data file the run reads (a path, or a :class:`DataFile`)."""
    return {"input": ("file", {key: what})}


def inputs_of(settings: Any, adapters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The fingerprinted inputs (models and files) that the fields of ``settings`` name; a model
    input whose key ``adapters`` holds is what that built adapter says it is
    (:func:`~spatialprobe.fingerprints.identity_of`), none where it runs no model."""
    from spatialprobe import fingerprints

    out: dict[str, Any] = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out.update(inputs_of(value, adapters))
        if "input" not in f.metadata or value is None:
            continue
        how, named = f.metadata["input"]
        for key, what in named.items():
            adapter = (adapters or {}).get(key or f.name)
            if how != "file" and adapter is not None:
                name = value.get(key) if isinstance(value, dict) else getattr(value, "args", {}).get("model", value)
                if name is not None:
                    entry = fingerprints.identity_of(adapter, what, str(name))
                    if entry:
                        out[key or f.name] = entry
                continue
            if how == "file":
                path = value.file if isinstance(value, DataFile) else value
                out[key or f.name] = fingerprints.file_input(what, path)
            elif how == "models":
                if isinstance(value.get(key), str):
                    out[key] = fingerprints.model_input(what, value[key])
            elif isinstance(value, str):
                out[key or f.name] = fingerprints.model_input(what, value)
            elif (getattr(value, "args", None) or {}).get("model"):
                out[key or f.name] = fingerprints.model_input(what, value.args["model"],
                                                              value.args.get("revision"))
    return out


def from_config(cls: type, spec: RunSpec, source: str | Path = "config.json") -> Any:
    """The dataclass ``cls`` from a spec's settings and runtime, checked field by field."""
    return _build(cls, {**spec.settings, **spec.runtime}, "", source)


def _build(cls: type, data: Any, prefix: str, source: str | Path) -> Any:
    if not isinstance(data, dict):
        raise _error(source, prefix.rstrip(".") or "settings", f"must be an object, not {_shown(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise _error(source, prefix + unknown[0], f"is not a setting of this run kind (its settings: "
                     f"{', '.join(fields)})")
    values = {}
    for name, f in fields.items():
        key = prefix + name
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise _error(source, key, "is missing")
            continue
        values[name] = _value(hints[name], data[name], key, source)
        if f.metadata.get("nonempty") and not values[name]:
            raise _error(source, key, f"must not be empty, not {_shown(data[name])}")
    return cls(**values)


def _value(hint: Any, value: Any, key: str, source: str | Path) -> Any:
    """``value`` as the type ``hint`` says, or a DataError naming ``key``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        kinds = [a for a in args if a is not type(None)]
        nested = len(kinds) == 1 and (dataclasses.is_dataclass(kinds[0]) or typing.get_origin(kinds[0]) in (
            list, tuple, dict))
        if nested and isinstance(value, (dict, list)):  # X's own sentence names the inner key
            return _value(kinds[0], value, key, source)
        for arg in kinds:
            try:
                return _value(arg, value, key, source)
            except DataError:  # noqa: PERF203 - the next type of the union may fit
                continue
        raise _error(source, key, f"must be {_describe(hint)}, not {_shown(value)}")
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, key + ".", source)  # type: ignore[arg-type]
    if origin in (list, tuple) and isinstance(value, list):
        item = args[0] if args else Any
        return origin(_value(item, v, f"{key}[{n}]", source) for n, v in enumerate(value))
    if origin is dict and isinstance(value, dict):
        item = args[1] if len(args) == 2 else Any
        return {str(k): _value(item, v, f"{key}.{k}", source) for k, v in value.items()}
    if origin is typing.Literal and value in args:
        return value
    if origin is None and _is_instance(value, hint):
        return float(value) if hint is float else value
    raise _error(source, key, f"must be {_describe(hint)}, not {_shown(value)}")


def _is_instance(value: Any, hint: Any) -> bool:
    if isinstance(value, bool):
        return hint is bool  # JSON true is not the integer 1
    if hint is float:
        return isinstance(value, (int, float))
    return isinstance(hint, type) and isinstance(value, hint)


_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
          type(None): "null", list: "a list", tuple: "a list", dict: "an object"}


def _describe(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if dataclasses.is_dataclass(hint):
        return "an object"
    return _NAMES.get(origin or hint, getattr(hint, "__name__", str(hint)))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _error(source: str | Path, key: str, message: str) -> DataError:
    return DataError(source, None, key, f"{message}.")


@dataclasses.dataclass(frozen=True)
class Component:
    """A registered component as a run records it: its name and arguments (the device left out,
    which is runtime)."""

    name: str
    args: dict[str, Any]

    @classmethod
    def of(cls, spec: Any) -> Component:
        """From a ``registry.Spec``, without its ``device``."""
        return cls(spec.name, {k: v for k, v in spec.args.items() if k != "device"})


@dataclasses.dataclass(frozen=True)
class DataFile:
    """A benchmark's data file as a run records it: its absolute path and content version."""

    file: str
    version: str


def recorded(record: Mapping[str, Any], key: str, where: str) -> Any:
    """``record[key]`` of a record a config keeps as a plain object (``where`` names it, e.g.
    ``source``); a missing key is one sentence, not a KeyError."""
    if not isinstance(record, Mapping) or key not in record:
        raise UsageError(f"this run's config.json has no settings key '{where}.{key}'.")
    return record[key]
