"""ViewSpatial-Bench: the authors' ``extract_option`` on the reply's last line.

Source: ZJU-REAL/ViewSpatial-Bench @2e85a5e ``evaluate.py`` (read from the unchanged copy in
``../shared/data/viewspatial/evaluate.py``): ``prompt_format`` (l. 37), ``extract_option``
(l. 125-127) and ``evaluate_vlm`` (l. 316-365). lmms-eval's ``viewspatial`` task carries the same
``extract_option`` (``lmms_eval/tasks/viewspatial/utils.py`` @75571cf l. 74-76).

The question asked: ``item["question"] + item["choices"] + "\\nReply only to the corresponding
option.\\nAnswer:"`` (no separator between question and choices, as theirs). The verdict:
``extract_option(reply.split("\\n")[-1]) == extract_option(item["answer"])`` with the gold like
"A. right". Quirks kept:
- only the reply's last line is read ("B\\n" -> the empty last line -> nothing -> wrong);
- the first of A-D standing alone as a word, any case: the article "a" reads as option A ("a cat
  on the left" -> A), "The answer is B" -> B but "It is a B" -> A, "d)" -> D;
- an exception in an item (any) skips it after it was counted in the totals: counted wrong.
"""

from __future__ import annotations

import re

PROMPT_FORMAT = "\nReply only to the corresponding option.\nAnswer:"
"""evaluate.py l. 37."""


def extract_option(text):
    """Transcribed from ``extract_option`` (evaluate.py l. 125-127): the letter or ``None``."""
    match = re.search(r"\b([A-D])\b", text, re.IGNORECASE)
    return match.group(1).upper() if match else None


def question_text(item):
    """The text sent (evaluate.py l. 336)."""
    return item["question"] + item["choices"] + PROMPT_FORMAT


def is_correct(reply, correct_answer):
    """One item of ``evaluate_vlm`` (l. 342-344)."""
    predicted_answer_ = reply.split("\n")[-1]
    return extract_option(predicted_answer_) == extract_option(correct_answer)


def read(reply):
    """The letter the verdict compares for a reply (its last line's ``extract_option``)."""
    return extract_option(reply.split("\n")[-1])
