"""VLMEvalKit's ``can_infer``: how VLMEvalKit reads a multiple-choice reply (3DSRBench and any
VLMEvalKit-hosted set scored by ``ImageMCQDataset``), as plain functions.

Transcribed from open-compass/VLMEvalKit @e8e78f0 ``vlmeval/utils/matching_util.py``:
``can_infer_option`` (l. 18-61), ``can_infer_text`` (l. 107-121), ``can_infer`` (l. 124-127), as
``extract_answer_from_item`` (``vlmeval/dataset/utils/multiple_choice.py`` l. 359-405) calls it:

1. ``can_infer_option``: a reply holding "Failed to obtain answer via API" -> nothing; one of four
   refusal strings ("Cannot determine the answer", ...) -> ``Z`` (no option: wrong). The
   characters ``.()[],:;!*#{}`` become spaces and the reply is split on white space; where exactly
   one distinct option letter is among the words, it is read if its first occurrence is among the
   last four words ("B is correct because it is far away" -> not read here); where no letter but
   a lone ``Z`` is there -> ``Z``. Then "(correct) answer is X" (X in A-D, any case, asterisks
   around it allowed: PR #1552). The article "A" counts as a letter (VLMEvalKit's ``VERBOSE``
   switch, which would refuse it in replies of more than three words, is off by default and off here).
2. ``can_infer_text``: exactly one option's text occurs (lower-cased, as a substring: "upright"
   holds "right") in the lower-cased reply, skipped when the reply is longer than twice the
   options' texts together.

Nothing read: VLMEvalKit asks its judge LLM (gpt-4o-mini by default) and, after three failures,
draws a random letter; without a judge (``exact_matching``) the prediction is ``Z``, wrong. No
judge is run here: such a reply counts wrong, as under ``exact_matching``. Backticks are not
stripped ("`B`" reads nothing).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_VERBOSE_ANSWER = re.compile(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**")
_REFUSALS = ("Sorry, I can't help with images of people yet.", "I can't process this file.",
             "I'm sorry, but without the image provided", "Cannot determine the answer")
_PUNCTUATION = ".()[],:;!*#{}"


def can_infer_option(answer: str, choices: Mapping[str, str]) -> str | None:
    """The option letter (or ``Z``) ``can_infer_option`` reads, or None."""
    if "Failed to obtain answer via API" in answer:
        return None
    if any(refusal in answer for refusal in _REFUSALS):
        return "Z"
    text = answer
    for char in _PUNCTUATION:
        text = text.replace(char, " ")
    words = [w.strip() for w in text.split()]
    named = [c for c in choices if c in words]
    if len(named) == 1:
        if words.index(named[0]) > len(words) - 5:
            return named[0]
    elif not named and sum(c in words for c in ("Z", "")) == 1:
        return "Z"
    match = _VERBOSE_ANSWER.search(answer or "")
    if match and match.group(1).upper() in choices:
        return match.group(1).upper()
    return None


def can_infer_text(answer: str, choices: Mapping[str, str]) -> str | None:
    """The option whose text alone occurs in the reply (``can_infer_text``), or None."""
    answer = answer.lower()
    if len(answer) > 2 * sum(len(str(v)) for v in choices.values()):
        return None
    found = [k for k, v in choices.items() if str(v).lower() in answer]
    return found[0] if len(found) == 1 else None


def can_infer(answer: str, choices: Mapping[str, str]) -> str | None:
    """``can_infer``: a letter of ``choices`` (letter -> option text), ``Z``, or None (not read)."""
    answer = str(answer)
    return can_infer_option(answer, choices) or can_infer_text(answer, choices)
