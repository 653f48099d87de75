"""Intervals over clusters (objects, images, prompts): the specs (:class:`Resampling`) and the spine's hook.

**A run's intervals are cluster-robust** (:mod:`.robust`): each registered
statistic's influence per cluster and per object pair, the covariances of rows sharing a cluster
summed, K/(K−1), t on K−1 degrees of freedom, and the cluster-adjusted Wilson interval for
accuracies and shares (:func:`metric_intervals`). The cluster bootstrap below (pigeonhole weights,
percentile intervals) still serves consistency, κ and the judge comparison, and the calibration
bench, which measures both (``bench/calibration.py``); what follows describes it.

Instances share objects (every size pair involves two of 25 objects), so instances are not
independent draws: the unit that was sampled is the object. Every interval here resamples
clusters, never rows. Each run kind names its clusters in its :class:`Resampling`: the objects
(probe, judge, human, QA), the two classes of an SR2D prompt (VISOR), the COCO image (VSR,
SpatialMQA), the instance where nothing is shared.

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

**Groups and subsets.** Where the point estimate is pooled over every row and only broken down
by group (VISOR's relations, VSR's categories), the overall value is the statistic over every row
(``pooled``). A subset (ISM's recognized images, VISOR_cond's images with both objects, the
answered questions) is taken inside each resample (``only``): the clusters are every row's, so
the subset's size varies as it would over new data.

**Statistics** (:mod:`.weighted`): accuracy, macro-F1 over the task's labels, over the labels
that occur (scikit-learn's default) or over those in gold (with macro precision, recall and
SpatialMQA's 2PR/(P+R)), and the share or mean of a row's value (VISOR's OA, a recognized ratio,
T2I-CompBench's score). Each is computed from weighted counts, so weights of ones give the
point estimate.

**Bootstrap intervals** (:func:`cluster_bootstrap`) are percentile intervals: ``scipy.stats.bootstrap``
draws the clusters (vectorised, in batches); the percentiles are taken over the resamples where
the statistic is defined. Where the rows that count come from fewer than two units (one object,
one pair of objects, one image) there is no measurement of uncertainty: the interval is None
(``"ci": null``), never ``[x, x]`` - for the cluster-robust intervals too.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from spatialprobe.metrics.linear import mean_gradient
from spatialprobe.metrics.robust import Estimate, estimates, t_interval, wilson_interval
from spatialprobe.metrics.statistics import get
from spatialprobe.metrics.weighted import STATISTICS

DEFAULT_RESAMPLES = 1000
"""Bootstrap resamples (and permutations) unless told otherwise."""
LEVEL = 0.95
ROBUST = "cluster-robust standard error"
"""How a run's intervals are computed (:mod:`.robust`); ``describe`` says over what."""
INTERVAL = "Wilson (accuracies, shares; cluster-adjusted) or t (K-1 df; object pairs: Satterthwaite df)"
MAX_CELLS = 4_000_000
"""Resamples x rows held in memory at once (about 32 MB of float64)."""


def _all_headline() -> dict[str, str]:
    return {"accuracy": "accuracy", "macro_f1": "macro_f1"}


