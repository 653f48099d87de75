"""GenEval's position rule (Ghosh et al. 2023) and its position-prompt accuracy.

``djghosh13/geneval`` ``evaluation/evaluate_images.py``: per class the boxes sorted by confidence
with ``np.argsort(...)[::-1]`` (exact ties: the last box first), kept above ``THRESHOLD``; a
position prompt is correct when both classes have a box and the expected relation is in
``relative_position`` of A's top box to B's (:func:`rules.geneval_relations`: centre offsets
shrunk by ``margin`` of the summed box sizes). It is GenEval's code in both modes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spatialprobe.detectors import rules
from spatialprobe.judging.rulebook.record import JudgeRule, Mode, Score, best_last

GENEVAL_CONFIDENCE = 0.3
"""GenEval's default confidence cut (``THRESHOLD = float(args.options.get('threshold', 0.3))``):
only boxes scoring strictly above it count. ``--rule-arg confidence_threshold=...`` changes it."""


def geneval_position_correct(row: Mapping[str, Any], relation: str,
                             confidence_threshold: float = GENEVAL_CONFIDENCE, margin: float = 0.1) -> bool:
    """GenEval's correctness of a position prompt (``evaluation/evaluate_images.py``,
    ``evaluate_image`` and ``evaluate``): the top box of each object must score strictly above
    the confidence cut, and the relation must be in ``relative_position`` of A's top box to B's
    (:func:`rules.geneval_relations`, position threshold ``margin``). ``beside``, which GenEval
    has no prompt for, holds as ``left of`` or ``right of``; ``inside`` never does."""
    for found, score in ((row["found_a"], row["score_a"]), (row["found_b"], row["score_b"])):
        if not found or score <= confidence_threshold:
            return False
    holds, _ = rules.geneval_judge(row["box_a"], row["box_b"], relation, margin=margin)
    return holds == 1.0


def _correct(row: Mapping[str, Any], relation: str, args: Mapping[str, Any]) -> bool:
    return geneval_position_correct(row, relation, float(args.get("confidence_threshold", GENEVAL_CONFIDENCE)),
                                    float(args.get("margin", 0.1)))


EVALUATE_IMAGES = Mode(rules.geneval_judge, boxes=best_last,
                       follows="djghosh13/geneval evaluation/evaluate_images.py")
GENEVAL = JudgeRule(
    name="geneval", tasks=("posrel", "posrel2d"), corrected=EVALUATE_IMAGES, reference=EVALUATE_IMAGES,
    thresholds=("margin",),
    score=Score("geneval_position_accuracy", "geneval_correct", "share",
                "GenEval position accuracy (correct images of {n}; its evaluation/evaluate_images.py)",
                of_row=_correct, cuts={"confidence_threshold": GENEVAL_CONFIDENCE},
                prompt_metric="geneval_prompt_accuracy",
                prompt_words="GenEval prompt-level accuracy (prompts with a correct image, of {n}; its "
                             "evaluation/summary_scores.py)"))
"""GenEval: its relative-position test on the top box of each object, and its position accuracy."""
