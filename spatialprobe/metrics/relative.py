"""Numeric answers scored against a numeric gold: Mean Relative Accuracy and a ratio tolerance.

* :func:`mean_relative_accuracy` is thinking-in-space's MRA (vision-x-nyu/thinking-in-space
  @51e089c ``lmms_eval/tasks/vsibench/utils.py`` l. 87–94, 32–34), computed the same way: the
  relative error ``|pred − gold| / gold`` compared in floating point with ``1 − θ`` for each
  threshold θ of ``np.linspace(.5, .95, int((.95 − .5) / .05 + 2))`` - **ten** thresholds .50,
  .55, …, .95, since ``int`` of 10.999… is 10 - and averaged; so a relative error of exactly
  0.45 fails θ = .55 (``1 − .55`` is 0.44999999999999996). A reply that reads as no number
  scores 0 (the authors' ``WORST_CASE_FOR_METRICS``). A gold of 0, where the authors' code
  divides by zero, is refused.
* :func:`within_ratio`: the share-of-rows tolerance QSpatial and SpatialScore report: right where
  ``max(pred / gold, gold / pred) < tolerance`` (2.0: within a factor of two;
  haoningwu3639/SpatialScore @1995c4f ``utils/util.py`` l. 281–386), both 0 right, one 0 wrong.

Each row's value is averaged by the registered statistics ``mra`` and ``within_tolerance``
(:mod:`.statistics`), which give the run's number and its cluster-robust interval.
"""

from __future__ import annotations

import numpy as np

MRA_THRESHOLDS = np.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2))
"""The thresholds θ of thinking-in-space's MRA: ten of them (.50 to .95), as its code builds them."""
RATIO_TOLERANCE = 2.0
"""The ratio tolerance of QSpatial and SpatialScore's numeric answers."""


def mean_relative_accuracy(pred: float | None, gold: float) -> float:
    """thinking-in-space's MRA of one answer, in [0, 1]: the share of the ten thresholds θ at
    which ``|pred − gold| / gold <= 1 − θ``; 0 where ``pred`` is None (read as no number)."""
    if gold == 0:
        raise ValueError("MRA divides by the gold value, and this gold is 0")
    if pred is None:
        return 0.0
    return float((abs(pred - gold) / gold <= 1 - MRA_THRESHOLDS).mean())


def within_ratio(pred: float | None, gold: float, tolerance: float = RATIO_TOLERANCE) -> bool:
    """Whether ``pred`` is within a factor ``tolerance`` of ``gold`` (strictly); None is wrong."""
    if pred is None:
        return False
    if pred == 0 or gold == 0:
        return pred == gold
    if (pred < 0) != (gold < 0):
        return False
    return max(pred / gold, gold / pred) < tolerance
