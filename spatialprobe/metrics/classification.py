"""Accuracy and macro-F1 of label lists (from the statistic registry), confusion matrices, mean ± σ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spatialprobe.metrics.statistics import get

STD_DDOF = 0
"""σ over folds is the population standard deviation (numpy's default, ``ddof=0``)."""


def label_codes(gold: Sequence[Any], pred: Sequence[Any], labels: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Gold and predictions as codes: a label's index in ``labels``, other values codes after them."""
    codes = {label: n for n, label in enumerate(labels)}
    as_codes = [np.array([codes.setdefault(v, len(codes)) for v in values], dtype=int) for values in (gold, pred)]
    return as_codes[0], as_codes[1]


def label_statistics(gold: Sequence[Any], pred: Sequence[Any], labels: Sequence[Any], statistics: Sequence[str]
           ) -> dict[str, float]:
    """Each registered statistic (:mod:`.statistics`) of the label lists, with weights of ones:
    the point estimate every run reports."""
    g, p = label_codes(gold, pred, labels)
    ones = np.ones((1, len(g)))
    return {name: float(get(name).function(g, p, ones, len(labels))[0]) for name in statistics}


def accuracy_f1(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, float]:
    """Accuracy and macro-F1 over ``labels`` (labels never predicted count as F1 0), in percent:
    the registered ``accuracy`` and ``macro_f1``."""
    if not gold:
        return {"accuracy": float("nan"), "macro_f1": float("nan"), "n": 0}
    return {**label_statistics(gold, pred, labels, ("accuracy", "macro_f1")), "n": len(gold)}


def mean_std(values: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=STD_DDOF))}


def confusion(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict:
    """Rows are gold labels, columns predicted labels; a pair with a value outside ``labels`` is not
    counted: scikit-learn's ``confusion_matrix(gold, pred, labels=labels)`` (tests/test_statistics.py
    holds them equal), counted here because importing scikit-learn costs half a second of every run."""
    g, p = label_codes(gold, pred, labels)
    k = len(labels)
    kept = (g < k) & (p < k)
    matrix = np.zeros((k, k), dtype=np.int64)
    np.add.at(matrix, (g[kept], p[kept]), 1)
    return {"labels": list(labels), "matrix": matrix.tolist()}
