"""Pure geometry that turns boxes and depths into answers: no models, no I/O.

Every rule returns ``(answer, explanation)``: the answer the rule gives and one line saying why,
so a gallery or a test failure shows the numbers behind each decision.

Conventions: a box is ``(x0, y0, x1, y1)`` in pixels with ``x0 <= x1`` and ``y0 <= y1``; image
``y`` grows **downwards** (row index), as every detector returns it. A depth map is a 2-D array
of *depth* (larger = farther), indexed ``[row, column]``; see ``detectors.depth`` for turning a
model's disparity into depth.

Position relations are named ``above``, ``below``, ``inside``, ``beside`` (the paper's posrel
labels) and ``left of``, ``right of`` (SR2D/VISOR, GenEval, T2I-CompBench). Each position judge
scores one relation for the pair *(A relative to B)* in ``[0, 1]``; :func:`classify_position`
turns any judge into a classifier over a label set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from spatialprobe.errors import UsageError

Box = tuple[float, float, float, float]
RELATIONS = ("above", "below", "inside", "beside", "left of", "right of")
SR2D_RELATIONS = {"to the left of": "left of", "to the right of": "right of",
                  "above": "above", "below": "below"}


def _fmt(x: float) -> str:
    return f"{x:.4g}"


# ---- box geometry ------------------------------------------------------------------------------

def area(box: Box) -> float:
    return max(box[2] - box[0], 0.0) * max(box[3] - box[1], 0.0)


def box_height(box: Box) -> float:
    return max(box[3] - box[1], 0.0)


def centre(box: Box) -> tuple[float, float]:
    return ((box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0)


def contains(outer: Box, inner: Box) -> bool:
    """True when ``inner`` lies within ``outer`` (edges may touch)."""
    return (outer[0] <= inner[0] and outer[1] <= inner[1]
            and inner[2] <= outer[2] and inner[3] <= outer[3])


def iou(box_a: Box, box_b: Box) -> float:
    """Intersection over union of two boxes (continuous coordinates, no +1)."""
    ix = max(0.0, min(box_a[2], box_b[2]) - max(box_a[0], box_b[0]))
    iy = max(0.0, min(box_a[3], box_b[3]) - max(box_a[1], box_b[1]))
    inter = ix * iy
    union = area(box_a) + area(box_b) - inter
    return inter / union if union > 0 else 0.0


DEPTH_REGIONS = ("release", "covered")


def depth_region(shape: tuple[int, ...], box: Box, region: str = "release") -> tuple[int, int, int, int]:
    """Rows ``r0:r1`` and columns ``c0:c1`` of the depth map that a box's mean depth averages.

    ``release`` (default): as the spatial-commonsense release (``code/size/image_probing_box.py``)
    does, ``depth[int(y1):int(y2), int(x1):int(x2)]``: coordinates truncated to whole pixels, so a
    partly covered last row/column is left out. Coordinates are clipped to the image first (the
    release's negative coordinates would wrap around in numpy), and a box that truncates to no
    pixel takes the pixel its corner lies on (the release's mean of an empty slice is NaN, which
    silently answers "smaller").
    ``covered``: every pixel the box touches (pixel ``(r, c)`` covers ``[c, c+1) x [r, r+1)``).
    """
    if region not in DEPTH_REGIONS:
        raise UsageError(f"depth region must be one of {DEPTH_REGIONS}, not {region!r}")
    rows, cols = shape[:2]
    x0, y0 = min(max(box[0], 0.0), cols - 1), min(max(box[1], 0.0), rows - 1)
    c0, r0 = int(x0), int(y0)
    if region == "release":
        c1, r1 = int(min(max(box[2], 0.0), cols)), int(min(max(box[3], 0.0), rows))
    else:
        c1, r1 = math.ceil(min(max(box[2], 0.0), cols)), math.ceil(min(max(box[3], 0.0), rows))
    return r0, max(r1, r0 + 1), c0, max(c1, c0 + 1)


def mean_depth(depth: np.ndarray, box: Box, region: str = "release") -> float:
    """Mean depth inside a box (the paper's object depth), over :func:`depth_region`."""
    r0, r1, c0, c1 = depth_region(depth.shape, box, region)
    return float(np.asarray(depth[r0:r1, c0:c1], dtype=np.float64).mean())


# ---- size and height ---------------------------------------------------------------------------

def size_rule(box_a: Box, depth_a: float, box_b: Box, depth_b: float,
              labels: Sequence[str] = ("larger", "smaller")) -> tuple[str, str]:
    """A is larger when area x depth^2 of A exceeds that of B (ties answer ``labels[1]``).

    A box's area shrinks with the square of the distance, so area x depth^2 is proportional to
    the object's real cross-section under a pinhole camera.
    """
    score_a = area(box_a) * depth_a ** 2
    score_b = area(box_b) * depth_b ** 2
    answer = labels[0] if score_a > score_b else labels[1]
    sign = ">" if score_a > score_b else ("=" if score_a == score_b else "<")
    return answer, (f"area*depth^2: A {_fmt(area(box_a))}*{_fmt(depth_a)}^2={_fmt(score_a)} {sign} "
                    f"B {_fmt(area(box_b))}*{_fmt(depth_b)}^2={_fmt(score_b)} -> {answer}")


def height_rule(box_a: Box, depth_a: float, box_b: Box, depth_b: float,
                labels: Sequence[str] = ("taller", "shorter")) -> tuple[str, str]:
    """A is taller when box height x depth of A exceeds that of B (ties answer ``labels[1]``)."""
    score_a = box_height(box_a) * depth_a
    score_b = box_height(box_b) * depth_b
    answer = labels[0] if score_a > score_b else labels[1]
    sign = ">" if score_a > score_b else ("=" if score_a == score_b else "<")
    return answer, (f"height*depth: A {_fmt(box_height(box_a))}*{_fmt(depth_a)}={_fmt(score_a)} "
                    f"{sign} B {_fmt(box_height(box_b))}*{_fmt(depth_b)}={_fmt(score_b)} -> {answer}")


# ---- position: VDG (Elliott & Keller 2013), as the spatial-commonsense paper uses it -----------

def centre_angle(box_a: Box, box_b: Box, legacy_sign: bool = False) -> float:
    """Angle in degrees [0, 360) of A's centre seen from B's centre, counter-clockwise from +x.

    Image y points down, so the vertical offset is flipped: 90 degrees means A is straight
    above B. ``legacy_sign=True`` skips the flip, as the released code did, which swaps above
    and below.
    """
    (xa, ya), (xb, yb) = centre(box_a), centre(box_b)
    dy = (ya - yb) if legacy_sign else (yb - ya)
    return math.degrees(math.atan2(dy, xa - xb)) % 360.0


ABOVE = (45.0, 135.0)
"""VDG's angles (degrees, closed) of A's centre seen from B's that are *above*."""
BELOW = (225.0, 315.0)
"""VDG's angles (degrees, closed) that are *below*."""


def vdg_position(box_a: Box, box_b: Box, *, above: tuple[float, float] = ABOVE,
                 below: tuple[float, float] = BELOW, legacy_sign: bool = False
                 ) -> tuple[str, str]:
    """Relation of A to B: ``inside`` if box A lies within box B, else by the centre angle.

    ``above`` and ``below`` are closed angle intervals (degrees); anything else is ``beside``.
    Two boxes sharing their centre (one not within the other) have no angle: ``none``.
    """
    if contains(box_b, box_a):
        return "inside", f"box A {_boxstr(box_a)} lies within box B {_boxstr(box_b)} -> inside"
    if centre(box_a) == centre(box_b):  # no angle: the released code leaves such pairs unjudged
        return "none", f"boxes A {_boxstr(box_a)} and B {_boxstr(box_b)} share their centre -> none"
    angle = centre_angle(box_a, box_b, legacy_sign)
    if above[0] <= angle <= above[1]:
        answer = "above"
    elif below[0] <= angle <= below[1]:
        answer = "below"
    else:
        answer = "beside"
    legacy = " (legacy sign)" if legacy_sign else ""
    return answer, (f"centre angle {angle:.1f} deg{legacy}; above {above[0]:g}-{above[1]:g}, "
                    f"below {below[0]:g}-{below[1]:g} -> {answer}")


def _boxstr(box: Box) -> str:
    return "(" + ", ".join(_fmt(v) for v in box) + ")"


def vdg_judge(box_a: Box, box_b: Box, relation: str, *, above: tuple[float, float] = ABOVE,
              below: tuple[float, float] = BELOW, legacy_sign: bool = False) -> tuple[float, str]:
    """Score 1 when VDG gives ``relation``; ``left of``/``right of`` need ``beside`` and the x sign."""
    answer, why = vdg_position(box_a, box_b, above=above, below=below, legacy_sign=legacy_sign)
    if relation in ("left of", "right of"):
        dx = centre(box_a)[0] - centre(box_b)[0]
        side = "left of" if dx < 0 else "right of" if dx > 0 else "beside"
        ok = answer == "beside" and side == relation
        return float(ok), f"{why}; x offset {_fmt(dx)} -> {side}"
    return float(answer == relation), why


def vdg_legacy_judge(box_a: Box, box_b: Box, relation: str, *, above: tuple[float, float] = ABOVE,
                     below: tuple[float, float] = BELOW) -> tuple[float, str]:
    """:func:`vdg_judge` with the released code's sign (above and below swapped)."""
    return vdg_judge(box_a, box_b, relation, above=above, below=below, legacy_sign=True)


# ---- position: VISOR (Gokhale et al.) ----------------------------------------------------------

def visor_sign(centroid_a: Sequence[float], centroid_b: Sequence[float], relation: str) -> bool:
    """VISOR's rule: the sign of the centroid difference A - B decides the relation."""
    dx = centroid_a[0] - centroid_b[0]
    dy = centroid_a[1] - centroid_b[1]
    return {"left of": dx < 0, "right of": dx > 0, "above": dy < 0, "below": dy > 0,
            "beside": dx != 0}.get(relation, False)


def visor_judge(box_a: Box, box_b: Box, relation: str) -> tuple[float, str]:
    """Centroid sign rule on two boxes. ``beside`` = left of or right of; ``inside`` never holds."""
    ca, cb = centre(box_a), centre(box_b)
    ok = visor_sign(ca, cb, relation)
    return float(ok), (f"centroid A-B = ({_fmt(ca[0] - cb[0])}, {_fmt(ca[1] - cb[1])}) -> "
                       f"{relation} {'holds' if ok else 'fails'}")


def visor_any_pair(centroids_a: Sequence[Sequence[float]], centroids_b: Sequence[Sequence[float]],
                   relation: str) -> bool:
    """VISOR's spatial correctness of an image: some pair of A and B detections satisfies it."""
    return any(visor_sign(a, b, relation) for a in centroids_a for b in centroids_b)


# ---- position: GenEval (Ghosh et al. 2023) -----------------------------------------------------

def geneval_relations(box_a: Box, box_b: Box, margin: float = 0.1) -> set[str]:
    """Relations of A to B after shrinking the centre offset by ``margin`` x (size A + size B).

    Each axis of the offset is reduced towards zero by the margin; the reduced offset divided by
    the full offset's length must exceed 0.5 on an axis for that axis' relation to hold.
    """
    (xa, ya), (xb, yb) = centre(box_a), centre(box_b)
    offset = np.array([xa - xb, ya - yb], dtype=np.float64)
    dims = np.array([box_a[2] - box_a[0] + box_b[2] - box_b[0],
                     box_a[3] - box_a[1] + box_b[3] - box_b[1]], dtype=np.float64)
    revised = np.maximum(np.abs(offset) - margin * np.abs(dims), 0.0) * np.sign(offset)
    if np.all(np.abs(revised) < 1e-3):
        return set()
    dx, dy = revised / np.linalg.norm(offset)
    found = set()
    if dx < -0.5:
        found.add("left of")
    if dx > 0.5:
        found.add("right of")
    if dy < -0.5:
        found.add("above")
    if dy > 0.5:
        found.add("below")
    return found


def geneval_judge(box_a: Box, box_b: Box, relation: str, margin: float = 0.1) -> tuple[float, str]:
    """1 when GenEval's rule finds ``relation``; ``beside`` = left of or right of."""
    found = geneval_relations(box_a, box_b, margin)
    ok = (relation in found) or (relation == "beside" and bool(found & {"left of", "right of"}))
    return float(ok), f"GenEval (margin {margin:g}) finds {sorted(found) or 'no relation'}"


# ---- position: T2I-CompBench (Huang et al. 2023) -----------------------------------------------

def t2i_compbench_judge(box_a: Box, box_b: Box, relation: str, iou_threshold: float = 0.1,
                        distance_threshold: float = 150.0) -> tuple[float, str]:
    """T2I-CompBench's soft relation score: 1 when the dominant axis and sign agree and the boxes
    barely overlap, damped to ``iou_threshold / IoU`` when IoU reaches the threshold; ``beside``
    uses its "next to" rule (1 when close on either axis, else ``distance_threshold / max``)."""
    (xa, ya), (xb, yb) = centre(box_a), centre(box_b)
    dx, dy = xb - xa, yb - ya   # B minus A, as the released code measures it
    overlap = iou(box_a, box_b)
    score = 0.0
    if relation == "beside":
        far = max(abs(dx), abs(dy))
        score = 1.0 if min(abs(dx), abs(dy)) < distance_threshold else distance_threshold / far
    elif relation in ("left of", "right of", "above", "below"):
        sign_ok = {"left of": dx > 0, "right of": dx < 0, "above": dy > 0, "below": dy < 0}[relation]
        axis_ok = abs(dx) > abs(dy) if relation in ("left of", "right of") else abs(dy) > abs(dx)
        if sign_ok and axis_ok:
            score = 1.0 if overlap < iou_threshold else iou_threshold / overlap
    return score, (f"T2I-CompBench: centre B-A = ({_fmt(dx)}, {_fmt(dy)}), IoU {overlap:.3f} -> "
                   f"{relation} score {score:.3f}")


# ---- judges as classifiers ---------------------------------------------------------------------

def classify_position(judge, box_a: Box, box_b: Box, labels: Sequence[str], **kwargs
                      ) -> tuple[str, str]:
    """The label whose score is highest (earlier labels win ties); ``none`` when all score 0."""
    best: tuple[float, str, str] | None = None
    for label in labels:
        score, why = judge(box_a, box_b, label, **kwargs)
        if best is None or score > best[0]:
            best = (score, label, why)
    assert best is not None, "labels must not be empty"
    if best[0] <= 0:
        return "none", f"no relation scores above 0 ({best[2]})"
    return best[1], best[2]
