"""Accuracy, macro-F1 and confusion matrices (scikit-learn), in percent, and mean ± σ."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

STD_DDOF = 0
"""σ over folds is the population standard deviation (numpy's default, ``ddof=0``)."""


def accuracy_f1(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, float]:
    """Accuracy and macro-F1 over ``labels`` (labels never predicted count as F1 0), in percent."""
    if not gold:
        return {"accuracy": float("nan"), "macro_f1": float("nan"), "n": 0}
    return {
        "accuracy": 100.0 * accuracy_score(gold, pred),
        "macro_f1": 100.0 * f1_score(gold, pred, labels=list(labels), average="macro", zero_division=0),
        "n": len(gold),
    }


def mean_std(values: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=STD_DDOF))}


def confusion(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict:
    """Rows are gold labels, columns predicted labels."""
    matrix = confusion_matrix(gold, pred, labels=list(labels))
    return {"labels": list(labels), "matrix": matrix.tolist()}
