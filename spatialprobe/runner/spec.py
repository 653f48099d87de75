"""A run's resolved specification and its identity.

A spec is everything that decides a run's results (``settings``) plus where and how fast it
runs (``runtime``). Its **identity** is the hash of the whole spec minus ``runtime``, whose
keys come from one explicit list, :data:`RUNTIME_KEYS`: a run directory resumes only a run of
the same identity, and a refusal names the settings that differ.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

RUNTIME_KEYS = frozenset({"device", "batch_size", "workers", "ray", "precision", "compile",
                          "checkpoint", "device_map"})
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

    def __post_init__(self) -> None:
        extra = sorted(set(self.runtime) - RUNTIME_KEYS)
        if extra:
            raise ValueError(f"runtime settings {extra} are not runtime keys ({sorted(RUNTIME_KEYS)}); "
                             "they change results and belong in the run's settings.")

    @property
    def identity(self) -> str:
        """sha256 of the kind and settings (runtime left out), as canonical JSON."""
        text = json.dumps(canonical({"kind": self.kind, "settings": self.settings}),
                          sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "identity": self.identity, "settings": canonical(self.settings),
                "runtime": canonical(self.runtime)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        return cls(str(data["kind"]), dict(data.get("settings") or {}), dict(data.get("runtime") or {}))


def differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """``key: old -> new`` for every leaf where two JSON values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for key in sorted(set(old) | set(new), key=str)
                for d in differences(old.get(key), new.get(key), f"{prefix}{key}.")]
    return [] if old == new else [f"{prefix.rstrip('.')}: {old!r} -> {new!r}"]


def refuse_other_identity(path: Any, old: dict[str, Any], new: RunSpec) -> None:
    """Raise a one-sentence ValueError naming the settings that differ, if identities differ."""
    if old.get("identity") == new.identity:
        return
    changed = differences({"kind": old.get("kind"), **(old.get("settings") or {})},
                          {"kind": new.kind, **canonical(new.settings)})
    more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
    raise ValueError(f"{path} already holds another run (settings that differ: "
                     f"{'; '.join(changed[:5]) or 'its identity'}{more}). Use another --out "
                     "directory, or the run's own settings to resume it.")