@dataclass(frozen=True)
class Resampling:
    """How a kind's prediction rows are resampled; a kind opts in by putting one in its Evaluation.

    Rows need the fields named by ``gold`` and ``pred`` (label values; for the ``share`` and
    ``mean`` statistics ``pred`` names a number or a boolean and ``gold`` is not read), by
    ``clusters`` and, where set, by ``group`` and ``only``.
    """

    labels: tuple[Any, ...]
    """The task's labels (macro averages run over them; a label never predicted counts as 0).
    Values outside them (a free answer, ``--``) stay distinct - accuracy compares them as they
    are - but no macro average includes them. Empty for the ``share``/``mean`` statistics."""
    clusters: tuple[str, ...] = ("instance_id",)
    """Row fields naming the clusters a row belongs to: ``("obj_a", "obj_b")`` for a pair of
    objects, ``("obj_b",)`` where one object decides independence, ``("image",)`` where questions
    share an image, the instance id where a kind has nothing shared."""
    group: str | None = None
    """Row field whose groups are measured apart (``fold``, ``annotator``, ``relation``), or None."""
    part: str = "{}"
    """Name of a group's part in the metric's breakdown (``"fold {}"``)."""
    missing: str | None = None
    """The group of rows whose ``group`` field is empty or absent, as the point estimate names it
    (``"-"``); None: such rows form the group ``None``/``""`` as they are."""
    metrics: Mapping[str, str] = field(default_factory=_all_headline)
    """Summary metric name -> statistic (a key of :data:`STATISTICS`) it gets an interval from."""
    rows: Sequence[Mapping[str, Any]] | None = None
    """The rows; None: the Evaluation's predictions."""
    gold: str = "gold"
    """Row field of the gold label."""
    pred: str = "pred"
    """Row field of the prediction (or of the value a ``share``/``mean`` averages)."""
    key: tuple[str, ...] = ("instance_id", "fold")
    """Row fields that identify a row (a missing one reads None): two runs are paired on them."""
    only: str | None = None
    """Row field that must be true for a row to count (``recognized``: the recognized subset), or
    None. The clusters are those of every row, so a subset's size varies over resamples as it
    would over new data."""
    pooled: bool = False
    """The overall value is the statistic over every row (True), or the mean of the groups'
    values (False: folds, annotators), as the kind's point estimate is computed."""
    fold_case: bool = False
    """Compare gold and predicted labels case-insensitively (free-text answers)."""
    unit: str | None = None
    """What a cluster is, in words (``images``); None: objects, or instances without objects."""
    note: str = ""
    """What explicit ``rows`` are, where they are not the predictions (``one row per prompt``)."""

    def __post_init__(self) -> None:
        for name in self.metrics.values():
            get(name)  # an unknown statistic is refused where it is declared, naming the known ones

    def describe(self, resamples: int, seed: int) -> dict[str, Any]:
        unit = self.unit or ("objects" if self.clusters != ("instance_id",) else None)
        out: dict[str, Any] = {"method": f"{ROBUST} over {unit or 'instances'}", "interval": INTERVAL,
               "level": LEVEL, "clusters": list(self.clusters), "group": self.group, "labels": list(self.labels)}
        if len(self.clusters) == 2:
            out["rows of two clusters"] = ("covary through either object: sum_o S_o^2 - sum_pairs S_p^2 "
                                           "(variance components)")
        out.update({"gold": self.gold, "pred": self.pred, "key": list(self.key), "only": self.only,
               "pooled": self.pooled, "fold_case": self.fold_case, "statistics": dict(self.metrics)})
        if self.note:
            out["rows"] = self.note
        return out

    @classmethod
    def described(cls, info: Mapping[str, Any]) -> Resampling:
        """The resampling a summary's ``intervals`` describes (its first, headline one)."""
        unit = str(info["method"])
        for prefix in (f"{ROBUST} over ", "cluster bootstrap over ", "bootstrap over "):
            unit = unit.removeprefix(prefix)
        return cls(tuple(info["labels"]), tuple(info["clusters"]), info.get("group"),
                   metrics=dict(info.get("statistics") or _all_headline()),
                   gold=info.get("gold", "gold"), pred=info.get("pred", "pred"),
                   key=tuple(info.get("key") or ("instance_id", "fold")), only=info.get("only"),
                   pooled=bool(info.get("pooled", False)), fold_case=bool(info.get("fold_case", False)),
                   unit=None if unit in ("objects", "instances") else unit)


@dataclass(frozen=True)
class Encoded:
    """Rows as integer arrays: labels, cluster indices per row, group index per row."""

    gold: np.ndarray
    pred: np.ndarray
    """Label codes (values outside the labels get codes from ``n_labels`` on; a missing one -1),
    or for numeric statistics the values as floats."""
    keys: np.ndarray
    """[R, m]: index of each of the row's m clusters."""
    n_clusters: int
    groups: np.ndarray
    group_names: tuple[Any, ...]
    n_labels: int
    mask: np.ndarray
    """[R]: 1.0 where the row counts (``only``), else 0.0."""
    pooled: bool = False
    other: np.ndarray | None = None
    """The second prediction field's codes or values (``encode(..., also=)``)."""


def _numeric(spec: Resampling) -> bool:
    kinds = {get(s).numeric for s in spec.metrics.values()}
    if len(kinds) > 1:
        raise ValueError(f"a Resampling mixes label statistics with numeric ones: {dict(spec.metrics)}")
    return kinds == {True}


