"""VSI-Bench's reader of a reply, as thinking-in-space scores one (quirks kept).

Source: vision-x-nyu/thinking-in-space @51e089c ``lmms_eval/tasks/vsibench/utils.py`` (Apache-2.0):
``fuzzy_matching`` (l. 81-82) keeps the reply's first space-separated token, trailing dots removed,
stripped - the reader of **both** answer types: "B. chair" reads ``B``, "The answer is B" reads
``The`` (wrong), "3.5 meters" reads ``3.5``, "two" reads no number. A multiple-choice reply is
right where that token equals the gold letter in any case (``exact_match``, l. 84-85); a numeric
one is ``float`` of it (``to_float``, l. 101-106; no number scores 0), scored by MRA
(:func:`spatialprobe.metrics.relative.mean_relative_accuracy`, l. 87-94).
"""

from __future__ import annotations

from spatialprobe.readers.numeric import first_token_number

__all__ = ["first_token", "first_token_number", "read_vsibench"]


def first_token(reply: str | None) -> str:
    """``fuzzy_matching``: the reply's first space-separated token, trailing dots removed, stripped."""
    return str(reply or "").split(" ")[0].rstrip(".").strip()


def read_vsibench(reply: str | None) -> str:
    """The multiple-choice reading, upper-cased (``exact_match`` compares in any case): ``""`` where empty."""
    return first_token(reply).upper()
