"""Statistics that are a weighted mean of one value per row (accuracy, a share, a mean), in
closed form: their derivative along row weights, and their values under many resamples for
many runs at once.

A registered statistic declares the row value it averages (:attr:`.statistics.Statistic.mean_of`);
its value in a group is θ = s · Σ m w x / Σ m w (s = 100 for percents, m the rows that count, w the
weights). The registered function stays the definition: both functions here give its numbers
(tests/test_linear_statistics.py checks them against it and against its central differences), at
the cost of a sum per cluster instead of two evaluations of the function per cluster, and of one
matrix product for every run's resamples instead of one statistic per run.
"""

from __future__ import annotations

import numpy as np


def mean_gradient(x: np.ndarray, mask: np.ndarray, groups: np.ndarray, n_groups: int, pooled: bool,
                  scale: float) -> np.ndarray:
    """[G + 1, R]: ∂θ/∂w_r = s · m_r (x_r − θ) / Σ m in each group, then for the overall value: the
    pooled one's, or the mean of the groups' (those with weight), as the overall value is made."""
    out = np.zeros((n_groups + 1, len(x)))

    def slope(rows: np.ndarray) -> np.ndarray | None:
        total = mask[rows].sum()
        if total <= 0:
            return None
        theta = float((mask[rows] * x[rows]).sum() / total)
        return scale * mask[rows] * (x[rows] - theta) / total

    weighed = []
    for g in range(n_groups):
        rows = groups == g
        found = slope(rows)
        if found is not None:
            out[g, rows] = found
            weighed.append(g)
    if pooled:
        found = slope(np.ones(len(x), dtype=bool))
        out[-1] = 0.0 if found is None else found
    elif weighed:
        out[-1] = out[weighed].mean(0)
    return out


def mean_values(weights: np.ndarray, x: np.ndarray, mask: np.ndarray, groups: np.ndarray, n_groups: int,
                pooled: bool, scale: float) -> np.ndarray:
    """[b, M]: the overall value of each of M runs (``x`` [M, R]: each run's row values) under each
    of b row weightings (``weights`` [b, R]): the pooled mean, or the mean of the groups' means
    (groups without weight left out), by one matrix product per group."""
    counted = weights * mask
    with np.errstate(invalid="ignore", divide="ignore"):
        if pooled:
            return scale * (counted @ x.T) / counted.sum(1, keepdims=True)
        per_group = []
        for g in range(n_groups):
            rows = groups == g
            per_group.append(scale * (counted[:, rows] @ x[:, rows].T) / counted[:, rows].sum(1, keepdims=True))
        stacked = np.stack(per_group)
        valid = ~np.isnan(stacked)
        return np.where(valid, stacked, 0.0).sum(0) / valid.sum(0)
