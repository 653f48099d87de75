"""Many models at once: exact McNemar, p-values adjusted over pairs, joint rank intervals, groups.

* :func:`mcnemar`: the exact two-sided McNemar p, the binomial test of b10 of b10 + b01 at 1/2
  (``scipy.stats.binomtest``);
* :func:`adjusted`: Holm (family-wise error) and Benjamini-Hochberg (false discovery rate) over a
  family of p-values (Holm in numpy, ``scipy.stats.false_discovery_control``; statsmodels'
  ``multipletests`` numbers);
* :func:`joint_scores` and :func:`rank_intervals`: the clusters are drawn with replacement once per
  resample for every model together, each model's registered statistic is computed on that draw
  (weights as in every cluster bootstrap here), the models are ranked in it (1 = best, ties share
  the better rank) and each model's 95 % rank interval is the 2.5th and 97.5th percentiles;
* :func:`groups`: a compact letter display of the models not told apart.

``spatialprobe compare`` (:mod:`spatialprobe.reports.compare`) reads runs and calls these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Encoded, Resampling, batch_for, encode, grouped, row_weights
from spatialprobe.metrics.linear import mean_values
from spatialprobe.metrics.statistics import get

RANK_RESAMPLES = 2000
"""Joint cluster resamples of the rank intervals."""


def headline(spec: Resampling) -> tuple[str, str]:
    """(metric, statistic) compared: the resampling's first declared metric (accuracy as a rule)."""
    name, stat = next(iter(spec.metrics.items()))
    return name, stat


def correct(rows: Sequence[Mapping[str, Any]], spec: Resampling) -> np.ndarray | None:
    """[R] bool: each row right (label statistics: pred = gold; a share: the row's value true);
    None where the headline statistic is not a proportion (no discordant counts)."""
    return correct_of(encode(rows, spec), spec)


def correct_of(enc: Encoded, spec: Resampling) -> np.ndarray | None:
    """:func:`correct` of rows already encoded."""
    stat = get(headline(spec)[1])
    if not stat.proportion:
        return None
    right = enc.pred != 0 if stat.numeric else enc.pred == enc.gold
    return np.asarray(right & (enc.mask > 0))


def mcnemar(b10: int, b01: int) -> float:
    """Exact two-sided McNemar p: the binomial test of b10 of b10 + b01 at 1/2 (1 where none differ)."""
    return float(mcnemar_many(np.array([b10]), np.array([b01]))[0])


def mcnemar_many(b10: np.ndarray, b01: np.ndarray) -> np.ndarray:
    """:func:`mcnemar` of many pairs at once: at 1/2 the binomial is symmetric, so
    ``scipy.stats.binomtest``'s two-sided p (every count no likelier than the one seen) is twice the
    lower tail at the smaller count, at most 1 (tests/test_linear_statistics.py checks it equal)."""
    from scipy.stats import binom

    n = b10 + b01
    return np.where(n == 0, 1.0, np.minimum(1.0, 2 * binom.cdf(np.minimum(b10, b01), n, 0.5)))


def adjusted(ps: Sequence[float]) -> tuple[list[float | None], list[float | None]]:
    """(Holm, Benjamini-Hochberg) of the measurable p-values; None elsewhere. Holm: the i-th
    smallest times (m − i + 1), made non-decreasing; Benjamini-Hochberg: ``scipy.stats.
    false_discovery_control``; both at most 1, statsmodels' ``multipletests`` (``holm``,
    ``fdr_bh``) number for number (tests/test_linear_statistics.py), without its pandas import."""
    from scipy.stats import false_discovery_control

    index = [n for n, p in enumerate(ps) if p == p]
    holm: list[float | None] = [None] * len(ps)
    bh: list[float | None] = [None] * len(ps)
    if index:
        values = np.array([ps[n] for n in index], dtype=float)
        order = np.argsort(values, kind="mergesort")
        stepped = np.maximum.accumulate(values[order] * np.arange(len(values), 0, -1))
        holm_values = np.empty_like(values)
        holm_values[order] = np.minimum(stepped, 1.0)
        for out, found in ((holm, holm_values), (bh, false_discovery_control(values, method="bh"))):
            for n, p in zip(index, found, strict=True):
                out[n] = float(p)
    return holm, bh


def joint_scores(rows: Sequence[Sequence[Mapping[str, Any]]], spec: Resampling, resamples: int = RANK_RESAMPLES,
                 seed: int = 0, encoded: Sequence[Encoded] | None = None) -> np.ndarray:
    """[resamples, M]: each of M models' statistic (its ``rows``, aligned: the same items in the
    same order; or their ``encoded`` arrays) on the same draws of clusters, rows of two clusters
    weighted by the product of their counts (:func:`~.intervals.row_weights`). A statistic that is
    a mean of a row value is computed for every model by one matrix product per draw batch
    (:func:`.linear.mean_values`), the same numbers as its registered function."""
    stat = headline(spec)[1]
    encs = list(encoded) if encoded is not None else [encode(r, spec) for r in rows]
    keys, k = encs[0].keys, encs[0].n_clusters
    if any(not np.array_equal(e.keys, keys) for e in encs[1:]):
        raise UsageError("the runs' rows name different clusters for the same items; they cannot be resampled together")
    declared, first = get(stat), encs[0]
    together = declared.mean_of is not None and all(
        np.array_equal(e.mask, first.mask) and np.array_equal(e.groups, first.groups) for e in encs[1:])
    values = np.stack([declared.mean_of(e.gold, e.pred) for e in encs]) if declared.mean_of and together else None
    rng = np.random.default_rng(seed)
    out, batch = [], max(1, batch_for(len(keys)) // 2)
    for start in range(0, resamples, batch):
        draws = rng.integers(0, k, (min(batch, resamples - start), k))
        weights = row_weights(draws, keys, k)
        if values is not None:
            out.append(mean_values(weights, values, first.mask, first.groups, len(first.group_names), first.pooled,
                                   declared.scale))
        else:
            out.append(np.stack([grouped(e, stat, e.pred, weights)[-1] for e in encs], axis=1))
    return np.concatenate(out)


def rank_intervals(scores: np.ndarray, higher_is_better: bool = True) -> list[tuple[int, int]]:
    """Each model's 95 % rank interval over the joint resamples (1 = best; ties share the better rank)."""
    from scipy.stats import rankdata

    values = np.where(np.isnan(scores), -np.inf if higher_is_better else np.inf, scores)
    ranks = rankdata(-values if higher_is_better else values, axis=1, method="min")
    low = np.percentile(ranks, 2.5, axis=0, method="lower")
    high = np.percentile(ranks, 97.5, axis=0, method="higher")
    return [(int(a), int(b)) for a, b in zip(low, high, strict=True)]


def groups(order: Sequence[int], differs: Mapping[frozenset[int], bool]) -> dict[int, str]:
    """Letters of a compact letter display: maximal runs of consecutive models (in ``order``) in
    which no pair ``differs``; a model gets the letter of every run it belongs to."""
    found: list[list[int]] = []
    for start in range(len(order)):
        end = start
        while end + 1 < len(order) and not any(differs[frozenset((order[end + 1], order[i]))]
                                                 for i in range(start, end + 1)):
            end += 1
        run = list(order[start:end + 1])
        if not found or not set(run) <= set(found[-1]):
            found.append(run)
    letters: dict[int, str] = dict.fromkeys(order, "")
    for n, run in enumerate(found):
        for m in run:
            letters[m] += chr(ord("a") + n) if n < 26 else f"[{n}]"
    return letters
