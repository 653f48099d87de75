"""T2I-CompBench's 2-D spatial rule (Huang et al. 2023) and its image score.

``Karine-Huang/T2I-CompBench`` ``UniDet_eval/2D_spatial_eval.py``: ``determine_position`` scores
the relation of the two boxes (:func:`rules.t2i_compbench_judge`: the dominant axis and sign,
damped by IoU; ``beside`` is its "next to"), ``main`` makes each image's score from it and the
detector's confidences. The reference reads the detector's first box of each class
(``obj.index(obj1)``), the corrected rule the most confident one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spatialprobe.detectors import rules
from spatialprobe.detectors.base import Detection
from spatialprobe.detectors.rules_reference import first_of_class
from spatialprobe.judging.rulebook.record import JudgeRule, Mode, Score

T2I_COMPBENCH_FLOOR = 0.5
"""T2I-CompBench sets an image score below 0.5 to 0 (``if (score<0.5): score=0``)."""


def t2i_compbench_image_score(row: Mapping[str, Any], relation: str, **judge_args: float) -> float:
    """One image's score as T2I-CompBench's ``UniDet_eval/2D_spatial_eval.py`` (``main``) gives it:
    0.25 x the confidence of each of the two objects found, plus half the IoU-damped position
    score of the pair (:func:`rules.t2i_compbench_judge`, its ``determine_position``) when both are
    found; a total under 0.5 is set to 0. ``row`` holds the best box and score of each object."""
    score = 0.0
    if row["found_a"]:
        score += 0.25 * row["score_a"]
    if row["found_b"]:
        score += 0.25 * row["score_b"]
    if row["found_a"] and row["found_b"]:
        position, _ = rules.t2i_compbench_judge(row["box_a"], row["box_b"], relation, **judge_args)
        score += position / 2
    return 0.0 if score < T2I_COMPBENCH_FLOOR else score


def image_score(row: Mapping[str, Any], relation: str, args: Mapping[str, Any]) -> float:
    """:func:`t2i_compbench_image_score` with the rule's thresholds (``Score.of_row``)."""
    return t2i_compbench_image_score(row, relation, **args)


def first_listed(detections: Sequence[Detection], a: str, b: str) -> tuple[Detection | None, Detection | None]:
    """The detector's first box of each class, as ``obj.index(obj1)``."""
    return first_of_class(detections, a), first_of_class(detections, b)


T2I_COMPBENCH = JudgeRule(
    name="t2i-compbench", tasks=("posrel", "posrel2d"), corrected=Mode(rules.t2i_compbench_judge),
    reference=Mode(rules.t2i_compbench_judge, boxes=first_listed,
                   follows="Karine-Huang/T2I-CompBench UniDet_eval/2D_spatial_eval.py"),
    thresholds=("iou_threshold", "distance_threshold"),
    score=Score("t2i_compbench_score", "t2i_compbench_score", "mean",
                "T2I-CompBench 2-D spatial score (mean over {n} images, 0-1; its UniDet_eval/2D_spatial_eval.py)",
                digits=4, unit="", of_row=image_score,
                prompt_metric="t2i_compbench_prompt_score",
                prompt_words="T2I-CompBench prompt-level score (mean over {n} prompts of their images' mean)"))
"""T2I-CompBench 2-D: dominant-axis sign damped by IoU, and its spatial score."""
