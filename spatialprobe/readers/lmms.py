"""lmms-eval's first-letter reader: CV-Bench's and EmbSpatial-Bench's tasks (and lmms-eval's BLINK).

Transcribed from ``_extract_answer_letter`` of EvolvingLMMs-Lab/lmms-eval @75571cf
``lmms_eval/tasks/cv_bench/utils.py`` l. 6-24 (``tasks/embspatial/utils.py`` l. 23-41 is the same
function, character for character): ``re.match`` at the start of the stripped reply of
``[\\(\\s]*([A-Z])[\\)\\.\\s]*``, case-insensitive, upper-cased. It is the reply's **first letter of
any word**: "The answer is B" reads ``T`` (no option: wrong), "answer: B" reads ``A``, "b" reads
``B``, "**B**" reads nothing (an asterisk is not skipped). ``cv_bench_process_results`` and
``embspatial_process_results`` then compare it with the gold letter.
"""

from __future__ import annotations

import re

from spatialprobe.readers.base import Asked, Reader, Reading, letter
from spatialprobe.registry import component

_FIRST = re.compile(r"[\(\s]*([A-Z])[\)\.\s]*", flags=re.IGNORECASE)


def first_letter(reply: str) -> str:
    """``_extract_answer_letter``: the first letter, upper-cased, or ``""``."""
    match = _FIRST.match(reply.strip())
    return match.group(1).upper() if match else ""


def read_first_letter(reply: str, asked: Asked) -> Reading:
    found = first_letter(reply)
    return letter(asked, found or None, "the reply's first letter" if found else "the reply starts with no letter")


FIRST_LETTER = component("reader", "lmms-first-letter",
                         "lmms-eval's _extract_answer_letter (CV-Bench, EmbSpatial)")(
    Reader("lmms-first-letter", read_first_letter,
           "EvolvingLMMs-Lab/lmms-eval @75571cf lmms_eval/tasks/cv_bench/utils.py l. 6-24",
           "the reply's first letter of any word, any case ('The answer is B' reads T)"))
