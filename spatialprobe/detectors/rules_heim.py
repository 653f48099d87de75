"""HEIM's (DALL-Eval's) spatial rule, as HELM's code computes it and corrected.

``stanford-crfm/helm`` ``src/helm/benchmark/metrics/image_generation/detectors/vitdet.py``
(``compute_score_spatial``, which says it mimics DALL-Eval's logic) judges a prompt "OBJ1 is
RELATION OBJ2" only when the detector finds **exactly one** box of each class; it compares the
boxes' **top-left corners**, takes the dominant axis (``abs(x_diff) > abs(y_diff)``, ties go to
the vertical), and names the relation with its own sign: A's corner left of B's is "right", A's
corner lower in the image is "above". Two objects of one class score 1 for any relation on the
dominant axis. Its relations are left, right, above, below; ``beside`` and ``inside`` have none.

The corrected rule (``heim``, ``--mode corrected``) keeps the dominant axis but reads the
relation in image coordinates (y down) from the boxes' centres, judges one class against itself
by the same sign, takes the most confident box of each class (an extra detection does not fail
the image) and lets ``beside`` hold as left or right.
"""

from __future__ import annotations

from collections.abc import Sequence

from spatialprobe.detectors.rules import Box, _fmt, centre

HELM = ("stanford-crfm/helm src/helm/benchmark/metrics/image_generation/detectors/vitdet.py "
        "compute_score_spatial")
HEIM_WORDS = {"left of": "left", "right of": "right", "above": "above", "below": "below"}
"""Our relation labels and HEIM's relation words (its prompts' ``relation.split("_")[0]``)."""


def heim_reference(boxes_a: Sequence[Box], boxes_b: Sequence[Box], relation: str,
                   same_class: bool = False) -> tuple[float, str]:
    """1 or 0 as HELM's ``compute_score_spatial`` scores "A is ``relation`` B" from every box of
    A's class and of B's (``same_class``: both objects are one class, so both lists are its boxes)."""
    word = HEIM_WORDS.get(relation)
    if len(boxes_a) != 1 or len(boxes_b) != 1:
        return 0.0, f"HEIM ({HELM}): {len(boxes_a)} and {len(boxes_b)} boxes, not one each -> obj_count_mismatch"
    (x11, y11), (x21, y21) = boxes_a[0][:2], boxes_b[0][:2]
    x_diff, y_diff = x11 - x21, y11 - y21
    if same_class:
        horizontal = abs(x_diff) > abs(y_diff)
        ok = word in (("left", "right") if horizontal else ("above", "below"))
        found = "a horizontal" if horizontal else "a vertical"
    else:  # HEIM's own sign: a corner further left is "right", a lower one "above"
        horizontal = abs(x_diff) > abs(y_diff)
        found = ("right" if x11 < x21 else "left") if horizontal else ("above" if y11 > y21 else "below")
        ok = word == found
    return float(ok), (f"HEIM ({HELM}): top-left corners A-B ({_fmt(x_diff)}, {_fmt(y_diff)}) -> "
                       f"{found} relation; {relation} {'holds' if ok else 'fails'}")


def heim_judge(box_a: Box, box_b: Box, relation: str) -> tuple[float, str]:
    """The corrected HEIM rule on the best box of each object: the dominant axis of the centre
    offset (ties vertical, as HEIM) and its sign in image coordinates; ``beside`` = left or right."""
    (xa, ya), (xb, yb) = centre(box_a), centre(box_b)
    dx, dy = xa - xb, ya - yb
    if abs(dx) > abs(dy):
        found = "left of" if dx < 0 else "right of"
    elif dy != 0:
        found = "above" if dy < 0 else "below"
    else:
        found = "none"
    ok = relation == found or (relation == "beside" and found in ("left of", "right of"))
    return float(ok), (f"HEIM corrected: centre A-B ({_fmt(dx)}, {_fmt(dy)}) -> {found}; "
                       f"{relation} {'holds' if ok else 'fails'}")
