"""Generated text -> one of the options, or a parse failure: the ``generate`` protocol's one parser.

:func:`parse_answer` tries these rules in order and returns the first that applies, with its name:

1. ``letter`` - the options are lettered A, B, C, ... in their order, and the reply is a letter:
   the whole reply (``B``, ``(B)``, ``B.``, ``B)``, ``[B]``), a reply that starts with one and goes
   on (``(B) left of``, ``B. left of``, ``B) left of``), or a letter after ``answer``/``option``/
   ``choice`` (``Answer: B``, ``The answer is (B)``, ``Option B``). A bare letter is upper case (so
   the article in ``A cat ...`` is no answer); in brackets either case.
2. ``text`` - an option's text occurs in the reply, case- and whitespace-insensitively, as whole
   words (``left of`` is not found in ``cleft offer``): the first occurrence in the reply wins, and
   where options start at the same place the longest (``on top of`` over ``on``).
3. ``yes/no`` - the options include a yes option (``yes``, ``true``, ``correct``) or a no option
   (``no``, ``false``, ``incorrect``), and the reply's first such word (as a whole word, so
   ``incorrect`` is not ``correct``) says which.
4. ``lenient`` - the benchmark's own rule where it has one, given as ``lenient(reply, options)``:
   SpatialMQA's is :func:`spatialmqa_option` (below, with the benchmark's gold-based grading).
5. else ``failure``: no option. The parse-failure rate (:func:`failure_rate`) is a reported metric.

SpatialMQA's lenient matching (the benchmark's code, reproduced so that numbers compare with
published ones): the reply is lower-cased, stripped, a trailing period and quotes removed (empty
becomes ``--``); it is correct if it is a substring of the gold answer or the gold answer a
substring of it, and for ``on/above`` also whenever it contains ``on`` or ``above`` as plain
substrings (so ``in front of`` counts too: the benchmark's quirk).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

YES_WORDS = ("yes", "true", "correct")
NO_WORDS = ("no", "false", "incorrect")
RULES = ("letter", "text", "yes/no", "lenient", "failure")

Lenient = Callable[[str, Sequence[str]], "str | None"]


@dataclass(frozen=True)
class Parsed:
    """The option a reply names (``None``: a parse failure), its index and the rule that decided."""

    option: str | None
    index: int | None
    rule: str

    @property
    def failed(self) -> bool:
        return self.option is None


_BRACKETED = r"[\(\[]([A-Za-z])[\)\]]"
_LETTER_WHOLE = re.compile(rf"^(?:{_BRACKETED}|([A-Z])[\.\):]?)$")
_LETTER_LEAD = re.compile(rf"^(?:{_BRACKETED}|([A-Z])[\.\):])\s")
_LETTER_AFTER = re.compile(rf"\b(?:answer|option|choice)(?:\s+is)?\s*:?\s*(?:{_BRACKETED}|([A-Z])\b)",
                           re.IGNORECASE)


def _letter(reply: str, options: Sequence[str]) -> int | None:
    for pattern in (_LETTER_WHOLE, _LETTER_LEAD):
        match = pattern.search(reply)
        if match:
            break
    else:
        match = _LETTER_AFTER.search(reply)
        if match and match.group(2) and not match.group(2).isupper():
            match = None  # "the answer is a cat": an article, not option A
    if not match:
        return None
    index = ord((match.group(1) or match.group(2)).upper()) - ord("A")
    return index if 0 <= index < len(options) else None


def _whole_words(text: str) -> str:
    """A regex for ``text`` as whole words, any run of whitespace matching any other."""
    return r"(?<!\w)" + r"\s+".join(re.escape(part) for part in text.split()) + r"(?!\w)"


def _text(reply: str, options: Sequence[str]) -> int | None:
    """The option found first in ``reply``; the longest where several start at that place."""
    order = sorted((i for i, o in enumerate(options) if o.strip()), key=lambda i: -len(options[i].strip()))
    if not order:
        return None
    match = re.search("|".join(f"({_whole_words(options[i])})" for i in order), reply, re.IGNORECASE)
    return None if match is None else order[match.lastindex - 1]  # type: ignore[operator]


def _yes_no(reply: str, options: Sequence[str]) -> int | None:
    lowered = [o.strip().lower() for o in options]
    where = {True: next((i for i, o in enumerate(lowered) if o in YES_WORDS), None),
             False: next((i for i, o in enumerate(lowered) if o in NO_WORDS), None)}
    if where[True] is None and where[False] is None:
        return None
    match = re.search("|".join(_whole_words(w) for w in YES_WORDS + NO_WORDS), reply, re.IGNORECASE)
    return None if match is None else where[match.group(0).lower() in YES_WORDS]


def parse_answer(reply: str, options: Sequence[str], lenient: Lenient | None = None) -> Parsed:
    """The option ``reply`` names, by the first rule of the module's list that applies."""
    text = reply.strip().strip("*_`\"' ").strip()
    for rule, find in (("letter", _letter), ("text", _text), ("yes/no", _yes_no)):
        index = find(text, options)
        if index is not None:
            return Parsed(options[index], index, rule)
    if lenient is not None:
        option = lenient(reply, options)
        if option is not None:
            return Parsed(option, list(options).index(option), "lenient")
    return Parsed(None, None, "failure")


def failure_rate(parsed: Sequence[Parsed]) -> float | None:
    """The share of replies that named no option, in percent (None for no replies)."""
    return round(100 * sum(p.failed for p in parsed) / len(parsed), 2) if parsed else None


# ---- SpatialMQA's lenient rule (the benchmark's code) ----------------------------------------
SPATIALMQA_LABEL_ORDER = ("on/above", "below", "left of", "right of", "in front of", "behind")


def normalize(output: str) -> str:
    """Lower-cased, stripped, a trailing period and quotes removed; ``--`` when nothing is left."""
    text = output.strip().lower().rstrip(".").strip().strip("\"'").strip()
    return text or "--"


def strict_label(output: str, options: Sequence[str]) -> str:
    """The option the normalised output equals, else ``--``."""
    text = normalize(output)
    return next((o for o in options if o.lower() == text), "--")


def lenient_correct(output: str, answer: str) -> bool:
    """SpatialMQA's lenient grading of ``output`` against the gold ``answer``."""
    text, gold = normalize(output), answer.lower()
    if text in gold or gold in text:
        return True
    return gold == "on/above" and ("on" in text or "above" in text)


def lenient_label(output: str, answer: str) -> str:
    """The gold answer when leniently correct, else the first relation containing the output."""
    if lenient_correct(output, answer):
        return answer
    text = normalize(output)
    return next((label for label in SPATIALMQA_LABEL_ORDER if text in label), "--")


def spatialmqa_option(output: str, options: Sequence[str]) -> str | None:
    """The benchmark's rule without the gold answer: the first option that is leniently correct
    if it were gold (``lenient_correct(output, option)``), else None."""
    return next((o for o in options if normalize(output) != "--" and lenient_correct(output, o)), None)
