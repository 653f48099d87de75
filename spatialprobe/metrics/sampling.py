"""Intervals of a score over items asked K times each (``--samples K --temperature T``): the
two-level bootstrap, and the share of the score's variance that comes from sampling.

The data: ``values[i, s]``, the score of item i's sample s (1/0 for right/wrong, an MRA in
[0, 1]), and each item's clusters (its image, its objects). The headline is the mean over items
of each item's mean over its samples (OmniSpatial's mean over runs), in percent.

**Two-level bootstrap** (:func:`two_level`). Level 1 draws the clusters with replacement and
keeps each item as often as the product of its clusters' counts (the pigeonhole weights of
:func:`spatialprobe.metrics.intervals.row_weights`); level 2 draws, for every copy of an item,
its K samples with replacement (for a mean: a multinomial of ``copies × K`` draws over the item's
samples, which is the same in distribution). An item's mean over its K samples already carries
its sampling noise, so level 1 alone already varies by the items *and* the sampling; drawing the
samples again on top counts the sampling variance twice (Davison & Hinkley 1997, *Bootstrap
Methods*, §3.8: the two-stage bootstrap overstates the variance by the within-cluster part). So,
as they propose, the items' means are shrunk towards the grand mean by ``a = sqrt(1 − V2 / V1)``
before level 2 - V1 the level-1 variance, V2 the variance level 2 adds - so that the sampling
variance is counted once and the interval's width is right whatever the share (the calibration
bench prints the unshrunk version over-covering where sampling dominates). The interval is the
percentile interval of the resampled scores.

**Share of variance from sampling**: ``V_s / V`` where ``V_s = Σ_i s_i² / K / n²`` (s_i² the
item's variance over its samples, ``ddof=1``: the variance its K-sample mean has from sampling)
and ``V`` the level-1 variance of the score scaled by ``C / (C − 1)`` (C clusters): the part of the
score's variance that asking each item again would change.

A vote over the samples (:func:`vote_sampling_share`) is a score of one voted answer per item:
its interval is the ordinary cluster-robust one of those answers (each already carries its
sampling noise), and its sampling share is the variance of the voted score when only the samples
are drawn again (items fixed) over that score's variance.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from spatialprobe.metrics.intervals import LEVEL, batch_for, row_weights


@dataclass(frozen=True)
class Sampled:
    """A score over items asked several times: its value, interval and variance shares."""

    value: float
    """The mean over items of the mean over samples, in percent."""
    ci: tuple[float, float] | None
    """The two-level bootstrap's 95 % percentile interval; None with fewer than two clusters."""
    variance: float | None
    """The score's variance (items and sampling together), in squared points."""
    variance_sampling: float | None
    """The part from sampling, in squared points."""
    shrink: float | None = None
    """The factor the items' deviations were shrunk by before level 2 (1: none)."""

    @property
    def sampling_share(self) -> float | None:
        if self.variance is None or self.variance_sampling is None or self.variance <= 0:
            return None
        return min(1.0, self.variance_sampling / self.variance)

    def to_dict(self) -> dict[str, object]:
        return {"mean": self.value, "ci": None if self.ci is None else list(self.ci),
                "variance": self.variance, "variance_sampling": self.variance_sampling,
                "sampling_share": self.sampling_share, "shrink": self.shrink}


def _draws(n_clusters: int, resamples: int, rows: int, seed: int) -> Iterator[np.ndarray]:
    """The level-1 cluster draws, in batches, the same for the same seed."""
    rng = np.random.default_rng(seed)
    step = batch_for(rows)
    for start in range(0, resamples, step):
        yield rng.integers(0, n_clusters, size=(min(step, resamples - start), n_clusters))


def two_level(values: np.ndarray, keys: np.ndarray, n_clusters: int, resamples: int = 1000, seed: int = 0,
              shrink: bool = True) -> Sampled:
    """The two-level bootstrap of the mean score of ``values`` [n items, K samples] (see the
    module); ``keys`` [n, m]: each item's m cluster indices. ``shrink=False``: the naive version
    that counts the sampling variance twice (kept for the calibration bench)."""
    n, k = values.shape
    means = values.mean(1)
    point = float(100 * means.mean())
    within = values.var(1, ddof=1) if k > 1 else np.full(n, np.nan)
    if n_clusters < 2:
        return Sampled(point, None, None, None)
    level1, added = [], []
    for draws in _draws(n_clusters, resamples, n * k, seed):
        w = row_weights(draws, keys, n_clusters)
        total = w.sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            level1.append((w * means).sum(1) / total)
            added.append((w * values.var(1)).sum(1) / k / total ** 2)  # what level 2 adds, given level 1
    v1 = float(np.nanvar(np.concatenate(level1)))
    v2 = float(np.nanmean(np.concatenate(added)))
    factor = float(np.sqrt(max(0.0, 1 - v2 / v1))) if shrink and v1 > 0 else 1.0
    grand = means.mean()
    offset = grand + factor * (means - grand) - means  # each copy's shift: its mean shrunk
    rng = np.random.default_rng(seed + 1)
    scores = []
    for draws in _draws(n_clusters, resamples, n * k, seed):
        w = row_weights(draws, keys, n_clusters)
        counts = rng.multinomial((w * k).astype(np.int64), np.full(k, 1 / k))  # [b, n, K]
        with np.errstate(invalid="ignore", divide="ignore"):
            scores.append(((w * offset).sum(1) + (counts * values).sum(-1).sum(1) / k) / w.sum(1))
    low, high = np.nanpercentile(100 * np.concatenate(scores), [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    variance = 1e4 * v1 * n_clusters / (n_clusters - 1)
    sampling = float(1e4 * np.sum(within) / k / n ** 2) if k > 1 else None
    return Sampled(point, (round(float(low), 6), round(float(high), 6)), variance, sampling, factor)


def vote_sampling_share(labels: np.ndarray, gold: np.ndarray, variance: float | None, resamples: int = 1000,
                        seed: int = 0) -> float | None:
    """The share of a voted score's ``variance`` (squared points) from sampling: the variance of
    the score when each item's K sample labels [n, K] (codes; -1 for no answer) are drawn again
    and voted (the most frequent, ties to the lowest code; none: wrong), items fixed."""
    n, k = labels.shape
    if k < 2 or not variance:
        return None
    rng = np.random.default_rng(seed)
    n_codes = int(max(labels.max(initial=-1), gold.max(initial=-1))) + 2
    scores = []
    for start in range(0, resamples, batch_for(n * k)):
        b = min(batch_for(n * k), resamples - start)
        picked = np.take_along_axis(np.broadcast_to(labels, (b, n, k)), rng.integers(0, k, (b, n, k)), -1)
        counts = (picked[..., None] == np.arange(-1, n_codes - 1)).sum(-2)[..., 1:]  # [b, n, codes]
        voted = np.where(counts.max(-1) > 0, counts.argmax(-1), -1)
        scores.append(100 * (voted == gold).mean(-1))
    return min(1.0, float(np.var(np.concatenate(scores))) / variance)
