"""The methods the calibration bench (bench/calibration.py) measures spatialprobe's
intervals and paired tests against: the percentile cluster (pigeonhole) bootstrap and the
whole-unit swap test used before, the instance bootstrap most tools use, and lmms-eval's
clustered standard error and row-level paired t test, re-coded here. Not a script:
``bench/calibration.py`` imports it (``bench/`` is first on ``sys.path``).
"""

from __future__ import annotations

import math

import numpy as np
from _calibration_designs import Data
from scipy import stats

from spatialprobe.metrics.intervals import Resampling, cluster_bootstrap, encode, grouped, row_weights


def pigeonhole_bootstrap(data: Data, resamples: int, seed: int) -> tuple[float, float]:
    """The percentile cluster bootstrap used before: rows weigh count(a) x count(b)."""
    enc = encode(data.rows, data.spec)
    low, high = cluster_bootstrap(enc.n_clusters, lambda d: grouped(enc, "accuracy" if "accuracy" in data.spec.metrics
                                                                    else "share", enc.pred,
                                                                    row_weights(d, enc.keys, enc.n_clusters))[-1:],
                                  len(data.rows), resamples, seed)
    return float(low[0]), float(high[0])


def instance_bootstrap(data: Data, resamples: int, seed: int) -> tuple[float, float]:
    flat = Resampling(data.spec.labels, ("instance_id",), data.spec.group, pred=data.spec.pred,
                      key=data.spec.key, metrics=data.spec.metrics)
    return pigeonhole_bootstrap(Data(data.rows, flat, data.truth), resamples, seed)


def _scores(rows: list[dict], spec: Resampling) -> np.ndarray:
    if spec.pred == "score":
        return np.array([float(r["score"]) for r in rows])
    return np.array([float(r["pred"] == r["gold"]) for r in rows])


def lmms_clustered_stderr(scores: np.ndarray, clusters: list[str]) -> float:
    """lmms-eval's ``clustered_stderr`` (commit 75571cfe, lmms_eval/api/metrics.py), re-coded:
    sqrt(var(s)/n + (1/n^2) sum_c [(sum_i d_ic)^2 - sum_i d_ic^2]), d = s - mean."""
    n = len(scores)
    d = scores - scores.mean()
    se2 = d.var(ddof=1) / n
    index = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
    codes = np.array([index[c] for c in clusters])
    sums = np.bincount(codes, weights=d)
    squares = np.bincount(codes, weights=d * d)
    return math.sqrt(max(se2 + float((sums ** 2 - squares).sum()) / n ** 2, 0.0))


def lmms_interval(data: Data) -> tuple[float, float]:
    s = _scores(data.rows, data.spec)
    se = lmms_clustered_stderr(s, [r[data.lmms_cluster] for r in data.rows])
    return 100 * (s.mean() - 1.96 * se), 100 * (s.mean() + 1.96 * se)


def lmms_paired_p(data: Data) -> float:
    """lmms-eval's ``paired_ttest`` (same commit): a t test over rows, t_{n-1}."""
    assert data.rows_b is not None
    d = _scores(data.rows, data.spec) - _scores(data.rows_b, data.spec)
    se = d.std(ddof=1) / math.sqrt(len(d))
    if se == 0:
        return 1.0 if d.mean() == 0 else 0.0
    return float(2 * stats.t.sf(abs(d.mean()) / se, len(d) - 1))


def swap_units_p(data: Data, resamples: int, seed: int) -> float:
    """The permutation test used before: each unit's (an image's, an unordered pair's) two runs'
    predictions swapped with probability 1/2."""
    assert data.rows_b is not None
    unit_field = "pair" if data.lmms_cluster == "pair" else data.lmms_cluster
    units = sorted({r[unit_field] for r in data.rows})
    index = {u: i for i, u in enumerate(units)}
    codes = np.array([index[r[unit_field]] for r in data.rows])
    d = _scores(data.rows, data.spec) - _scores(data.rows_b, data.spec)
    sums = np.bincount(codes, weights=d, minlength=len(units))
    observed = abs(sums.sum())
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(resamples, len(units)))
    extreme = (np.abs(signs @ sums) >= observed - 1e-9).sum()
    return float((extreme + 1) / (resamples + 1))
