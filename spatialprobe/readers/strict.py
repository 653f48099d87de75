"""The toolkit's own readers: ``strict`` (every benchmark's second reading) and ``toolkit``.

``strict`` reads a reply only where the reply **is** an answer, nothing more: after stripping
white space, surrounding ``*``, ``_``, backticks and quotes, and one final period, the reply is

1. an option's letter, upper case, bare or in brackets (``B``, ``(B)``, ``[B]``, ``B)``, ``B.``); or
2. an option's text, in any case, white space runs counted as one (``left of``, ``Left of.``);

anything else (``The answer is B``, ``b``, ``B or C``, a sentence naming an option) reads nothing
and counts wrong. It never guesses, so the number it gives is a floor that no phrasing can raise,
and every reply an official reader reads otherwise is counted as a disagreement.

``toolkit`` is the engine's documented parser (:func:`spatialprobe.readers.parse.parse_answer`:
an option letter in the usual forms, ``Answer: B``, an option's text as whole words, yes/no
words), the official reader of a benchmark whose authors publish no reply reader of their own.
"""

from __future__ import annotations

import re

from spatialprobe.readers.base import Asked, Reader, Reading, option
from spatialprobe.readers.parse import parse_answer

_WRAP = "*_`\"' \t\r\n"
_LETTER = re.compile(r"\(([A-Z])\)|\[([A-Z])\]|([A-Z])\)?")


def _bare(reply: str) -> str:
    text = reply.strip(_WRAP)
    return (text[:-1] if text.endswith(".") else text).strip(_WRAP)


def _words(text: str) -> str:
    return " ".join(text.split()).casefold()


def read_strict(reply: str, asked: Asked) -> Reading:
    """The ``strict`` reading of a reply (module docstring)."""
    text = _bare(reply)
    match = _LETTER.fullmatch(text)
    named = next((g for g in match.groups() if g), None) if match else None
    if named in asked.letters:
        return option(asked, asked.letters.index(named), "the reply is an option's letter")
    wanted = _words(text)
    found = [i for i, o in enumerate(asked.options) if wanted and _words(o) == wanted]
    if found:
        return option(asked, found[0], "the reply is an option's text")
    return Reading(None, "the reply is no option's letter or text")


def read_toolkit(reply: str, asked: Asked) -> Reading:
    """The engine's parser's reading (:func:`~spatialprobe.readers.parse.parse_answer`)."""
    parsed = parse_answer(reply, asked.options)
    if parsed.index is None:
        return Reading(None, "no option letter, option text or yes/no word")
    return option(asked, parsed.index, f"{parsed.rule} rule")


STRICT = Reader("strict", read_strict, "spatialprobe.readers.strict",
                "the reply is exactly an option's letter (B, (B), B.) or its text (any case); else nothing")
TOOLKIT = Reader("toolkit", read_toolkit, "spatialprobe.readers.parse",
                 "the engine's parser: an option letter, 'Answer: B', an option's text as whole words, yes/no")
