"""The peers' rules as their code computes them, quirks included (``--mode reference``).

Pure functions over boxes and depth maps, like :mod:`spatialprobe.detectors.rules`; each
follows the lines of one released script (repository and path in its docstring), where
:mod:`rules` holds the corrected rule. The tests compare each with a transcription of those
lines (``tests/judge_reference.py``) on random boxes and depth maps, boxes thinner than a pixel
included.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from spatialprobe.detectors.base import Detection
from spatialprobe.detectors.rules import Box, _boxstr, _fmt

RELEASE = "xxxiaol/spatial-commonsense"


def release_best(detections: Sequence[Detection], name: str) -> Detection | None:
    """The release's box of an object (``code/size/image_probing_box.py``): the running maximum
    of ``conf`` starting at 0 with a strict ``>``: the first of tied top boxes, and a box of
    confidence 0 never counts."""
    best, conf = None, 0.0
    for det in detections:
        if det.label == name and det.score > conf:
            best, conf = det, det.score
    return best


def release_mean_depth(depth: np.ndarray, box: Box) -> float:
    """``np.mean(depth[y1:y2, x1:x2])`` of ``[int(x1), int(y1), int(x2), int(y2)]``, as the
    release's size and height scripts: no clipping (a negative coordinate counts from the far
    edge, as numpy's slices do) and NaN for a slice without pixels, which makes every later
    comparison false (the answer is then "smaller" / "shorter")."""
    x1, y1, x2, y2 = (int(v) for v in box)
    with warnings.catch_warnings():  # numpy warns "Mean of empty slice": that NaN is the quirk
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.mean(np.asarray(depth, dtype=np.float64)[y1:y2, x1:x2]))


def release_position(box_a: Box, box_b: Box) -> tuple[str, str]:
    """``code/posrel/image_probing_box.py``'s relation of A to B, by its own comparisons (no angle):
    inside when A's box lies within B's; *above* when A's centre is **lower** in the image
    (``cy1>cy2``, the released sign) by at least the horizontal offset; below the other way;
    beside when the horizontal offset is larger; ``none`` (not identified) when the centres meet."""
    ax1, ay1, ax2, ay2 = box_a
    bx1, by1, bx2, by2 = box_b
    cx1, cy1, cx2, cy2 = (ax1 + ax2) / 2, (ay1 + ay2) / 2, (bx1 + bx2) / 2, (by1 + by2) / 2
    if (ax1 >= bx1 and ax2 <= bx2) and (ay1 >= by1 and ay2 <= by2):
        answer = "inside"
    elif cy1 > cy2 and cy1 - cy2 >= abs(cx1 - cx2):
        answer = "above"
    elif cy1 < cy2 and cy2 - cy1 >= abs(cx1 - cx2):
        answer = "below"
    elif abs(cy2 - cy1) < abs(cx1 - cx2):
        answer = "beside"
    else:
        answer = "none"
    return answer, (f"release ({RELEASE} code/posrel/image_probing_box.py): A {_boxstr(box_a)}, "
                    f"B {_boxstr(box_b)}, centre offset A-B ({_fmt(cx1 - cx2)}, {_fmt(cy1 - cy2)}) -> {answer}")


def release_position_judge(box_a: Box, box_b: Box, relation: str) -> tuple[float, str]:
    """Score 1 when the release's comparisons give ``relation``; ``left of``/``right of`` (which
    the release has not) need ``beside`` and the x sign, as :func:`rules.vdg_judge`."""
    answer, why = release_position(box_a, box_b)
    if relation in ("left of", "right of"):
        dx = (box_a[0] + box_a[2]) / 2 - (box_b[0] + box_b[2]) / 2
        side = "left of" if dx < 0 else "right of" if dx > 0 else "beside"
        return float(answer == "beside" and side == relation), f"{why}; x offset {_fmt(dx)} -> {side}"
    return float(answer == relation), why


def first_of_class(detections: Sequence[Detection], name: str) -> Detection | None:
    """T2I-CompBench's box of an object (``UniDet_eval/2D_spatial_eval.py``: ``obj.index(obj1)``):
    the detector's first box of that class, in the order the detector lists them."""
    return next((det for det in detections if det.label == name), None)


def t2i_3d_positions(detections: Sequence[Detection], name_a: str, name_b: str
                     ) -> tuple[Detection | None, Detection | None]:
    """The boxes ``UniDet_eval/3D_spatial_eval.py`` pairs: one pass over the detector's list
    setting ``obj1_pos`` at every box of A and ``obj2_pos`` at every box of B, stopping once both
    are set, so A's box is its **last** box listed up to B's first (when both are found), else
    each object's first box."""
    pos_a = pos_b = None
    for i, det in enumerate(detections):
        if det.label == name_a:
            pos_a = i
        if det.label == name_b:
            pos_b = i
        if pos_a is not None and pos_b is not None:
            return detections[pos_a], detections[pos_b]
    return first_of_class(detections, name_a), first_of_class(detections, name_b)
