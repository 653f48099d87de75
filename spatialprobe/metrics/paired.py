"""Is the difference between two runs on the same items real? Paired interval and permutation test.

Two runs are paired when they answered the same items: the same dataset (``name@version``) and
the same prediction keys (``instance_id`` and, where there is one, ``fold``). The difference of a
metric (run A minus run B, computed as each run's point estimate is: per fold, then the mean) gets

* a 95 % interval and a two-sided p-value from **one** cluster-robust standard error of the
  difference (:mod:`.robust`): the influence of every cluster (an object, an image) and of every
  object pair on A − B, the covariance of every two rows that share a cluster summed,
  small-sample corrected (:func:`.robust.dyadic_variance` for object pairs: variance components
  with Satterthwaite's degrees of freedom; K/(K−1) and K−1 degrees of freedom for one cluster).
  The interval is A − B ± t · SE and
  p = P(|t_{K−1}| ≥ |A − B| / SE), so p < 0.05 exactly where the interval excludes 0.

What the two runs share (an item's difficulty) cancels in each row's difference. Rows of two
objects (size and height pairs, judge and QA rows naming two objects) are dependent through both
objects: two equally good models that fail on *different objects* differ by chance on every pair
holding those objects. Swapping whole pairs (the permutation test this replaces) ignored that and
rejected a true null in 33-51 % of such comparisons; this test holds its level (``bench/calibration.py``).
A difference is called significant at 0.05 when p < 0.05 (equivalently: the interval excludes 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import (
    DEFAULT_RESAMPLES,
    Encoded,
    Resampling,
    encode,
    grouped,
    interval_pair,
    linear_gradient,
    units,
)
from spatialprobe.metrics.robust import Estimate, estimates, influence_estimates, t_interval, t_test
from spatialprobe.metrics.statistics import get

ALPHA = 0.05


@dataclass(frozen=True)
class PairedDifference:
    """One metric of run A against run B on the same items."""

    metric: str
    a: float
    b: float
    difference: float
    """A minus B, in points."""
    ci: tuple[float, float] | None
    p: float
    """Two-sided p-value of A − B = 0 (cluster-robust t test); NaN where the rows that count come
    from fewer than two units."""
    statistic: str | None = None
    """The registered statistic it was measured with (:mod:`.statistics`: its header, direction)."""

    @property
    def significant(self) -> bool:
        ci_excludes_zero = self.ci is not None and (self.ci[0] > 0 or self.ci[1] < 0)
        return self.p < ALPHA and ci_excludes_zero


def row_key(row: Mapping[str, Any], key: Sequence[str] = ("instance_id", "fold")) -> tuple[Any, ...]:
    return (str(row[key[0]]), *(row.get(f) for f in key[1:]))


def unpaired_reason(summary_a: Mapping[str, Any], rows_a: Sequence[Mapping[str, Any]],
                    summary_b: Mapping[str, Any], rows_b: Sequence[Mapping[str, Any]],
                    spec: Resampling | None = None) -> str | None:
    """Why the two runs cannot be paired, or None when they answered the same items.

    ``spec`` names the fields that identify a row and hold gold (default: ``instance_id`` and
    ``fold``, ``gold``)."""
    key, gold = (spec.key, spec.gold) if spec is not None else (("instance_id", "fold"), "gold")
    if summary_a.get("dataset") != summary_b.get("dataset"):
        return f"they were run on different data ({summary_a.get('dataset')} vs {summary_b.get('dataset')})"
    if not rows_a or not rows_b or any(key[0] not in r for r in (*rows_a, *rows_b)):
        return f"their predictions.jsonl rows are missing or carry no {key[0]}"
    listed_a, listed_b = row_keys(rows_a, key), row_keys(rows_b, key)
    keys_a, keys_b = set(listed_a), set(listed_b)
    if keys_a != keys_b or len(keys_a) != len(rows_a) or len(keys_b) != len(rows_b):
        return (f"their predictions are not for the same items: {len(keys_a - keys_b)} keys "
                f"({', '.join(key)}) only in A, {len(keys_b - keys_a)} only in B (different folds or seeds?)")
    gold_b = {k: r.get(gold) for k, r in zip(listed_b, rows_b, strict=True)}
    if any(gold_b[k] != r.get(gold) for k, r in zip(listed_a, rows_a, strict=True)):
        return "their gold labels differ on the same items"
    return None


def row_keys(rows: Sequence[Mapping[str, Any]], key: Sequence[str]) -> list[tuple[Any, ...]]:
    """:func:`row_key` of every row (a list in one pass)."""
    first, rest = key[0], tuple(key[1:])
    if not rest:
        return [(str(r[first]),) for r in rows]
    return [(str(r[first]), *(r.get(f) for f in rest)) for r in rows]


def paired_differences(rows_a: Sequence[Mapping[str, Any]], rows_b: Sequence[Mapping[str, Any]],
                       spec: Resampling, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
                       ) -> list[PairedDifference]:
    """Each of ``spec.metrics`` (accuracy and macro-F1 by default) of A minus B with its 95 %
    interval and p-value, both from one cluster-robust standard error (:mod:`.robust`). The rows
    must be paired: the same keys (``spec.key``) in A and B, else :class:`UsageError`. A row B
    lacks the ``only`` flag of counts in neither run.

    ``resamples`` and ``seed`` are not used by the test (it draws nothing); they are kept so that
    callers written for the permutation test still run."""
    keys_a = [row_key(r, spec.key) for r in rows_a]
    pred_b = {row_key(r, spec.key): r for r in rows_b}
    if set(keys_a) != set(pred_b) or len(set(keys_a)) != len(rows_a) or len(pred_b) != len(rows_b):
        raise UsageError(f"run A and run B are not paired: {len(set(keys_a) - set(pred_b))} keys "
                         f"({', '.join(spec.key)}) only in A, {len(set(pred_b) - set(keys_a))} only in B, "
                         f"{len(rows_a) - len(set(keys_a)) + len(rows_b) - len(pred_b)} repeated.")
    rows = [{**r, "__pred_b": pred_b[k].get(spec.pred),
             **({spec.only: bool(r.get(spec.only)) and bool(pred_b[k].get(spec.only))} if spec.only else {})}
            for r, k in zip(rows_a, keys_a, strict=True)]
    enc = encode(rows, spec, also="__pred_b")
    assert enc.other is not None
    other = enc.other
    ones = np.ones((1, len(rows)))
    counting = (enc.mask > 0)[None, :]
    out = []
    first = {stat: name for name, stat in reversed(list(spec.metrics.items()))}
    for name, stat in spec.metrics.items():
        if first[stat] != name:  # one statistic under two names (VISOR's accuracy is VISOR): once
            continue

        def difference(weights: np.ndarray, stat: str = stat) -> np.ndarray:
            return (grouped(enc, stat, enc.pred, weights)[-1] - grouped(enc, stat, other, weights)[-1])[None]

        a, b = (float(grouped(enc, stat, p, ones)[-1, 0]) for p in (enc.pred, other))
        if units(enc, counting[0]) < 2:
            out.append(PairedDifference(name, a, b, a - b, None, float("nan"), stat))
            continue
        slopes = [linear_gradient(enc, stat, p) for p in (enc.pred, other)]
        gradient = None if slopes[0] is None or slopes[1] is None else (slopes[0] - slopes[1])[-1:]
        (est,) = estimates(difference, enc.keys, enc.n_clusters, counting, enc.groups, enc.pooled, gradient)
        out.append(tested(name, stat, a, b, est))
    return out


def tested(name: str, stat: str, a: float, b: float, est: Estimate) -> PairedDifference:
    """The paired difference A − B with its interval and p from one cluster-robust estimate."""
    low, high = t_interval(est)
    if get(stat).percent:  # a difference of two percentages lies in [−100, 100]
        low, high = max(low, -100.0), min(high, 100.0)
    return PairedDifference(name, a, b, a - b, interval_pair(low, high), t_test(est), stat)


def paired_many(encoded: Sequence[Encoded], stat: str) -> dict[tuple[int, int], PairedDifference] | None:
    """Every pair (i < j) of M runs on the same rows (each :func:`~.intervals.encode`-d with one
    spec), as :func:`paired_differences` gives each pair's ``stat``, at once: each run's value and
    closed-form gradient computed once, each pair's influences the sums of the two runs' difference
    per cluster. None where that does not apply (a statistic that is no mean of a row value, rows
    counted differently in different runs): the caller then pairs them one by one."""
    first = encoded[0]
    if any(not (np.array_equal(e.mask, first.mask) and np.array_equal(e.keys, first.keys)
                and np.array_equal(e.groups, first.groups)) for e in encoded[1:]):
        return None
    slopes = [linear_gradient(e, stat, e.pred) for e in encoded]
    if any(g is None for g in slopes):
        return None
    ones = np.ones((1, len(first.mask)))
    values = [float(grouped(e, stat, e.pred, ones)[-1, 0]) for e in encoded]
    counting = (first.mask > 0)[None, :]
    measurable = units(first, counting[0]) >= 2
    out = {}
    for i in range(len(encoded)):
        for j in range(i + 1, len(encoded)):
            a, b = values[i], values[j]
            if not measurable:
                out[i, j] = PairedDifference(stat, a, b, a - b, None, float("nan"), stat)
                continue
            gradient = (slopes[i] - slopes[j])[-1:]  # type: ignore[operator]
            (est,) = influence_estimates(np.array([a - b]), first.keys, first.n_clusters, counting, first.groups,
                                         first.pooled, gradient)
            out[i, j] = tested(stat, stat, a, b, est)
    return out


def resampling_of(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> Resampling:
    """How a finished run's rows are resampled: as its summary's ``intervals`` say, else (a run
    written without intervals) over instances, per fold where its rows have folds."""
    info = summary.get("intervals")
    if info:
        return Resampling.described(info)
    labels = (summary.get("details") or {}).get("confusion", {}).get("labels")
    labels = labels or sorted({str(r["gold"]) for r in rows if "gold" in r})
    return Resampling(tuple(labels), ("instance_id",), "fold" if all("fold" in r for r in rows) else None)
