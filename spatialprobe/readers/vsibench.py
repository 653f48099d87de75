"""VSI-Bench's reader of a reply, as thinking-in-space scores one (quirks kept).

Source: vision-x-nyu/thinking-in-space @51e089c ``lmms_eval/tasks/vsibench/utils.py`` (Apache-2.0):
``fuzzy_matching`` (l. 81-82) keeps the reply's first space-separated token, trailing dots removed,
stripped - the reader of **both** answer types: "B. chair" reads ``B``, "The answer is B" reads
``The`` (wrong), "3.5 meters" reads ``3.5``, "two" reads no number. A multiple-choice reply is
right where that token equals the gold letter in any case (``exact_match``, l. 84-85); a numeric
one is ``float`` of it (``to_float``, l. 101-106; no number scores 0), scored by MRA
(:func:`spatialprobe.metrics.relative.mean_relative_accuracy`, l. 87-94).

As a registered reader (``vsibench``) a numeric item's reading is the token itself where
``float`` reads it (``3.50``, ``1e3``, ``nan``: the number their code scores), nothing where not.
"""

from __future__ import annotations

from spatialprobe.readers.base import Asked, Reader, Reading, letter
from spatialprobe.readers.numeric import first_token_number
from spatialprobe.registry import component

__all__ = ["VSIBENCH", "first_token", "first_token_number", "read", "read_vsibench"]


def first_token(reply: str | None) -> str:
    """``fuzzy_matching``: the reply's first space-separated token, trailing dots removed, stripped."""
    return str(reply or "").split(" ")[0].rstrip(".").strip()


def read_vsibench(reply: str | None) -> str:
    """The multiple-choice reading, upper-cased (``exact_match`` compares in any case): ``""`` where empty."""
    return first_token(reply).upper()


def read(reply: str, asked: Asked) -> Reading:
    """The first token: an option's letter in any case (a lettered item), or a number (a numeric one)."""
    token = first_token(reply)
    if not asked.options:
        if first_token_number(reply) is None:
            return Reading(None, f"the first token {token!r:.30} is no number (scores 0)")
        return Reading(token, "the first token, a number")
    if not token:
        return Reading(None, "an empty first token")
    found = next((c for c in asked.letters if token.lower() == c.lower()), None)
    if found is None:
        return Reading(token, "the first token, no option's letter")
    return letter(asked, found, "the first token, an option's letter in any case")


VSIBENCH = component("reader", "vsibench", "thinking-in-space's first token: a letter in any case, or a number")(
    Reader("vsibench", read, "vision-x-nyu/thinking-in-space @51e089c lmms_eval/tasks/vsibench/utils.py "
           "l. 81-85, 101-106", "the reply's first space-separated token, trailing dots removed: a letter "
           "in any case, or float() of it ('The answer is B' reads 'The')"))
