"""The registry of statistics: each is declared once, by decorator, with what a table needs.

A statistic maps (gold codes [R], predictions [R] or [b, R], row weights [b, R], number of task
labels) to one value per resample [b]; weights of ones give the point estimate, and a resample
without weight is NaN. The same function gives a run's point estimate
(:func:`spatialprobe.metrics.estimates.point_estimates`), its bootstrap interval
(:mod:`.intervals`) and a paired difference (:mod:`.paired`), so the three can never disagree.

Adding a statistic is one function and one line::

    @statistic("balanced_accuracy", "balanced accuracy", column="bal. acc")
    def weighted_balanced_accuracy(gold, pred, weights, n_labels): ...

after which a kind or a source names it in its :class:`~.intervals.Resampling` (``metrics=
{"balanced_accuracy": "balanced_accuracy"}``) and every run of it reports the number with its
interval; ``report``, the paired table and ``summary.json`` read its header from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Function = Callable[[np.ndarray, np.ndarray, np.ndarray, int], np.ndarray]
"""(gold [R], predictions [R] or [b, R], weights [b, R], n_labels) -> values [b]."""
RowValue = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""(gold [R], predictions [R]) -> each row's value [R] (a statistic that is their weighted mean)."""


@dataclass(frozen=True)
class Statistic:
    """One registered statistic: its function and how it is shown."""

    name: str
    """The name kinds and sources refer to it by (a value of ``Resampling.metrics``)."""
    function: Function
    header: str
    """Its header in tables (``report``, the paired table) and ``summary.json``."""
    column: str
    """Its short header in ``report``'s side-by-side columns."""
    higher_is_better: bool = True
    numeric: bool = False
    """True: a statistic of each row's value (``pred`` read as a number or boolean, gold unread);
    False: of labels (gold and predictions are label codes)."""
    percent: bool = True
    """Its values lie in [0, 100] (a difference of two in [−100, 100]); False: unbounded (a mean)."""
    proportion: bool = False
    """It is the percent of rows (weighted) that are right or true: its interval is the
    cluster-adjusted Wilson interval (:mod:`.robust`)."""
    description: str = ""
    """What it is, in one sentence (its function's docstring's first line unless given)."""
    mean_of: RowValue | None = None
    """Where the statistic is a weighted mean of one value per row (times 100 where ``percent``):
    that value from (gold, predictions) [R]. Its derivative along any row weights is then known in
    closed form (:func:`spatialprobe.metrics.intervals.linear_gradient`), which the intervals and
    paired tests use instead of evaluating the function once per cluster; None: not such a mean."""

    @property
    def scale(self) -> float:
        """The factor of a mean statistic's value: 100 for percents, else 1."""
        return 100.0 if self.percent else 1.0

    def to_dict(self) -> dict[str, object]:
        return {"statistic": self.name, "header": self.header, "higher_is_better": self.higher_is_better}


REGISTRY: dict[str, Statistic] = {}
"""Every statistic, by name, in the order declared."""


def statistic(name: str, header: str, *, column: str | None = None, higher_is_better: bool = True,
              numeric: bool = False, percent: bool = True, proportion: bool = False,
              mean_of: RowValue | None = None) -> Callable[[Function], Function]:
    """Declare the decorated weighted function as the statistic ``name``."""
    def register(function: Function) -> Function:
        if name in REGISTRY:
            raise ValueError(f"statistic {name!r} is declared twice")
        doc = (function.__doc__ or "").strip().split("\n\n")[0]
        REGISTRY[name] = Statistic(name, function, header, column or header, higher_is_better, numeric,
                                   percent, proportion, " ".join(doc.split()), mean_of)
        return function
    return register


def get(name: str) -> Statistic:
    """The statistic ``name``; an unknown name is refused listing the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown statistic {name!r}; known: {', '.join(REGISTRY)}") from None


# ---- the statistics ------------------------------------------------------------------------------

def _right(gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
    return (pred == gold).astype(float)


def _value(gold: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=float)


@statistic("accuracy", "accuracy", column="acc", proportion=True, mean_of=_right)
def weighted_accuracy(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int) -> np.ndarray:
    """Percent correct for each resample: ``weights`` [b, R], ``pred`` [R] or [b, R]."""
    with np.errstate(invalid="ignore", divide="ignore"):
        # 100 x (share), as scikit-learn's 100 * accuracy_score: the same float, bit for bit
        return 100.0 * ((weights * (pred == gold)).sum(-1) / weights.sum(-1))


def _per_label(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, labels: range
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[L, b] true positives, predicted and actual weight of each label."""
    shape = np.broadcast_shapes(weights.shape[:-1], pred.shape[:-1])
    tp, predicted, actual = [], [], []
    for label in labels:
        tp.append(np.broadcast_to((weights * ((pred == label) & (gold == label))).sum(-1), shape))
        predicted.append(np.broadcast_to((weights * (pred == label)).sum(-1), shape))
        actual.append(np.broadcast_to((weights * (gold == label)).sum(-1), shape))
    empty = np.zeros((0, *shape))
    return (np.array(tp, dtype=float) if tp else empty, np.array(predicted, dtype=float) if tp else empty,
            np.array(actual, dtype=float) if tp else empty)


def _ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    return np.divide(top, bottom, out=np.zeros_like(top, dtype=float), where=bottom > 0)


