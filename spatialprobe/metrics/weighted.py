"""The statistics by name, as functions: a view of the registry (:mod:`.statistics`).

Each maps (gold codes [R], predictions [R] or [b, R], row weights [b, R], number of task labels)
to one value per resample [b]; weights of ones give the point estimate, and a resample without
weight is NaN. :mod:`.intervals` turns draws of clusters into the weights. A statistic is
declared in :mod:`.statistics` (one function, one decorator line), never here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import numpy as np

from spatialprobe.metrics.statistics import (
    REGISTRY,
    weighted_accuracy,
    weighted_balanced_accuracy,
    weighted_macro_f1,
    weighted_macro_f1_gold,
    weighted_macro_f1_seen,
    weighted_mean,
    weighted_pr_f1_gold,
    weighted_precision_gold,
    weighted_recall_gold,
    weighted_share,
)

__all__ = ["NUMERIC", "STATISTICS", "weighted_accuracy", "weighted_balanced_accuracy", "weighted_macro_f1",
           "weighted_macro_f1_gold", "weighted_macro_f1_seen", "weighted_mean", "weighted_pr_f1_gold",
           "weighted_precision_gold", "weighted_recall_gold", "weighted_share"]


class _Functions(Mapping[str, Callable[..., np.ndarray]]):
    """Name -> function of every registered statistic (a live, read-only view of the registry)."""

    def __getitem__(self, name: str) -> Callable[..., np.ndarray]:
        return REGISTRY[name].function

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)


STATISTICS: Mapping[str, Callable[..., np.ndarray]] = _Functions()
"""Name -> weighted function of every registered statistic (see :mod:`.statistics`):
``accuracy``, ``macro_f1`` (over every task label), ``macro_f1_seen`` (over the labels occurring
in gold or predictions: scikit-learn's default), ``macro_f1_gold``, ``precision_gold``,
``recall_gold`` (macro averages over the task labels occurring in gold), ``pr_f1_gold`` (2PR/(P+R)
of those), ``balanced_accuracy``, ``share`` (percent of rows whose value is true), ``mean``."""
NUMERIC = frozenset(name for name, s in REGISTRY.items() if s.numeric)
"""Statistics of a row's value (``pred`` read as a number), not of labels."""
