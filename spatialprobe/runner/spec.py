"""A run's resolved specification and its identity.

A spec is everything that decides a run's results (``settings``), the fingerprints of what it
reads (``inputs``: models and files, :mod:`spatialprobe.fingerprints`) plus where and how fast it
runs (``runtime``). Its **identity** is the hash of the whole spec minus ``runtime``, whose
keys come from one explicit list, :data:`RUNTIME_KEYS`: a run directory resumes only a run of
the same identity, and a refusal names the inputs that changed and the settings that differ.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from spatialprobe.errors import UsageError
from spatialprobe.fingerprints import changed_inputs

RUNTIME_KEYS = frozenset({"device", "batch_size", "workers", "ray", "precision", "compile",
                          "checkpoint", "device_map", "max_memory", "model_runtime"})
"""Settings that say where and how fast a run executes, never what it computes: the only ones
that may change when a run resumes (or is replayed on another machine)."""


def canonical(value: Any) -> Any:
    """``value`` as plain JSON (tuples -> lists, keys as strings), for hashing and comparing."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


@dataclass(frozen=True)
class RunSpec:
    """What a run is: its kind, the settings that decide its results, and its runtime."""

    kind: str
    """Registered run kind (``probe``, ``judge``, ``synthesize``, ...)."""
    settings: dict[str, Any]
    """Everything that changes the results: model, data, prompts, scorer arguments, seeds, ..."""
    runtime: dict[str, Any] = field(default_factory=dict)
    """Keys of :data:`RUNTIME_KEYS` only: device, batch size, workers, Ray address, precision."""
    inputs: dict[str, Any] = field(default_factory=dict)
    """Every model and file the run reads, by name: what it is, where, and its content's
    fingerprint (:func:`spatialprobe.fingerprints.model_input` / ``file_input``)."""

    def __post_init__(self) -> None:
        extra = sorted(set(self.runtime) - RUNTIME_KEYS)
        if extra:
            raise UsageError(f"runtime settings {extra} are not runtime keys ({sorted(RUNTIME_KEYS)}); "
                             "they change results and belong in the run's settings.")

    @property
    def identity(self) -> str:
        """sha256 of the kind, settings and inputs' fingerprints (runtime left out), as
        canonical JSON. A spec without inputs hashes as before inputs were recorded."""
        hashed: dict[str, Any] = {"kind": self.kind, "settings": self.settings}
        if self.inputs:
            hashed["inputs"] = fingerprints(self.inputs)
        text = json.dumps(canonical(hashed), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "identity": self.identity, "settings": canonical(self.settings),
                "inputs": canonical(self.inputs), "runtime": canonical(self.runtime)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        return cls(str(data["kind"]), dict(data.get("settings") or {}), dict(data.get("runtime") or {}),
                   dict(data.get("inputs") or {}))


def fingerprints(inputs: dict[str, Any]) -> dict[str, Any]:
    """What of the inputs decides results: each one's fingerprint (where it lies does not), and
    whether its checkpoint's own code ran (``--trust-remote-code``)."""
    out: dict[str, Any] = {}
    for name, entry in inputs.items():
        entry = entry if isinstance(entry, dict) else {"fingerprint": entry}
        trusted = bool(entry.get("trust_remote_code"))
        out[name] = [entry.get("fingerprint"), "trust_remote_code"] if trusted else entry.get("fingerprint")
    return out


def differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """``key: old -> new`` for every leaf where two JSON values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for key in sorted(set(old) | set(new), key=str)
                for d in differences(old.get(key), new.get(key), f"{prefix}{key}.")]
    return [] if old == new else [f"{prefix.rstrip('.')}: {old!r} -> {new!r}"]


def what_differs(old: dict[str, Any], new: RunSpec) -> str:
    """The inputs that changed and the settings that differ between a recorded spec (a
    ``config.json``) and ``new``, as one clause; empty when nothing does."""
    changed = changed_inputs(old.get("inputs") or {}, canonical(new.inputs)) if "inputs" in old else []
    settings = differences({"kind": old.get("kind"), **(old.get("settings") or {})},
                           {"kind": new.kind, **canonical(new.settings)})
    more = f" and {len(settings) - 5} more" if len(settings) > 5 else ""
    parts = changed + ([f"settings that differ: {'; '.join(settings[:5])}{more}"] if settings else [])
    return "; ".join(parts)


def same_identity(old: dict[str, Any], new: RunSpec) -> bool:
    """Whether a recorded spec is ``new``'s run. A config written before inputs were recorded
    has none: it is compared without them (its resume must not be refused for that alone)."""
    if "inputs" not in old:
        new = RunSpec(new.kind, new.settings, new.runtime)
    if old.get("identity") == new.identity:
        return True
    unedited = RunSpec.from_dict(old).identity == old.get("identity")
    return unedited and _paths_resolved(old).identity == new.identity


def _paths_resolved(old: dict[str, Any]) -> RunSpec:
    """A recorded spec with each model it recorded by a relative local path written absolute,
    as runs record them now (:func:`spatialprobe.fingerprints.local_path`): a run begun before,
    resumed from the same folder, is the same run (its inputs' fingerprints still decide)."""
    from spatialprobe.fingerprints import local_path

    spec = RunSpec.from_dict(old)
    named = {str(e["model"]) for e in spec.inputs.values() if isinstance(e, dict) and e.get("model")}
    moved = {name: local_path(name) for name in named if local_path(name) != name}

    def absolute(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: absolute(v) for k, v in value.items()}
        if isinstance(value, list):
            return [absolute(v) for v in value]
        return moved.get(value, value) if isinstance(value, str) else value

    return RunSpec(spec.kind, absolute(spec.settings), spec.runtime, spec.inputs)


def refuse_other_identity(path: Any, old: dict[str, Any], new: RunSpec) -> None:
    """Raise a one-sentence UsageError naming the inputs that changed and the settings that
    differ, if identities differ."""
    if same_identity(old, new):
        return
    raise UsageError(f"{path} already holds another run ({what_differs(old, new) or 'its identity differs'}). "
                     "Use another --out directory, or the run's own settings and inputs to resume it.")
