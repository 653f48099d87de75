"""The one schema of ``summary.json``, for every run kind.

```
{
  "schema": "spatialprobe.summary/1",
  "kind": "probe",                 # the run kind
  "task": "size",                  # task or benchmark
  "model": "roberta-large",        # what was measured (model, or backend:model for images)
  "dataset": "size@1a2b3c4d",      # name@version of the items
  "seed": 0,                       # the seed that decides the numbers, or null if none does
  "untrained": false,              # true for the smoke components (dummy scorer, ...)
  "metrics": {                     # every metric in one shape
    "accuracy": {"mean": 54.1, "std": 3.9, "n": 1600,
                 "breakdown": {"fold 0": {"mean": 51.2, "std": null, "n": 320}, ...}},
    "macro_f1": {...}, ...
  },
  "accuracy": {...}, "macro_f1": {...},   # the headline metrics (same objects), for report/index
  "details": {...},                # what only this kind has (chosen prompts, kappa, ...)
  "identity": "...",               # the run's identity (hash of its settings)
  "provenance": {...}              # toolkit and library versions, host, time
}
```

``std`` is a measured spread (over folds, annotators, ...) or ``null`` where none was measured;
never ``0.0`` standing in for "not measured".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SCHEMA = "spatialprobe.summary/1"
STD_DDOF = 0
"""σ over folds or annotators is the population standard deviation (numpy's default, ``ddof=0``)."""
HEADLINE = ("accuracy", "macro_f1")


@dataclass(frozen=True)
class Metric:
    """One number a researcher reads: its mean, spread (or None), count and breakdown."""

    mean: float | None
    """The value (percent for accuracies), or None where nothing was measured."""
    std: float | None = None
    """Spread over the breakdown's parts where it was measured (folds, annotators); else None."""
    n: int = 0
    """How many items it was measured on."""
    breakdown: dict[str, Metric] = field(default_factory=dict)
    """Per fold / per group values, each a Metric."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mean": _finite(self.mean), "std": _finite(self.std), "n": int(self.n)}
        if self.breakdown:
            out["breakdown"] = {k: v.to_dict() for k, v in self.breakdown.items()}
        return out


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def single(value: float | None, n: int) -> Metric:
    """A value measured once (no spread)."""
    return Metric(value, None, n)


def over_parts(parts: Mapping[str, tuple[float | None, int]]) -> Metric:
    """Mean and population σ over parts (folds, annotators), each ``(value, n)``."""
    values = [v for v, _ in parts.values() if v is not None and not math.isnan(v)]
    arr = np.asarray(values, dtype=float)
    return Metric(float(arr.mean()) if values else None,
                  float(arr.std(ddof=STD_DDOF)) if len(values) > 1 else None,
                  sum(n for _, n in parts.values()),
                  {name: single(v, n) for name, (v, n) in parts.items()})


def build_summary(*, kind: str, task: str | None, model: str | None, dataset: str | None,
                  seed: int | None, metrics: Mapping[str, Metric], details: Mapping[str, Any],
                  identity: str, provenance: Mapping[str, Any], untrained: bool = False
                  ) -> dict[str, Any]:
    """The summary dict in the declared schema."""
    flat = {name: m.to_dict() for name, m in metrics.items()}
    summary: dict[str, Any] = {
        "schema": SCHEMA, "kind": kind, "task": task, "model": model, "dataset": dataset,
        "seed": seed, "untrained": bool(untrained), "metrics": flat,
    }
    for name in HEADLINE:
        summary[name] = flat.get(name, Metric(None).to_dict())
    summary.update({"details": dict(details), "identity": identity, "provenance": dict(provenance)})
    check_summary(summary)
    return summary


REQUIRED = ("schema", "kind", "task", "model", "dataset", "seed", "untrained", "metrics", "accuracy",
            "macro_f1", "details", "identity", "provenance")


def check_summary(summary: Mapping[str, Any]) -> None:
    """Raise ValueError if ``summary`` does not follow the schema (every writer calls this)."""
    missing = [k for k in REQUIRED if k not in summary]
    if missing:
        raise ValueError(f"summary lacks {missing}")
    for name, metric in summary["metrics"].items():
        _check_metric(name, metric)


def _check_metric(name: str, metric: Any) -> None:
    if not isinstance(metric, Mapping) or not {"mean", "std", "n"} <= set(metric):
        raise ValueError(f"metric {name!r} is not {{mean, std, n}}: {metric!r}")
    for part, sub in (metric.get("breakdown") or {}).items():
        _check_metric(f"{name}.{part}", sub)


def headline(summary: Mapping[str, Any], name: str) -> float | None:
    value = (summary.get(name) or {}).get("mean")
    return None if value is None else float(value)


def fold_values(metric: Mapping[str, Any]) -> Sequence[float]:
    return [p["mean"] for p in (metric.get("breakdown") or {}).values() if p.get("mean") is not None]
