"""The toolkit's own readers: ``strict`` (every benchmark's second reading) and ``toolkit``.

``strict`` reads a reply only where the reply **is** an answer, nothing more
(:func:`spatialprobe.readers.strict_reply.read_strict`, the plain reader of
``tests/official/README.md``): the reply, stripped of white space, is exactly an option's letter
(upper case: ``B``) or exactly an option's text in any case (``right``, ``Right``); anything else
(``(B)``, ``B.``, ``b``, ``The answer is B``, ``B or C``, a sentence naming an option) reads nothing
and counts wrong. It never guesses, so the number it gives is a floor that no phrasing can raise,
and every reply an official reader reads otherwise is counted as a disagreement.

``toolkit`` is the engine's documented parser (:func:`spatialprobe.readers.parse.parse_answer`:
an option letter in the usual forms, ``Answer: B``, an option's text as whole words, yes/no
words), the official reader of a benchmark whose authors publish no reply reader of their own.
"""

from __future__ import annotations

from spatialprobe.readers import strict_reply
from spatialprobe.readers.base import Asked, Reader, Reading, option
from spatialprobe.readers.parse import parse_answer
from spatialprobe.registry import component


def read_strict(reply: str, asked: Asked) -> Reading:
    """The ``strict`` reading of a reply (module docstring)."""
    label = strict_reply.read_strict(reply, asked.options, asked.labels)
    if label is None:
        return Reading(None, "the reply is no option's letter or text")
    return Reading(label, "the reply is an option's letter or text")


def read_toolkit(reply: str, asked: Asked) -> Reading:
    """The engine's parser's reading (:func:`~spatialprobe.readers.parse.parse_answer`)."""
    parsed = parse_answer(reply, asked.options)
    if parsed.index is None:
        return Reading(None, "no option letter, option text or yes/no word")
    return option(asked, parsed.index, f"{parsed.rule} rule")


STRICT = component("reader", "strict",
                   "the reply is exactly an option's letter or text; else nothing")(
    Reader("strict", read_strict, "spatialprobe.readers.strict",
           "the reply is exactly an option's letter (B) or its text (any case); else nothing"))
TOOLKIT = component("reader", "toolkit",
                    "the engine's parser: letter forms, 'Answer: B', option text, yes/no")(
    Reader("toolkit", read_toolkit, "spatialprobe.readers.parse",
           "the engine's parser: an option letter, 'Answer: B', an option's text as whole words, yes/no"))
