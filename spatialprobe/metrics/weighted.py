"""The statistics a bootstrap resample is measured with, from weighted counts.

Each maps (gold codes [R], predictions [R] or [b, R], row weights [b, R], number of task labels)
to one value per resample [b]; weights of ones give the point estimate, and a resample without
weight is NaN. :mod:`.intervals` turns draws of clusters into the weights.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def weighted_accuracy(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int) -> np.ndarray:
    """Percent correct for each resample: ``weights`` [b, R], ``pred`` [R] or [b, R]."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100.0 * (weights * (pred == gold)).sum(-1) / weights.sum(-1)


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
        out = 100.0 * (values * included).sum(0) / count
    return np.where((weights.sum(-1) > 0) & (count > 0), out, np.nan)


def weighted_macro_f1(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int) -> np.ndarray:
    """Macro-F1 in percent over every label, as scikit-learn's with ``labels=`` and ``zero_division=0``."""
    tp, predicted, actual = _per_label(gold, pred, weights, range(n_labels))
    return _macro(_ratio(2 * tp, predicted + actual), np.ones_like(tp, dtype=bool), weights)


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


def weighted_macro_f1_gold(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int
                           ) -> np.ndarray:
    """Macro-F1 in percent over the labels that occur in gold (SpatialMQA's ``labels=``)."""
    tp, predicted, actual = _per_label(gold, pred, weights, range(n_labels))
    return _macro(_ratio(2 * tp, predicted + actual), actual > 0, weights)


def weighted_precision_gold(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int
                            ) -> np.ndarray:
    """Macro precision in percent over the labels that occur in gold."""
    precision, _, included = _over_gold(gold, pred, weights, n_labels)
    return _macro(precision, included, weights)


def weighted_recall_gold(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int
                         ) -> np.ndarray:
    """Macro recall in percent over the labels that occur in gold."""
    _, recall, included = _over_gold(gold, pred, weights, n_labels)
    return _macro(recall, included, weights)


def weighted_pr_f1_gold(gold: np.ndarray, pred: np.ndarray, weights: np.ndarray, n_labels: int
                        ) -> np.ndarray:
    """The harmonic mean of macro precision and macro recall (percent, 0 where both are 0):
    SpatialMQA's published F1 (``Code/eval/calculate_prf1.py``)."""
    p = weighted_precision_gold(gold, pred, weights, n_labels)
    r = weighted_recall_gold(gold, pred, weights, n_labels)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(p + r > 0, 2 * p * r / (p + r), np.where(np.isnan(p + r), np.nan, 0.0))


def weighted_share(gold: np.ndarray, values: np.ndarray, weights: np.ndarray, n_labels: int) -> np.ndarray:
    """Percent of rows whose value is true (VISOR's OA, recognized ratio); ``gold`` is not read."""
    return 100.0 * weighted_mean(gold, values, weights, n_labels)


def weighted_mean(gold: np.ndarray, values: np.ndarray, weights: np.ndarray, n_labels: int) -> np.ndarray:
    """Mean of the rows' values (a benchmark's per-image score); ``gold`` is not read."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights * values).sum(-1) / weights.sum(-1)


STATISTICS: dict[str, Callable[..., np.ndarray]] = {
    "accuracy": weighted_accuracy, "macro_f1": weighted_macro_f1,
    "macro_f1_seen": weighted_macro_f1_seen, "macro_f1_gold": weighted_macro_f1_gold,
    "precision_gold": weighted_precision_gold, "recall_gold": weighted_recall_gold,
    "pr_f1_gold": weighted_pr_f1_gold, "share": weighted_share, "mean": weighted_mean}
"""Each statistic maps (gold codes [R], predictions [R] or [b, R], weights [b, R], number of task
labels) to [b] values; a resample without weight is NaN. ``accuracy``: percent correct;
``macro_f1``: macro-F1 over every task label; ``macro_f1_seen``: over the labels occurring in gold
or predictions (scikit-learn's default); ``macro_f1_gold``, ``precision_gold``, ``recall_gold``:
macro averages over the task labels occurring in gold; ``pr_f1_gold``: 2PR/(P+R) of those macro
precision and recall; ``share``: percent of rows whose value is true; ``mean``: mean value."""
NUMERIC = frozenset({"share", "mean"})
"""Statistics of a row's value (``pred`` read as a number), not of labels."""
