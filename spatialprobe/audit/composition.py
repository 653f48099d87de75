"""A run's score re-weighted so that every answer value (or every value of an item field, an object
type, a question type) counts alike: what the score would be on a test set of another composition.

The re-weighted score is the mean over groups of each group's score - the statistic of a
non-pooled :class:`~spatialprobe.metrics.intervals.Resampling` grouped by the field - so its point
estimate and its cluster-robust interval come from the same registered statistic as the run's own
(:func:`spatialprobe.metrics.estimates.point_estimates`, :func:`~spatialprobe.metrics.intervals.metric_intervals`).
By answer value (``answer``): the gold label, or for numeric golds (rows with ``mra``) the gold's
quantile bin (``bins`` of them, equal counts), the score MRA.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from spatialprobe.metrics.estimates import point_estimates
from spatialprobe.metrics.intervals import Resampling, metric_intervals

GROUP = "_composition"


def _binned(rows: Sequence[Mapping[str, Any]], bins: int) -> list[str]:
    values = np.array([float(r["gold"]) for r in rows])
    edges = np.unique(np.quantile(values, np.linspace(0, 1, bins + 1)))
    index = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
    return [f"[{edges[i]:.3g}, {edges[i + 1]:.3g}{']' if i == len(edges) - 2 else ')'}" for i in index]


def reweighted(rows: Sequence[Mapping[str, Any]], spec: Resampling, by: str, bins: int = 5) -> dict[str, Any]:
    """The score of ``rows`` as it is and re-weighted to uniform groups of ``by`` (``answer`` or a
    row field), each with its interval, and every group's score and size."""
    numeric = any(r.get("mra") is not None for r in rows)
    counted = [r for r in rows if r.get("mra") is not None] if numeric else list(rows)
    if by == "answer":
        groups = _binned(counted, bins) if numeric else [str(r.get("gold")) for r in counted]
    else:
        groups = [str(r.get(by)) if r.get(by) not in (None, "") else "-" for r in counted]
    tagged = [{**r, GROUP: g} for r, g in zip(counted, groups, strict=True)]
    metric, stat, pred = ("mra", "mra", "mra") if numeric else ("accuracy", "accuracy", spec.pred)
    base = replace(spec, metrics={metric: stat}, pred=pred, rows=None, group=None, only=None)
    uniform = replace(base, group=GROUP, pooled=False, part="{}")
    as_is, even = point_estimates(tagged, replace(base, pooled=True)), point_estimates(tagged, uniform)
    ci_as_is = metric_intervals(tagged, replace(base, pooled=True))[metric][""]
    ci_even = metric_intervals(tagged, uniform)[metric]
    parts = {name: {"score": part.mean, "n": part.n, "ci": ci_even.get(name)}
             for name, part in sorted(even[metric].breakdown.items())}
    return {"by": by, "score": metric, "as_is": {"value": as_is[metric].mean, "ci": ci_as_is},
            "uniform": {"value": even[metric].mean, "ci": ci_even[""]}, "groups": parts,
            "rows": len(tagged)}
