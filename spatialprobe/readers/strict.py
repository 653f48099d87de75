"""The toolkit's own readers: ``strict`` (every benchmark's second reading) and ``toolkit``.

``strict`` reads a reply only where the reply **is** an answer, nothing more (the plain reader
of ``tests/official/README.md``): the reply, stripped of white space, is exactly an option's
letter (upper case: ``B``) or exactly an option's text in any case (``right``, ``Right``); anything
else (``(B)``, ``B.``, ``b``, ``The answer is B``, ``B or C``, a sentence naming an option) reads
nothing and counts wrong. An item without options (a numeric answer) is read where the stripped
reply is exactly a number (``3``, ``-2.5``, ``.5``, ``1e3``: the reply itself is the reading; no
unit, no words - a benchmark whose gold carries a unit reads it in the gold's unit), or, for a gold
that is no number (an open-ended word), exactly the gold's text in any case. It never guesses, so
the number it gives is a floor that no phrasing can raise, and every reply an official reader
reads otherwise is counted as a disagreement.

``toolkit`` is the engine's documented parser (:func:`spatialprobe.readers.option_parser.parse_answer`:
an option letter in the usual forms, ``Answer: B``, an option's text as whole words, yes/no
words; an item without options: :func:`spatialprobe.readers.numeric.read_number`, lengths in
meters), the official reader of a benchmark whose authors publish no reply reader of their own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from spatialprobe.readers.base import Asked, Reader, Reading, option
from spatialprobe.readers.numeric import LENGTH_METERS, read_number
from spatialprobe.readers.option_parser import parse_answer
from spatialprobe.registry import component

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
"""A number as ``strict`` reads one: the whole stripped reply."""


def strict_label(reply: str | None, options: Sequence[str], labels: Sequence[str], gold: str = "") -> str | None:
    """The label the reply names strictly (module docstring), or None."""
    text = (reply or "").strip()
    if not options:
        if NUMBER.fullmatch(text):
            return text
        return gold if text and not NUMBER.fullmatch(gold.strip()) and text.lower() == gold.lower() else None
    letters = [chr(65 + n) for n in range(len(options))]
    if text in letters:
        return labels[letters.index(text)]
    return next((label for option, label in zip(options, labels, strict=True) if text.lower() == option.lower()),
                None)


def read_strict(reply: str, asked: Asked) -> Reading:
    """The ``strict`` reading of a reply (module docstring)."""
    label = strict_label(reply, asked.options, asked.labels, asked.gold)
    if label is None:
        what = "a number" if not asked.options else "an option's letter or text"
        return Reading(None, f"the reply is not exactly {what}")
    return Reading(label, "the reply is exactly " + ("a number" if not asked.options else "an option's letter or text"))


def read_toolkit(reply: str, asked: Asked) -> Reading:
    """The engine's parser's reading (:func:`~spatialprobe.readers.option_parser.parse_answer`), or
    the number read where the item has no options."""
    if not asked.options:
        number = read_number(reply, LENGTH_METERS)
        return Reading(None if number.value is None else repr(number.value), number.reason or f"{number.rule} rule")
    parsed = parse_answer(reply, asked.options)
    if parsed.index is None:
        return Reading(None, "no option letter, option text or yes/no word")
    return option(asked, parsed.index, f"{parsed.rule} rule")


STRICT = component("reader", "strict",
                   "the reply is exactly an option's letter or text (or a number); else nothing")(
    Reader("strict", read_strict, "spatialprobe.readers.strict",
           "the reply is exactly an option's letter (B) or its text (any case), or exactly a number; else nothing"))
TOOLKIT = component("reader", "toolkit",
                    "the engine's parser: letter forms, 'Answer: B', option text, yes/no; numbers")(
    Reader("toolkit", read_toolkit, "spatialprobe.readers.option_parser",
           "the engine's parser: an option letter, 'Answer: B', an option's text as whole words, yes/no; "
           "numbers (lengths in meters)"))
