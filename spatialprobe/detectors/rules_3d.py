"""T2I-CompBench++'s 3-D spatial rule ("in front of", "behind", "hidden"), reference and corrected.

``Karine-Huang/T2I-CompBench`` ``UniDet_eval/3D_spatial_eval.py`` (``determine_position`` and
``main``) reads a DPT map of inverse depth (disparity: larger = nearer) min-max normalised over
the image, averages it inside each box and credits a relation only as far as the boxes overlap:
with ``iou > 0.5`` the right depth sign scores 1, with ``0 < iou < 0.5`` it scores ``iou / 0.5``,
and boxes that do not overlap (or overlap by exactly 0.5) score 0. "hidden" is judged as
"behind". Its box slice is ``depth_map[int(x_min):int(x_max), int(y_min):int(y_max)]``: rows by
x and columns by y (transposed), with no clipping, and an empty slice's mean is NaN (every
comparison then fails).

The corrected rule reads the box region the right way round (rows by y, clipped; a box thinner
than a pixel takes its corner pixel, as :func:`rules.mean_depth`), credits "in front of" and
"behind" by the depth sign alone (T2I-CompBench's issue #23: "a mouse in front of a car" scored
low though correct, because the boxes did not overlap), and keeps the overlap for "hidden",
which says that A is partly covered: A farther and the boxes intersect. A farther object whose
box meets the nearer one's is better described as hidden, so "behind" scores 0.5 there (the
best-scoring label wins, :func:`rules.classify_position`).

Both read depth from the depth adapters, which return depth (larger = farther):
:func:`normalised_disparity` inverts it back and min-max normalises it, as the script's map.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from spatialprobe.detectors.rules import Box, _fmt, area, iou, mean_depth

RELATIONS_3D = ("in front of", "behind", "hidden")
T2I_3D = "Karine-Huang/T2I-CompBench UniDet_eval/3D_spatial_eval.py determine_position"
IOU_3D = 0.5
"""The script's ``iou_threshold_3d``."""


def normalised_disparity(depth: np.ndarray) -> np.ndarray:
    """``(d - d.min()) / (d.max() - d.min())`` of the disparity ``d = 1 / depth``, as the script
    normalises DPT's output; a map without contrast (max = min) is all zeros, not NaN."""
    disparity = 1.0 / np.asarray(depth, dtype=np.float64)
    low, high = float(disparity.min()), float(disparity.max())
    return (disparity - low) / (high - low) if high > low else np.zeros_like(disparity)


def _slice_mean(values: np.ndarray) -> float:
    with warnings.catch_warnings():  # the mean of an empty slice is NaN: that is the script's quirk
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.mean(values))


def reference_box_depth(disparity: np.ndarray, box: Box) -> float:
    """The script's mean of a box: ``depth_map[int(x_min):int(x_max), int(y_min):int(y_max)]``."""
    x0, y0, x1, y1 = box
    return _slice_mean(np.asarray(disparity)[int(x0):int(x1), int(y0):int(y1)])


def _intersection(box_a: Box, box_b: Box) -> float:
    ix = max(0.0, min(box_a[2], box_b[2]) - max(box_a[0], box_b[0]))
    iy = max(0.0, min(box_a[3], box_b[3]) - max(box_a[1], box_b[1]))
    return ix * iy


def _script_iou(box_a: Box, box_b: Box) -> float:
    """The script's ``intersection / union``; NaN where both boxes have no area (it would divide
    by zero), so that no relation is credited."""
    union = area(box_a) + area(box_b) - _intersection(box_a, box_b)
    return _intersection(box_a, box_b) / union if union > 0 else math.nan


def t2i_3d_reference(box_a: Box, box_b: Box, relation: str, disparity: np.ndarray,
                     iou_threshold_3d: float = IOU_3D) -> tuple[float, str]:
    """``determine_position`` for the 3-D relations on a normalised disparity map."""
    overlap = _script_iou(box_a, box_b)
    mean_a, mean_b = reference_box_depth(disparity, box_a), reference_box_depth(disparity, box_b)
    diff = mean_a - mean_b
    score = 0.0
    if relation in RELATIONS_3D:
        sign_ok = diff > 0 if relation == "in front of" else diff < 0
        if overlap > iou_threshold_3d:
            score = 1.0 if sign_ok else 0.0
        elif iou_threshold_3d > overlap > 0:
            score = overlap / iou_threshold_3d if sign_ok else 0.0
    return score, (f"T2I-CompBench 3-D ({T2I_3D}): disparity A {_fmt(mean_a)} - B {_fmt(mean_b)} = "
                   f"{_fmt(diff)}, IoU {overlap:.3f} -> {relation} score {score:.3f}")


def t2i_3d_judge(box_a: Box, box_b: Box, relation: str, disparity: np.ndarray) -> tuple[float, str]:
    """The corrected 3-D rule (see the module docstring) on a normalised disparity map."""
    mean_a, mean_b = mean_depth(disparity, box_a), mean_depth(disparity, box_b)
    touching = _intersection(box_a, box_b) > 0
    score = 0.0
    if relation == "in front of":
        score = float(mean_a > mean_b)
    elif relation == "behind" and mean_a < mean_b:
        score = 0.5 if touching else 1.0
    elif relation == "hidden":
        score = float(mean_a < mean_b and touching)
    return score, (f"T2I-CompBench 3-D corrected: disparity A {_fmt(mean_a)} vs B {_fmt(mean_b)} "
                   f"(larger = nearer), boxes {'meet' if touching else 'apart'} (IoU "
                   f"{iou(box_a, box_b):.3f}) -> {relation} score {score:.3f}")
