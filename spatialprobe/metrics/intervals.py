"""Bootstrap intervals over clusters (objects) and paired permutation tests.

Instances share objects (every size pair involves two of 25 objects), so instances are not
independent draws: the unit that was sampled is the object. Every interval here resamples
clusters, never rows.

**Rows of two clusters (object pairs).** A comparison instance belongs to both its objects'
clusters. A resample draws the K objects with replacement (``c_o`` = times object ``o`` was
drawn) and keeps each row with multiplicity ``c_a * c_b`` — the product of its clusters' counts.
This is the vertex (pigeonhole) bootstrap for dyadic data (Snijders & Borgatti 1999; Owen 2007;
Davezies, D'Haultfœuille & Guyonvarch 2021): the resampled set of objects is a new "population",
and every pair of drawn objects that the data holds comes with it, as often as that pair can be
formed. Keeping only pairs whose both objects were drawn (multiplicity 1) would discard repeated
draws and shrink the sample, widening the interval for no reason; the product keeps the
resampled data the same expected size as the data. It also keeps a design's symmetries: a pair
asked in both orders has equal weight in both orders in every resample, so a scorer that always
answers the first label scores exactly 50 % in every resample, as it does on the data.

**Folds.** Where the point estimate is a mean over groups (the probe's folds, whose test sets
overlap: an instance is tested in several folds), one object draw is applied to every group and the
statistic is the mean over groups of each group's metric, exactly as the point estimate is
computed. Resampling each fold on its own would treat overlapping test sets as independent and
make the interval too narrow. The interval is conditional on the prompts the folds chose.

**Intervals** are percentile intervals: ``scipy.stats.bootstrap`` draws the clusters (vectorised,
in batches) and keeps the bootstrap distribution; the 2.5th and 97.5th percentiles are taken over
the resamples where the statistic is defined (a resample that draws none of a fold's objects has
no value for that fold). Percentile intervals need no jackknife, and a statistic that is constant
over resamples (a perfect scorer) has the exact interval [100, 100]. Only the cluster step
(draws -> row weights) is written here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

if TYPE_CHECKING:
    from spatialprobe.metrics.metric import Metric

DEFAULT_RESAMPLES = 1000
"""Bootstrap resamples (and permutations) unless told otherwise."""
LEVEL = 0.95
MAX_CELLS = 4_000_000
"""Resamples x rows held in memory at once (about 32 MB of float64)."""


def _all_headline() -> dict[str, str]:
    return {"accuracy": "accuracy", "macro_f1": "macro_f1"}


@dataclass(frozen=True)
class Resampling:
    """How a kind's prediction rows are resampled; a kind opts in by putting one in its Evaluation.

    Rows need ``gold`` and ``pred`` (label strings) and the fields named by ``clusters`` and
    ``group``.
    """

    labels: tuple[str, ...]
    """The task's labels (macro-F1 averages over them; a label never predicted counts as 0)."""
    clusters: tuple[str, ...] = ("instance_id",)
    """Row fields naming the clusters a row belongs to: ``("obj_a", "obj_b")`` for a pair of
    objects, ``("obj_b",)`` where one object decides independence, the instance id where a kind
    has no objects."""
    group: str | None = None
    """Row field whose groups are measured apart and averaged (``fold``), or None."""
    part: str = "{}"
    """Name of a group's part in the metric's breakdown (``"fold {}"``)."""
    metrics: Mapping[str, str] = field(default_factory=_all_headline)
    """Summary metric name -> statistic (``accuracy`` or ``macro_f1``) it gets an interval from."""
    rows: Sequence[Mapping[str, Any]] | None = None
    """The rows; None: the Evaluation's predictions."""

    def describe(self, resamples: int, seed: int) -> dict[str, Any]:
        objects = self.clusters != ("instance_id",)
        return {"method": "cluster bootstrap over objects" if objects else "bootstrap over instances",
                "interval": "percentile", "resamples": int(resamples), "level": LEVEL, "seed": int(seed),
                "clusters": list(self.clusters), "group": self.group, "labels": list(self.labels),
                "rows of two clusters": "kept with multiplicity count(a) * count(b)"}


def weighted_accuracy(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int) -> np.ndarray:
    """Percent correct for each resample: ``weights`` [b, R], ``pred`` [R] or [b, R]."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100.0 * (weights * (pred == gold)).sum(-1) / weights.sum(-1)


def weighted_macro_f1(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int) -> np.ndarray:
    """Macro-F1 in percent for each resample, as scikit-learn's with ``zero_division=0``."""
    f1 = []
    for label in range(n_labels):
        tp = (weights * ((pred == label) & (gold == label))).sum(-1)
        predicted, actual = (weights * (pred == label)).sum(-1), (weights * (gold == label)).sum(-1)
        f1.append(np.divide(2 * tp, predicted + actual, out=np.zeros_like(tp, dtype=float),
                            where=(predicted + actual) > 0))
    out = 100.0 * np.mean(f1, axis=0)
    return np.where(weights.sum(-1) > 0, out, np.nan)


STATISTICS: dict[str, Callable[..., np.ndarray]] = {"accuracy": weighted_accuracy,
                                                     "macro_f1": weighted_macro_f1}


