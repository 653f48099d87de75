"""ViewSpatial-Bench: the authors' reply reader and accuracy, transcribed.

Source: ZJU-REAL/ViewSpatial-Bench @ 2e85a5e41a29e7919b1d326d8aba316661579983, ``evaluate.py``
(identical to ``../shared/data/viewspatial/evaluate.py``, Apache-2.0):

* ``extract_option`` — l. 125–127: ``re.search(r"\\b([A-D])\\b", text, re.IGNORECASE)``, the
  first match, upper-cased; ``None`` when nothing matches.
* ``evaluate_vlm`` — l. 316–365: the question is ``question + choices + prompt_format``
  (l. 336; ``prompt_format`` l. 36); the reply's **last line** (``predicted_answer.split("\\n")[-1]``,
  l. 343) is read with ``extract_option`` and compared with ``extract_option(answer)`` (l. 344);
  accuracy per ``question_type`` and overall (l. 356–361). An exception while asking or reading
  (l. 350–352) is printed and the item stays counted in its totals (l. 339–340 run first), so it
  counts wrong.

Quirks kept:

* case-insensitive whole-letter match: the article "a" reads as option A, "I'd" as D, and the
  first such letter wins ("a B" → A);
* only the last line is read: "B\\n" (a trailing newline) reads nothing;
* a reply of ``None`` (what a failed call leaves) raises in ``.split`` and counts wrong, as the
  try/except does.

lmms-eval carries the same reader (EvolvingLMMs-Lab/lmms-eval @ 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3,
``lmms_eval/tasks/viewspatial/utils.py`` ``extract_option`` and ``viewspatial_process_results``:
last line, same regex) on the re-host ``oscarqjh/ViewSpatial_lmmseval``, with another prompt
(``"Question: ...\\nChoices: ...\\nReply only to the corresponding option.\\nAnswer:"``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping

PROMPT_FORMAT = "\nReply only to the corresponding option.\nAnswer:"
"""``evaluate.py`` l. 36, appended to ``question + choices``."""

QUESTION_TYPES = (
    "Camera perspective - Relative Direction",
    "Camera perspective - Object View Orientation",
    "Person perspective - Object View Orientation",
    "Person perspective - Relative Direction",
    "Person perspective - Scene Simulation Relative Direction",
)


def extract_option(text: str) -> str | None:
    """``evaluate.py`` l. 125–127, verbatim."""
    match = re.search(r"\b([A-D])\b", text, re.IGNORECASE)
    return match.group(1).upper() if match else None


def build_question(item: Mapping[str, object]) -> str:
    """``evaluate.py`` l. 336: ``item["question"] + item["choices"] + prompt_format``."""
    return str(item["question"]) + str(item["choices"]) + PROMPT_FORMAT


def is_correct(reply: str | None, answer: str) -> bool:
    """``evaluate.py`` l. 343–344: the reply's last line against the gold ``"A. right"``.

    ``None`` (a failed call) raises in ``split`` there and is caught by l. 350: wrong.
    """
    if reply is None:
        return False
    predicted_answer_ = reply.split("\n")[-1]
    return extract_option(predicted_answer_) == extract_option(answer)


def evaluate(items: Iterable[Mapping[str, object]], replies: Iterable[str | None]) -> dict:
    """``evaluate.py`` ``evaluate_vlm`` l. 316–361 without the model and the CSV.

    Returns ``{"per_type": {type: {"correct", "total", "accuracy"}}, "correct", "total",
    "accuracy"}``; the types in first-seen order, as the ``defaultdict`` prints them.
    """
    stats: dict[str, dict[str, int]] = defaultdict(lambda: {"correct": 0, "total": 0})
    total_correct = 0
    total_questions = 0
    for item, reply in zip(items, replies, strict=True):
        question_type = str(item["question_type"])
        stats[question_type]["total"] += 1
        total_questions += 1
        if is_correct(reply, str(item["answer"])):
            stats[question_type]["correct"] += 1
            total_correct += 1
    per_type = {
        qtype: {"correct": v["correct"], "total": v["total"], "accuracy": v["correct"] / v["total"]}
        for qtype, v in stats.items()
    }
    return {
        "per_type": per_type,
        "correct": total_correct,
        "total": total_questions,
        "accuracy": total_correct / total_questions,
    }


question_text = build_question
"""The text sent (evaluate.py l. 336); the name the reader fidelity tests use."""


def read(reply: str) -> str | None:
    """The letter the verdict compares for a reply (its last line's ``extract_option``)."""
    return extract_option(reply.split("\n")[-1])