def encode(rows: Sequence[Mapping[str, Any]], spec: Resampling, also: str | None = None) -> Encoded:
    """The rows as arrays; ``also``: a second prediction field (the other run of a paired test),
    encoded with the same codes into ``Encoded.other``."""
    def norm(value: Any) -> Any:
        return value.casefold() if spec.fold_case and isinstance(value, str) else value

    codes = {norm(label): n for n, label in enumerate(spec.labels)}

    def code(value: Any) -> int:
        if value is None:
            return -1
        return codes.setdefault(norm(value), len(codes))

    columns = [[str(row[f]) for row in rows] for f in spec.clusters]
    names = sorted(set().union(*columns))
    cluster_index = {name: n for n, name in enumerate(names)}
    group_values = [row.get(spec.group) if spec.group else None for row in rows]
    if spec.group and spec.missing is not None:
        group_values = [spec.missing if g in (None, "") else g for g in group_values]
    group_names = tuple(dict.fromkeys(group_values))
    group_index = {g: n for n, g in enumerate(group_names)}
    mask = np.array([bool(row.get(spec.only)) if spec.only else True for row in rows], dtype=float)
    fields = [spec.pred] + ([also] if also else [])
    if _numeric(spec):
        gold = np.zeros(len(rows), dtype=int)
        present = np.array([all(row.get(f) is not None for f in fields) for row in rows])
        mask = mask * present  # a row without a value does not count
        preds = [np.array([float(row[f]) if row.get(f) is not None else 0.0 for row in rows], dtype=float)
                 for f in fields]
    else:
        gold = np.array([code(row.get(spec.gold)) for row in rows], dtype=int)
        gold = np.where(gold < 0, -2, gold)  # a missing gold label matches no prediction
        preds = [np.array([code(row.get(f)) for row in rows], dtype=int) for f in fields]
    return Encoded(
        gold=gold, pred=preds[0],
        keys=np.array([[cluster_index[v] for v in column] for column in columns],
                      dtype=int).reshape(len(spec.clusters), len(rows)).T.copy(),
        n_clusters=len(names), groups=np.array([group_index[g] for g in group_values], dtype=int),
        group_names=group_names, n_labels=len(spec.labels), mask=mask, pooled=spec.pooled,
        other=preds[1] if also else None)


def row_weights(draws: np.ndarray, keys: np.ndarray, n_clusters: int) -> np.ndarray:
    """[b, R] multiplicity of each row in each resample: the product of its clusters' draw counts.

    ``draws`` [b, K] holds the cluster indices drawn in each resample.
    """
    b = draws.shape[0]
    offsets = (draws + n_clusters * np.arange(b)[:, None]).ravel()
    counts = np.bincount(offsets, minlength=b * n_clusters).reshape(b, n_clusters).astype(float)
    return np.prod(counts[:, keys], axis=-1)