@dataclass(frozen=True)
class Encoded:
    """Rows as integer arrays: labels, cluster indices per row, group index per row."""

    gold: np.ndarray
    pred: np.ndarray
    keys: np.ndarray
    """[R, m]: index of each of the row's m clusters."""
    n_clusters: int
    groups: np.ndarray
    group_names: tuple[Any, ...]
    n_labels: int


def encode(rows: Sequence[Mapping[str, Any]], spec: Resampling, pred_field: str = "pred") -> Encoded:
    label_index = {label: n for n, label in enumerate(spec.labels)}
    names = sorted({str(row[f]) for row in rows for f in spec.clusters})
    cluster_index = {name: n for n, name in enumerate(names)}
    group_values = [row.get(spec.group) if spec.group else None for row in rows]
    group_names = tuple(dict.fromkeys(group_values))
    group_index = {g: n for n, g in enumerate(group_names)}
    return Encoded(
        gold=np.array([label_index[row["gold"]] for row in rows], dtype=int),
        pred=np.array([label_index.get(row[pred_field], -1) for row in rows], dtype=int),
        keys=np.array([[cluster_index[str(row[f])] for f in spec.clusters] for row in rows],
                      dtype=int).reshape(len(rows), len(spec.clusters)),
        n_clusters=len(names), groups=np.array([group_index[g] for g in group_values], dtype=int),
        group_names=group_names, n_labels=len(spec.labels))


def row_weights(draws: np.ndarray, keys: np.ndarray, n_clusters: int) -> np.ndarray:
    """[b, R] multiplicity of each row in each resample: the product of its clusters' draw counts.

    ``draws`` [b, K] holds the cluster indices drawn in each resample.
    """
    b = draws.shape[0]
    offsets = (draws + n_clusters * np.arange(b)[:, None]).ravel()
    counts = np.bincount(offsets, minlength=b * n_clusters).reshape(b, n_clusters).astype(float)
    return np.prod(counts[:, keys], axis=-1)


def grouped(enc: Encoded, statistic: str, pred: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """[G + 1, b]: the statistic in each group, then their mean (groups without weight left out)."""
    function = STATISTICS[statistic]
    per_group = []
    for g in range(len(enc.group_names)):
        mask = enc.groups == g
        group_pred = pred[..., mask]
        per_group.append(function(enc.gold[mask], group_pred, weights[..., mask], enc.n_labels))
    values = np.stack(per_group)
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(values, axis=0) if values.size else values
    return np.concatenate([values, mean[None]])


def batch_for(rows: int) -> int:
    return max(1, MAX_CELLS // max(1, rows))


def cluster_bootstrap(n_clusters: int, statistic: Callable[[np.ndarray], np.ndarray], rows: int,
                      resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of ``statistic(draws)`` over resamples of the clusters.

    ``statistic`` maps drawn cluster indices [b, K] to values [k, b]; returns (low[k], high[k]).
    """
    with warnings.catch_warnings():
        # A resample where a statistic is undefined (no row of a fold drawn) is NaN; scipy's own
        # interval then warns and is NaN. The interval is taken over the resamples where it is defined.
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.bootstrap((np.arange(n_clusters),), lambda draws, axis=-1: statistic(draws),
                                 n_resamples=resamples, batch=batch_for(rows), vectorized=True,
                                 method="percentile", confidence_level=LEVEL,
                                 rng=np.random.default_rng(seed))
        distribution = np.atleast_2d(result.bootstrap_distribution)
        low, high = np.nanpercentile(distribution, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2], axis=-1)
    return low, high


def metric_intervals(rows: Sequence[Mapping[str, Any]], spec: Resampling, resamples: int, seed: int
                     ) -> dict[str, dict[str, tuple[float, float] | None]]:
    """{metric: {"": overall interval, part name: that group's interval}} for ``spec.metrics``."""
    enc = encode(rows, spec)
    statistics = list(dict.fromkeys(spec.metrics.values()))

    def statistic(draws: np.ndarray) -> np.ndarray:
        weights = row_weights(draws, enc.keys, enc.n_clusters)
        return np.concatenate([grouped(enc, s, enc.pred, weights) for s in statistics])

    low, high = cluster_bootstrap(enc.n_clusters, statistic, len(rows), resamples, seed)
    width = len(enc.group_names) + 1
    out: dict[str, dict[str, tuple[float, float] | None]] = {}
    for name, stat in spec.metrics.items():
        start = statistics.index(stat) * width
        parts = [spec.part.format(g) for g in enc.group_names] if spec.group else []
        bounds = [interval_pair(low[start + i], high[start + i]) for i in range(width)]
        out[name] = {"": bounds[-1], **dict(zip(parts, bounds[:-1], strict=False))}
    return out


def interval_pair(low: float, high: float) -> tuple[float, float] | None:
    if np.isnan(low) or np.isnan(high):
        return None
    return round(float(low), 6), round(float(high), 6)


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
        if not rows:
            continue
        for name, bounds in metric_intervals(rows, spec, resamples, seed).items():
            if name in out:
                out[name] = out[name].with_intervals(bounds.pop(""), bounds)
    description = specs[0].describe(resamples, seed)
    description["metrics"] = [name for spec in specs for name in spec.metrics if name in out]
    return out, description
