"""VLMEvalKit's readers of a reply to a lettered multiple-choice item, as plain functions
``(reply, choices) -> letter or None``: what VLMEvalKit itself reads from a prediction it has not
scored, so that an import of its unscored prediction files gives the number its evaluation gives.

Source: open-compass/VLMEvalKit @e8e78f0

* :func:`can_infer` - ``vlmeval/utils/matching_util.py`` ``can_infer_option`` (l. 18-61),
  ``can_infer_text`` (l. 107-121), ``can_infer`` (l. 124-127): punctuation ``.()[],:;!*#{}``
  becomes spaces and the reply is split on whitespace; exactly one distinct option letter among
  the words, read only where it is among the last four; else "(correct) answer is **X**" (X in
  A-D); else exactly one option's text as a lower-cased substring of a reply at most twice the
  options' total length. A refusal ("Cannot determine the answer", ...) or a lone "Z" is ``Z``
  (VLMEvalKit's "none of the options": wrong for every gold letter). ``ImageMCQDataset`` reads
  every prediction with it (``prefetch_answer``); with no judge (``exact_matching``) a reply it
  cannot read becomes ``Z``. The environment's ``VERBOSE`` is read as VLMEvalKit reads it (set,
  the article "A" in a reply of more than three words is no letter).
* :func:`can_match_option` - ``vlmeval/dataset/utils/spatial_bench/matching_func.py`` (l. 6-25,
  39-203), which its spatial suite (:data:`MATCH_OPTION_DATASETS`: MMSI-Bench, SITE, ViewSpatial,
  EmbSpatial, ...) reads with instead (``cal_scores.py`` ``compute_mcq_score``, l. 77-92): an
  ``<answer>`` block, a letter before ``</answer>``/``</think>``, the last six lines from the bottom,
  "answer is X", then one distinct lone capital A-F in the whole text; option texts never.
  :func:`match_option_hit` is that function's verdict (both sides read, compared lower-cased).

Tested equal to the cited transcriptions in ``tests/official/`` on thousands of random replies.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

__all__ = ["MATCH_OPTION_DATASETS", "can_infer", "can_match_option", "match_option_hit", "reads_with"]

MATCH_OPTION_DATASETS = frozenset({
    "MMSIBench_wo_circular", "SiteBenchImage", "ViewSpatialBench", "EmbSpatialBench", "ERIQ", "ERQA",
    "MindCubeBench_tiny_raw_qa", "MindCubeBench_raw_qa", "SparBench", "SparBench_tiny", "DSRBench",
    "MMSIVideoBench", "SiteBenchVideo", "STI-Bench"})
"""VLMEvalKit datasets scored by ``build_mcq_score_fn`` (``can_match_option``) at @e8e78f0, whose
every row is a multiple-choice question (``grep build_mcq_score_fn vlmeval/dataset``; the
mixed MCQ/number sets VSI-Bench and StareBench are left out: their numbers are read otherwise)."""

_VERBOSE_ANSWER = re.compile(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**")
_REFUSALS = ("Sorry, I can't help with images of people yet.", "I can't process this file.",
             "I'm sorry, but without the image provided", "Cannot determine the answer")
_PUNCTUATION = str.maketrans(dict.fromkeys(".()[],:;!*#{}", " "))


def reads_with(dataset: str) -> str:
    """The reader VLMEvalKit scores ``dataset``'s predictions with: ``can_match_option`` or ``can_infer``."""
    return "can_match_option" if dataset in MATCH_OPTION_DATASETS else "can_infer"


def _option_letter(reply: str, letters: Mapping[str, str]) -> str | None:
    if "Failed to obtain answer via API" in reply:
        return None
    if any(refusal in reply for refusal in _REFUSALS):
        return "Z"
    words = reply.translate(_PUNCTUATION).split()
    found = [letter for letter in letters if letter in words]
    if len(found) == 1:
        if "A" in words and len(words) > 3 and os.environ.get("VERBOSE"):
            return None  # "A might be a quantifier" (VLMEvalKit reads the variable as set or not)
        letter = next(c for c in letters if c in words)
        if words.index(letter) > len(words) - 5:
            return letter
    elif not found and sum(1 for w in ("Z", "") if w in words) == 1:
        return "Z"
    match = _VERBOSE_ANSWER.search(reply)
    if match and match.group(1).upper() in letters:
        return match.group(1).upper()
    return None


def _option_text(reply: str, letters: Mapping[str, str]) -> str | None:
    reply = reply.lower()
    if len(reply) > 2 * sum(len(str(v)) for v in letters.values()):
        return None
    found = [letter for letter, text in letters.items() if str(text).lower() in reply]
    return found[0] if len(found) == 1 else None


def can_infer(reply: object, choices: Mapping[str, object]) -> str | None:
    """VLMEvalKit's ``can_infer``: the option letter (or ``Z``) a reply names; None where it names
    none (VLMEvalKit then asks its judge, or, with none, scores it ``Z``). ``choices``: letter ->
    option text, the row's non-empty columns ``A``, ``B``, ... in order."""
    text = str(reply)
    letters = {str(k): str(v) for k, v in choices.items()}
    return _option_letter(text, letters) or _option_text(text, letters)