def grouped(enc: Encoded, statistic: str, pred: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """[G + 1, b]: the statistic in each group, then the overall value: the mean of the groups
    (groups without weight left out), or the statistic over every row where ``enc.pooled``."""
    function = STATISTICS[statistic]
    weights = weights * enc.mask
    per_group = []
    for g in range(len(enc.group_names)):
        mask = enc.groups == g
        group_pred = pred[..., mask]
        per_group.append(function(enc.gold[mask], group_pred, weights[..., mask], enc.n_labels))
    values = np.stack(per_group)
    if enc.pooled:
        overall = function(enc.gold, pred, weights, enc.n_labels)
    else:
        with np.errstate(invalid="ignore"):
            overall = np.nanmean(values, axis=0) if values.size else values
    return np.concatenate([values, np.broadcast_to(overall, values.shape[1:])[None]])


def batch_for(rows: int) -> int:
    return max(1, MAX_CELLS // max(1, rows))


def cluster_bootstrap(n_clusters: int, statistic: Callable[[np.ndarray], np.ndarray], rows: int,
                      resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of ``statistic(draws)`` over resamples of the clusters.

    ``statistic`` maps drawn cluster indices [b, K] to values [k, b]; returns (low[k], high[k]).
    With fewer than two clusters there is nothing to resample: every bound is NaN (no interval),
    never the point estimate posing as one.
    """
    if n_clusters < 2:
        k = np.atleast_2d(statistic(np.zeros((1, max(n_clusters, 1)), dtype=int))).shape[0]
        return np.full(k, np.nan), np.full(k, np.nan)
    from scipy import stats  # a second to import: only where a bootstrap is asked

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


def metric_intervals(rows: Sequence[Mapping[str, Any]], spec: Resampling, resamples: int = DEFAULT_RESAMPLES,
                     seed: int = 0, encoded: Encoded | None = None) -> dict[str, dict[str, tuple[float, float] | None]]:
    """{metric: {"": overall interval, part name: that group's interval}} for ``spec.metrics``:
    the cluster-robust interval of :mod:`.robust` (Wilson for a proportion, t otherwise) of the
    same registered function that gives the point estimate. ``resamples`` and ``seed`` are not
    used (nothing is drawn); they are kept for callers written for the bootstrap. ``encoded``: the
    rows already :func:`encode`-d with ``spec``."""
    enc = encoded if encoded is not None else encode(rows, spec)
    n_groups = len(enc.group_names)
    counts = (enc.mask > 0)
    counting = np.stack([(enc.groups == g) & counts for g in range(n_groups)] + [counts])
    sizes = [float(c.sum()) for c in counting]
    if not enc.pooled and n_groups:  # the overall value is a mean of the groups: a group's size
        sizes[-1] = float(np.mean([s for s in sizes[:-1] if s > 0] or [0.0]))
    measurable = [units(enc, c) >= 2 for c in counting]
    out: dict[str, dict[str, tuple[float, float] | None]] = {}
    found: dict[str, list[tuple[float, float] | None]] = {}
    for stat in dict.fromkeys(spec.metrics.values()):
        declared = get(stat)
        found[stat] = []
        ests = estimates(partial(_values, enc, stat), enc.keys, enc.n_clusters, counting, enc.groups, enc.pooled,
                         linear_gradient(enc, stat, enc.pred))
        for est, size, ok, rows_i in zip(ests, sizes, measurable, counting, strict=True):
            if not ok:
                found[stat].append(None)
                continue
            edge = None if declared.proportion else boundary_size(enc, stat, est, rows_i, size)
            if declared.proportion or edge is not None:
                low, high = wilson_interval(est, size if edge is None else edge)
            else:
                low, high = t_interval(est)
            if declared.percent:
                low, high = max(low, 0.0), min(high, 100.0)
            found[stat].append(interval_pair(low, high))
    parts = [spec.part.format(g) for g in enc.group_names] if spec.group else []
    for name, stat in spec.metrics.items():
        bounds = found[stat]
        out[name] = {"": bounds[-1], **dict(zip(parts, bounds[:-1], strict=False))}
    return out


def boundary_size(enc: Encoded, statistic: str, est: Estimate, rows: np.ndarray, size: float) -> float | None:
    """The rows a label statistic's boundary interval counts, or None where it is not at the boundary.

    A percent statistic of labels (a macro-F1, macro P or R) of rows that are all right (100) or
    all wrong (0) has every influence 0: no variance, and θ ± t·SE would be "[100, 100]". It gets
    the Wilson interval of all right (all wrong) instead, like accuracy, at the size L × n_min (L
    labels in gold, n_min rows of the rarest): a macro average weighs each label alike, so one
    error on the rarest label costs it about as much as one error in L × n_min rows costs an
    accuracy. On balanced labels that is the accuracy's own interval; rarer labels widen it.
    ``size`` / rows is the scale of a mean over groups (the groups' mean size)."""
    declared = get(statistic)
    if declared.numeric or not declared.percent or est.variance != 0 or est.value not in (0.0, 100.0):
        return None
    keep = rows & (enc.mask > 0)
    right = enc.pred[keep] == enc.gold[keep]
    if not (right.all() if est.value == 100.0 else not right.any()):
        return None
    counts = np.unique(enc.gold[keep], return_counts=True)[1]
    return float(len(counts) * counts.min() * size / keep.sum()) if keep.any() else None


def linear_gradient(enc: Encoded, statistic: str, pred: np.ndarray) -> np.ndarray | None:
    """[G + 1, R]: the derivative of :func:`grouped`'s values along each row's weight, for a
    statistic that is a weighted mean of a row value (:func:`.linear.mean_gradient`); else None."""
    declared = get(statistic)
    if declared.mean_of is None:
        return None
    return mean_gradient(declared.mean_of(enc.gold, pred), enc.mask, enc.groups, len(enc.group_names), enc.pooled,
                         declared.scale)


def _values(enc: Encoded, statistic: str, weights: np.ndarray) -> np.ndarray:
    """[G + 1, b]: the statistic of the run's predictions under ``weights`` (:func:`grouped`)."""
    return grouped(enc, statistic, enc.pred, weights)


def units(enc: Encoded, rows: np.ndarray) -> int:
    """How many distinct units (sets of clusters: an object, an unordered pair of objects) the
    given rows that count come from."""
    keep = rows & (enc.mask > 0)
    if not keep.any():
        return 0
    return len(np.unique(np.sort(enc.keys[keep], axis=1), axis=0))


def interval_pair(low: float, high: float) -> tuple[float, float] | None:
    if np.isnan(low) or np.isnan(high):
        return None
    return round(float(low), 6), round(float(high), 6)
