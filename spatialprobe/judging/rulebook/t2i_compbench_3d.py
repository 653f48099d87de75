"""T2I-CompBench++'s 3-D spatial rule (``judge posrel3d``): in front of, behind, hidden.

The geometry is :mod:`spatialprobe.detectors.rules_3d` (its module says what the script computes
and what the corrected rule changes). Each image's score for its gold relation is written when the
image is judged, since it reads the depth map: 0.25 x the confidence of each object found plus
half the 3-D position score when both are found, as the script's ``main`` (no floor at 0.5,
unlike its 2-D script).
"""

from __future__ import annotations

from typing import Any

from spatialprobe.detectors import rules_3d as r3
from spatialprobe.detectors.rules_reference import t2i_3d_positions
from spatialprobe.judging.rulebook.record import Image, JudgeRule, Mode, Score, classified, pair_row, unrecognized


def judge_3d(mode: Mode, image: Image) -> dict[str, Any]:
    """The mode's boxes on the normalised disparity of the depth map; the row keeps the image's
    benchmark score for its gold relation (``t2i_compbench_3d_score``)."""
    a, b = image.obj_a, image.obj_b
    det_a, det_b = mode.boxes(image.detections, a, b)
    row = pair_row(det_a, det_b)
    row["t2i_compbench_3d_score"] = 0.25 * sum(d.score for d in (det_a, det_b) if d is not None)
    if det_a is None or det_b is None:
        return unrecognized(row, ((a, det_a), (b, det_b)))
    disparity = r3.normalised_disparity(image.depth)
    position, _ = mode.geometry(det_a.box, det_b.box, image.gold, disparity)
    row["t2i_compbench_3d_score"] += position / 2
    return classified(row, mode.geometry, det_a.box, det_b.box, image.labels, disparity=disparity)


T2I_COMPBENCH_3D = JudgeRule(
    name="t2i-compbench-3d", tasks=("posrel3d",), default_for=("posrel3d",), judges="3-D relations",
    corrected=Mode(r3.t2i_3d_judge, image=judge_3d),
    reference=Mode(r3.t2i_3d_reference, boxes=t2i_3d_positions, image=judge_3d, follows=r3.T2I_3D),
    reads_depth=True,
    score=Score("t2i_compbench_3d_score", "t2i_compbench_3d_score", "mean",
                "T2I-CompBench++ 3-D spatial score (mean over {n} images, 0-1; its UniDet_eval/3D_spatial_eval.py)",
                digits=4, unit="", prompt_metric="t2i_compbench_3d_prompt_score",
                prompt_words="T2I-CompBench++ 3-D prompt-level score (mean over {n} prompts of their images' mean)"))
"""T2I-CompBench++ 3-D: normalised disparity in each box, and its 3-D spatial score."""
