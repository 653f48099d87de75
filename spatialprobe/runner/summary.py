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
    "accuracy": {"mean": 54.1, "std": 3.9, "n": 1600, "ci": [50.2, 58.3],
                 "breakdown": {"fold 0": {"mean": 51.2, "std": null, "n": 320, "ci": [...]}, ...}},
    "macro_f1": {...}, ...
  },
  "accuracy": {...}, "macro_f1": {...},   # the headline metrics (same objects), for report/index
  "intervals": {"method": "cluster bootstrap over objects", "resamples": 1000, "level": 0.95,
                "seed": 0, ...},   # how every "ci" was computed (only where the kind has rows)
  "details": {...},                # what only this kind has (chosen prompts, kappa, ...)
  "identity": "...",               # the run's identity (hash of its settings)
  "provenance": {...}              # toolkit and library versions, host, time
}
```

``std`` is a measured spread (over folds, annotators, ...) or ``null`` where none was measured;
never ``0.0`` standing in for "not measured". ``ci`` (a 95 % bootstrap interval) is present
where the kind's Evaluation says how its rows are resampled, described once in ``intervals``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
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
    ci: tuple[float, float] | None = None
    """95 % bootstrap interval ``(low, high)`` where the kind's rows were resampled; else None
    (see :mod:`spatialprobe.metrics.intervals` and the summary's ``intervals``)."""

    def with_intervals(self, ci: tuple[float, float] | None,
                       parts: Mapping[str, tuple[float, float] | None] | None = None) -> Metric:
        """This metric with its interval, and intervals for the breakdown parts named in ``parts``."""
        parts = parts or {}
        breakdown = {name: replace(sub, ci=parts[name]) if name in parts else sub
                     for name, sub in self.breakdown.items()}
        return replace(self, ci=ci, breakdown=breakdown)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mean": _finite(self.mean), "std": _finite(self.std), "n": int(self.n)}
        if self.ci is not None:
            out["ci"] = [float(self.ci[0]), float(self.ci[1])]
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
                  identity: str, provenance: Mapping[str, Any], untrained: bool = False,
                  intervals: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The summary dict in the declared schema."""
    flat = {name: m.to_dict() for name, m in metrics.items()}
    summary: dict[str, Any] = {
        "schema": SCHEMA, "kind": kind, "task": task, "model": model, "dataset": dataset,
        "seed": seed, "untrained": bool(untrained), "metrics": flat,
    }
    for name in HEADLINE:
        summary[name] = flat.get(name, Metric(None).to_dict())
    if intervals is not None:
        summary["intervals"] = dict(intervals)
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
    ci = metric.get("ci")
    if ci is not None and not (len(ci) == 2 and ci[0] <= ci[1]):
        raise ValueError(f"metric {name!r} has an interval that is not [low, high]: {ci!r}")
    for part, sub in (metric.get("breakdown") or {}).items():
        _check_metric(f"{name}.{part}", sub)


def headline(summary: Mapping[str, Any], name: str) -> float | None:
    value = (summary.get(name) or {}).get("mean")
    return None if value is None else float(value)


def fold_values(metric: Mapping[str, Any]) -> Sequence[float]:
    return [p["mean"] for p in (metric.get("breakdown") or {}).values() if p.get("mean") is not None]