_ZERO_WIDTH = re.compile(r"[\u200b\u200c\u200d\ufeff]")
_ANSWER_BLOCK = re.compile(r"<\s*answer\b[^>]*>\s*([A-Ja-j])(?:\s*[\.．:：\)\]】、])?.*?<\s*/\s*answer\s*>",
                           flags=re.IGNORECASE | re.DOTALL)
_OPEN, _CLOSE = r"[\(\[\{（【]?\s*", r"\s*[\)\]\}）】]?\s*"
_OPTION_LINE = re.compile(r"^(?:[*_>\-\s]*)(?:option|选项)\s+[A-J]\s*[:：]", re.IGNORECASE)
_ONE_LETTER_LINE = re.compile(r"^\s*[*_`>（）\[\]【】\(\)]*\s*([A-Fa-f])\s*[*_`（）\[\]【】\(\)]*\s*$")
_LABELLED_LINE = re.compile(r"^\s*([A-F])\s*[\.．:：\)\]】、-]\s+", re.IGNORECASE)
_TIGHT = r"\.,:;!?\)\]】》」』，。；、：）】》」』"
_INLINE = re.compile(rf"(?<![A-Za-z])[*_`（\[\{{\(]*\s*([A-F])\s*[*_`）\]\}})]*(?=$|[\s{_TIGHT}])")
_THINK_END, _THINK_START = re.compile(r"</\s*think\s*>", re.IGNORECASE), re.compile(r"<\s*think\s*>", re.IGNORECASE)


def _from_lines(lines: list[str]) -> str | None:
    """The bottom-most of the last lines that names one letter (VLMEvalKit's ``_pick_from_lines``)."""
    for line in reversed([ln.strip() for ln in lines if ln.strip()]):
        if _OPTION_LINE.search(line):
            continue
        match = _ONE_LETTER_LINE.fullmatch(line) or _LABELLED_LINE.match(line)
        if match:
            return match.group(1).upper()
        tokens = {t.upper() for t in _INLINE.findall(line)}
        if len(tokens) == 1:
            return tokens.pop()
    return None


def _tail(text: str) -> str:
    """The text after the last ``</think>`` (else after the last ``<think>``), else all of it."""
    for pattern in (_THINK_END, _THINK_START):
        marks = list(pattern.finditer(text))
        if marks:
            return text[marks[-1].end():].strip()
    return text


def can_match_option(reply: object, choices: Iterable[object] | None = None, tail_lines: int = 6, tail_window: int = 800
                     ) -> str | None:
    """VLMEvalKit's ``can_match_option``: the option letter a reply names, or None. ``choices`` (as
    VLMEvalKit's rule path, which never passes them: None) narrows the letters A-F to theirs."""
    if not isinstance(reply, str):
        return None
    text = _ZERO_WIDTH.sub("", reply.strip())
    given = "".join(sorted({str(c).strip().upper()[:1] for c in choices if str(c)})) if choices else ""
    letters = "".join(ch for ch in "ABCDEFGHIJ" if ch in given) or "ABCDEF"
    block = _ANSWER_BLOCK.search(text)
    if block:
        return block.group(1).upper()
    window = text[-tail_window:]
    for tag in ("answer", "think"):
        anchor = re.search(rf"(?<![A-Za-z]){_OPEN}([{letters}]){_CLOSE}</\s*{tag}\s*>", window, re.IGNORECASE)
        if anchor:
            return anchor.group(1).upper()
    pick = _from_lines(_tail(text).splitlines()[-tail_lines:]) or _from_lines(window.splitlines()[-tail_lines:])
    if pick:
        return pick
    phrase = re.search(rf"(?i)(?:final\s*answer|the\s*answer\s*is|answer(?:\s*is)?|correct\s*answer|"
                       rf"答案|最终答案|结论|所以|因此|我选(?:择)?|选择|选)\s*[:：>＝=]?\s*[\(\[\{{（【]?\s*"
                       rf"([{letters}])\s*[\)\]\}}）】]?(?:\b|[.)、。])", text)
    if phrase:
        return phrase.group(1).upper()
    kept = "\n".join(ln for ln in text.splitlines() if not _OPTION_LINE.search(ln))
    tokens = set(re.findall(rf"(?<![A-Za-z])[\(\[\{{（【]?\s*([{letters}])\s*[\)\]\}}）】]?(?![A-Za-z])", kept))
    return tokens.pop() if len(tokens) == 1 else None


def match_option_hit(reply: object, answer: object) -> bool:
    """VLMEvalKit's rule verdict for its spatial suite (``compute_mcq_score``): the reply and the
    gold answer both read with :func:`can_match_option` and compared lower-cased, an unread side
    as the text ``False`` (so two unread sides agree, as theirs do)."""
    pred, gold = can_match_option(str(reply)), can_match_option(str(answer).strip())
    return str(pred if pred else False).strip().lower() == str(gold if gold else False).strip().lower()
