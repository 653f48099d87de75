"""Agreement between judges: share of equal answers, Cohen's kappa, Kendall's tau between rankings.

Each statistic has a point estimate (scikit-learn's ``cohen_kappa_score``, scipy's
``kendalltau``) that says *why* it is undefined where it is, and a weighted, vectorised form
for bootstrap resamples: ``weights`` [b, n] holds how often each of the n images was drawn in
each of b resamples (weights of ones give the point estimate). A resample where a statistic is
undefined gives NaN, and intervals are taken over the resamples where it is defined
(:func:`spatialprobe.metrics.intervals.cluster_bootstrap`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spatialprobe.metrics.statistics import weighted_share


def share(hits: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """[b]: percent of the weighted images where ``hits`` [n] is true; NaN where no weight (the
    registered ``share``, :mod:`.statistics`)."""
    return weighted_share(hits, hits.astype(float), weights, 0)


def codes(*answers: Sequence[Any]) -> list[np.ndarray]:
    """The answers of several judges as integer codes of one shared vocabulary."""
    vocabulary = {value: n for n, value in enumerate(sorted({str(v) for a in answers for v in a}))}
    return [np.array([vocabulary[str(v)] for v in a], dtype=int) for a in answers]


def weighted_kappa(a: np.ndarray, b: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """[b]: Cohen's kappa of the codes ``a`` and ``b`` [n] in each weighting (NaN where chance
    agreement is 1: both judges gave one same answer throughout the resample)."""
    total = weights.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (weights @ (a == b).astype(float)) / total
        expected = np.zeros_like(total)
        for label in np.union1d(a, b):
            share_a = (weights @ (a == label).astype(float)) / total
            expected += share_a * (weights @ (b == label).astype(float)) / total
        kappa = (observed - expected) / (1.0 - expected)
    return np.where(np.isclose(expected, 1.0), np.nan, kappa)


def one_answer(answers: Sequence[Any]) -> Any | None:
    """The single answer a judge gave to every image, or None where it gave several."""
    distinct = set(map(str, answers))
    return next(iter(distinct)) if len(distinct) == 1 else None


def kappa(a: Sequence[Any], b: Sequence[Any], names: tuple[str, str]) -> tuple[float | None, str | None]:
    """(Cohen's kappa, None), or (None, why it is undefined): where both judges gave one same
    answer throughout, chance agreement is 1 and kappa is 0/0."""
    from sklearn.metrics import cohen_kappa_score

    if not a:
        return None, "no shared images"
    only_a, only_b = one_answer(a), one_answer(b)
    if only_a is not None and only_a == only_b:
        return None, (f"{names[0]} and {names[1]} both answer {only_a!r} for every image: chance "
                      "agreement is 1, so kappa is 0/0")
    return float(cohen_kappa_score([str(v) for v in a], [str(v) for v in b])), None


def one_answer_note(a: Sequence[Any], b: Sequence[Any], names: tuple[str, str]) -> str | None:
    """Where exactly one judge gives one answer throughout, kappa is 0 whatever the other says
    (defined, but it measures nothing about that judge): said beside it."""
    only = [(name, one_answer(x)) for name, x in zip(names, (a, b), strict=True) if x and one_answer(x) is not None]
    if len(only) != 1:
        return None
    return f"{only[0][0]} answers {only[0][1]!r} for every image, so kappa is 0 whatever the other judge says"


def kendall(x: Sequence[float], y: Sequence[float], names: tuple[str, str]) -> tuple[float | None, str | None]:
    """(Kendall's tau-b of two judges' scores of the same models, None), or (None, why not)."""
    from scipy.stats import kendalltau

    if len(x) < 2:
        return None, f"{names[0]} and {names[1]} score fewer than two of the same models"
    for name, values in zip(names, (x, y), strict=True):
        if len(set(values)) == 1:
            return None, f"{name} gives every model the same score (no ranking)"
    return float(kendalltau(x, y).statistic), None


def kendall_resampled(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[b]: tau-b of the scores x, y [b, m] in each resample (NaN where a ranking is all ties)."""
    from scipy.stats import kendalltau

    out = np.full(x.shape[0], np.nan)
    for n in range(x.shape[0]):
        if np.ptp(x[n]) > 0 and np.ptp(y[n]) > 0 and not (np.isnan(x[n]).any() or np.isnan(y[n]).any()):
            out[n] = kendalltau(x[n], y[n]).statistic
    return out


def stratified_weights(sizes: Sequence[int], resamples: int, seed: int,
                       clusters: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
    """Per stratum (a model's images) [resamples, size]: how often each image was drawn when each
    stratum's images are resampled with replacement on their own (one generator, in order).

    ``clusters`` (per stratum, [size] indices 0..c−1: each image's prompt): the clusters are
    drawn instead, and an image weighs as often as its cluster was drawn; with one image per
    cluster, the same draws as without."""
    rng = np.random.default_rng(seed)
    out = []
    for n, size in enumerate(sizes):
        index = np.arange(size) if clusters is None else np.asarray(clusters[n], dtype=int)
        count = int(index.max()) + 1 if size else 0
        draws = rng.integers(0, count, size=(resamples, count))
        offsets = (draws + count * np.arange(resamples)[:, None]).ravel()
        drawn = np.bincount(offsets, minlength=resamples * count).reshape(resamples, count).astype(float)
        out.append(drawn[:, index])
    return out


def percentile_interval(values: np.ndarray) -> tuple[float, float] | None:
    """The 95 % percentile interval over the resamples where a statistic is defined."""
    from spatialprobe.metrics.intervals import LEVEL, interval_pair

    defined = values[~np.isnan(values)]
    if not defined.size:
        return None
    low, high = np.percentile(defined, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return interval_pair(low, high)
