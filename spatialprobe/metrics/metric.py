"""One number a researcher reads: its mean, spread (or None), count, breakdown and interval."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

STD_DDOF = 0
"""σ over folds or annotators is the population standard deviation (numpy's default, ``ddof=0``)."""


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
    resampled: bool = False
    """True once an interval was computed for it: ``ci`` is then always written, null where it
    could not be measured (one cluster, nothing to resample). False: no ``ci`` key at all."""

    def with_intervals(self, ci: tuple[float, float] | None,
                       parts: Mapping[str, tuple[float, float] | None] | None = None) -> Metric:
        """This metric with its interval, and intervals for the breakdown parts named in ``parts``."""
        parts = parts or {}
        breakdown = {name: replace(sub, ci=parts[name], resampled=True) if name in parts else sub
                     for name, sub in self.breakdown.items()}
        return replace(self, ci=ci, resampled=True, breakdown=breakdown)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mean": _finite(self.mean), "std": _finite(self.std), "n": int(self.n)}
        if self.ci is not None:
            out["ci"] = [float(self.ci[0]), float(self.ci[1])]
        elif self.resampled:
            out["ci"] = None
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
