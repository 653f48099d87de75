"""HEIM's (DALL-Eval's) spatial rule and its spatial accuracy.

The geometry is :mod:`spatialprobe.detectors.rules_heim` (HELM's ``compute_score_spatial`` as the
reference, quirks included; the corrected rule on the best box of each object). Each image's
HEIM verdict for its gold relation (``heim_correct``) is written when the image is judged, since
the reference reads every box of each class, more than a row keeps.
"""

from __future__ import annotations

from typing import Any

from spatialprobe.detectors import rules_heim as heim
from spatialprobe.judging.rulebook.record import (
    Image,
    JudgeRule,
    Mode,
    Score,
    best_first,
    classified,
    pair_row,
    unrecognized,
)


def judge_heim_reference(mode: Mode, image: Image) -> dict[str, Any]:
    """HELM's code (``mode.geometry`` is :func:`heim_reference`, on every box of each class):
    exactly one box of each class, else no relation."""
    a, b, detections = image.obj_a, image.obj_b, image.detections
    boxes_a = [d.box for d in detections if d.label == a]
    boxes_b = [d.box for d in detections if d.label == b]
    first = {n: next((d for d in detections if d.label == n), None) for n in (a, b)}
    row = pair_row(first[a], first[b])
    row["boxes_found"] = [len(boxes_a), len(boxes_b)]
    row["heim_correct"] = mode.geometry(boxes_a, boxes_b, str(image.gold), a == b)[0] == 1.0
    return classified(row, lambda _a, _b, rel: mode.geometry(boxes_a, boxes_b, rel, a == b), None, None, image.labels)


def judge_heim(mode: Mode, image: Image) -> dict[str, Any]:
    """The corrected rule on the best box of each object."""
    a, b = image.obj_a, image.obj_b
    det_a, det_b = mode.boxes(image.detections, a, b)
    row = pair_row(det_a, det_b)
    if det_a is None or det_b is None:
        row["heim_correct"] = False
        return unrecognized(row, ((a, det_a), (b, det_b)))
    row["heim_correct"] = heim.heim_judge(det_a.box, det_b.box, str(image.gold))[0] == 1.0
    return classified(row, mode.geometry, det_a.box, det_b.box, image.labels)


HEIM = JudgeRule(
    name="heim", tasks=("posrel", "posrel2d"), corrected=Mode(heim.heim_judge, boxes=best_first, image=judge_heim),
    reference=Mode(heim.heim_reference, image=judge_heim_reference, follows=heim.HELM),
    score=Score("heim_spatial_accuracy", "heim_correct", "share",
                "HEIM spatial accuracy (correct images of {n}; HELM's detectors/vitdet.py compute_score_spatial)"))
"""HEIM / DALL-Eval: the dominant axis of the centre offset, and its spatial accuracy."""