def _macro(values: np.ndarray, included: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Mean over the included labels (each [L, b]); NaN where no weight or no label is included."""
    count = included.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 100.0 * ((values * included).sum(0) / count)
    return np.where((weights.sum(-1) > 0) & (count > 0), out, np.nan)


@statistic("macro_f1", "macro-F1")
def weighted_macro_f1(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int) -> np.ndarray:
    """Macro-F1 in percent over every task label, as scikit-learn's with ``labels=`` and ``zero_division=0``."""
    tp, predicted, actual = _per_label(gold, pred, weights, range(n_labels))
    return _macro(_ratio(2 * tp, predicted + actual), np.ones_like(tp, dtype=bool), weights)


@statistic("macro_f1_seen", "macro-F1")
def weighted_macro_f1_seen(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int
                           ) -> np.ndarray:
    """Macro-F1 in percent over the labels that occur in gold or predictions of each resample:
    scikit-learn's default label set (``f1_score(gold, pred, average="macro")``)."""
    codes = range(int(max(gold.max(initial=-1), pred.max(initial=-1))) + 1)
    tp, predicted, actual = _per_label(gold, pred, weights, codes)
    return _macro(_ratio(2 * tp, predicted + actual), (predicted + actual) > 0, weights)


def _over_gold(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per label precision and recall ([L, b]), and which labels occur in gold."""
    tp, predicted, actual = _per_label(gold, pred, weights, range(n_labels))
    return _ratio(tp, predicted), _ratio(tp, actual), actual > 0


@statistic("macro_f1_gold", "macro-F1")
def weighted_macro_f1_gold(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int
                           ) -> np.ndarray:
    """Macro-F1 in percent over the labels that occur in gold (SpatialMQA's ``labels=``)."""
    tp, predicted, actual = _per_label(gold, pred, weights, range(n_labels))
    return _macro(_ratio(2 * tp, predicted + actual), actual > 0, weights)


@statistic("precision_gold", "macro precision", column="P")
def weighted_precision_gold(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int
                            ) -> np.ndarray:
    """Macro precision in percent over the labels that occur in gold."""
    precision, _, included = _over_gold(gold, pred, weights, n_labels)
    return _macro(precision, included, weights)


@statistic("recall_gold", "macro recall", column="R")
def weighted_recall_gold(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int
                         ) -> np.ndarray:
    """Macro recall in percent over the labels that occur in gold (balanced accuracy over them)."""
    _, recall, included = _over_gold(gold, pred, weights, n_labels)
    return _macro(recall, included, weights)


@statistic("pr_f1_gold", "F1 (2PR/(P+R))", column="F1")
def weighted_pr_f1_gold(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int
                        ) -> np.ndarray:
    """The harmonic mean of macro precision and macro recall (percent, 0 where both are 0):
    SpatialMQA's published F1 (``Code/eval/calculate_prf1.py``)."""
    p = weighted_precision_gold(gold, pred, weights, n_labels)
    r = weighted_recall_gold(gold, pred, weights, n_labels)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(p + r > 0, 2 * p * r / (p + r), np.where(np.isnan(p + r), np.nan, 0.0))


@statistic("balanced_accuracy", "balanced accuracy", column="bal. acc")
def weighted_balanced_accuracy(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int
                               ) -> np.ndarray:
    """Balanced accuracy in percent: the mean recall over the labels that occur in gold
    (scikit-learn's ``balanced_accuracy_score``)."""
    return weighted_recall_gold(gold, pred, weights, n_labels)


@statistic("share", "share (%)", column="%", numeric=True, proportion=True, mean_of=_value)
def weighted_share(gold: np.ndarray, values: np.ndarray, weights: np.ndarray, n_labels: int) -> np.ndarray:
    """Percent of rows whose value is true (VISOR's OA, recognized ratio); ``gold`` is not read."""
    return 100.0 * weighted_mean(gold, values, weights, n_labels)


@statistic("mean", "mean", numeric=True, percent=False, mean_of=_value)
def weighted_mean(gold: np.ndarray, values: np.ndarray, weights: np.ndarray, n_labels: int) -> np.ndarray:
    """Mean of the rows' values (a benchmark's per-image score); ``gold`` is not read."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights * values).sum(-1) / weights.sum(-1)


@statistic("mra", "MRA", numeric=True, proportion=True)  # a mean of values in [0, 1]: Wilson, never [100, 100]
def weighted_mra(gold: np.ndarray, values: np.ndarray, weights: np.ndarray, n_labels: int) -> np.ndarray:
    """Mean Relative Accuracy in percent: the mean of the rows' MRA, each in [0, 1]
    (:func:`spatialprobe.metrics.relative.mean_relative_accuracy`), times 100; ``gold`` is not read."""
    return 100.0 * weighted_mean(gold, values, weights, n_labels)


@statistic("within_tolerance", "within tolerance (%)", column="tol.", numeric=True, proportion=True)
def weighted_within_tolerance(gold: np.ndarray, values: np.ndarray, weights: np.ndarray, n_labels: int
                              ) -> np.ndarray:
    """Percent of numeric answers within the benchmark's tolerance of the gold
    (:func:`spatialprobe.metrics.relative.within_ratio`); ``gold`` is not read."""
    return 100.0 * weighted_mean(gold, values, weights, n_labels)
