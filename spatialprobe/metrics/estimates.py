"""Point estimates from the statistic registry, and the spine's hook that adds their intervals.

A kind (or a source) declares what it reports in its :class:`~.intervals.Resampling`: metric
name -> statistic name (:mod:`.statistics`). :func:`point_estimates` computes each such metric
from the registered function with weights of ones - the function whose resamples give its
interval - so a run's number and its interval can never come from two codes:

* no ``group``: the statistic over the rows that count (``only``): measured once, ``std`` None;
* a ``group`` that is ``pooled`` (VISOR's relations, a benchmark's categories): the statistic over
  every row, broken down by group, ``std`` None;
* a ``group`` that is not pooled (the probe's folds, the annotators): the mean and population σ
  over the groups' values (:func:`~.metric.over_parts`), each group in the breakdown.

``n`` is the number of rows that count (all, or those with ``only`` true; for ``share``/``mean``
those with a value).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from spatialprobe.metrics.intervals import DEFAULT_RESAMPLES, Encoded, Resampling, encode, grouped, metric_intervals
from spatialprobe.metrics.metric import Metric, over_parts, single

__all__ = ["measured", "point_estimates", "with_intervals"]


def _value(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def point_estimates(rows: Sequence[Mapping[str, Any]], spec: Resampling, encoded: Encoded | None = None
                    ) -> dict[str, Metric]:
    """Each metric ``spec.metrics`` names, computed on ``rows`` by its registered statistic with
    weights of ones (the centre the interval's resamples vary around); ``encoded``: the rows
    already encoded with ``spec``."""
    if not rows:
        return {name: Metric(None, None, 0) for name in spec.metrics}
    enc = encoded if encoded is not None else encode(rows, replace(spec, clusters=()))  # no cluster read
    ones = np.ones((1, len(rows)))
    counted = [int(enc.mask[enc.groups == g].sum()) for g in range(len(enc.group_names))]
    parts = [spec.part.format(g) for g in enc.group_names]
    out = {}
    for name, stat in spec.metrics.items():
        with warnings.catch_warnings():  # a group without a row that counts is None, not a warning
            warnings.simplefilter("ignore", RuntimeWarning)
            values = [_value(v) for v in grouped(enc, stat, enc.pred, ones)[:, 0]]
        if spec.group is None:
            out[name] = single(values[-1], int(enc.mask.sum()))
        elif spec.pooled:
            out[name] = Metric(values[-1], None, int(enc.mask.sum()),
                               {p: single(v, n) for p, v, n in zip(parts, values, counted, strict=False)})
        else:
            out[name] = over_parts({p: (v, n) for p, v, n in zip(parts, values, counted, strict=False)})
    return out


def measured(metrics: Mapping[str, Metric], specs: Sequence[Resampling],
             predictions: Sequence[Mapping[str, Any]], seed: int | None,
             resamples: int = DEFAULT_RESAMPLES) -> tuple[dict[str, Metric], dict[str, Any] | None]:
    """The spine's hook: every metric the ``specs`` declare, its point estimate computed here
    (:func:`point_estimates`) and its interval from the same statistic (:func:`~.intervals.with_intervals`),
    followed by the kind's other ``metrics``; and the intervals' description.

    A declared metric the kind gives itself in ``metrics`` is kept as the kind gives it (a kind
    not yet moved onto the registry); a kind on the registry leaves it out. Where several
    Resamplings name one metric (VSR's accuracy per category and per relation), the first gives
    its value and each later one adds its groups' parts to its breakdown.
    """
    declared: dict[str, Metric] = {}
    for spec in specs:
        rows = predictions if spec.rows is None else spec.rows
        for name, metric in point_estimates(rows, spec).items():
            if name in metrics:
                continue
            first = declared.get(name)  # a later grouping of the same metric adds its parts
            declared[name] = metric if first is None else replace(
                first, breakdown={**first.breakdown, **metric.breakdown})
    return with_intervals({**declared, **metrics}, specs, predictions, seed, resamples)


def with_intervals(metrics: Mapping[str, Metric], specs: Sequence[Resampling],
                   predictions: Sequence[Mapping[str, Any]], seed: int | None,
                   resamples: int = DEFAULT_RESAMPLES) -> tuple[dict[str, Metric], dict[str, Any] | None]:
    """The spine's hook: ``metrics`` with the intervals ``specs`` ask for, and their description.

    The seed is the run's seed (0 where the run has none), so a run's intervals are reproducible.
    Returns ``(metrics, None)`` for a kind that gives no :class:`Resampling`.
    """
    if not specs:
        return dict(metrics), None
    seed = 0 if seed is None else int(seed)
    out = dict(metrics)
    for spec in specs:
        rows = predictions if spec.rows is None else spec.rows
        found = metric_intervals(rows, spec, resamples, seed) if rows else {}
        for name in spec.metrics:
            if name in out:  # nothing to resample (no rows): the interval is null
                bounds = dict(found.get(name) or {"": None})
                out[name] = out[name].with_intervals(bounds.pop(""), bounds)
    description = specs[0].describe(resamples, seed)
    description["metrics"] = [name for spec in specs for name in spec.metrics if name in out]
    others = []
    for spec in specs[1:]:
        other = spec.describe(resamples, seed)
        differs = {k: v for k, v in other.items() if k != "statistics" and description.get(k) != v}
        others.append({**differs, "statistics": other["statistics"]})
    if others:
        description["also"] = others
    return out, description
