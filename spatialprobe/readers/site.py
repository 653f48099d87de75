"""SITE's reply reader, as its eval scripts read a reply (quirks included).

Transcribed from ``parse_multi_choice_response`` and ``spatial_process_results`` of
wenqi-wang20/SITE-Bench @36295bb ``eval_scripts/sitebench/utils.py`` l. 40-85, 143-168 (lmms-eval
@75571cf ``lmms_eval/tasks/sitebench/utils.py`` l. 51-96 carries the same parser). The reply is
stripped and padded with a space on each side; then, for the item's letters A, B, ... in order:

1. every ``(X)`` in the reply; if none,
2. every `` X `` (a capital standing alone anywhere: "I think it is B" -> B, "A cat is ..." -> A);
   if none,
3. every ``X.`` (even inside a word: "the USA." -> A); if none,
4. every ``X:``, ``:X`` or ``: X``.

One candidate is the answer; of several, the one whose `` X `` occurs last ("B or C" -> C) - where
they were found by ``(X)``/``X.``/``X:`` every such position is -1 and the first in letter order wins
("(B) or (C)" -> B). A lower-case letter is never read.

Where no candidate is found the authors draw a letter with ``random.choice`` (unseeded); here the
draw is seeded by the item's key (``random.Random("site|KEY")``), so a run is reproducible and the
expected score of the draws is theirs (one in k).
"""

from __future__ import annotations

import random

from spatialprobe.readers.base import Asked, Reader, Reading, letter
from spatialprobe.registry import component


def candidates(response: str, choices: tuple[str, ...]) -> tuple[list[str], str]:
    """The letters found by the first of the four patterns that finds any, and which it was."""
    patterns = (("(X)", lambda c: f"({c})" in response),
                (" X ", lambda c: f" {c} " in response),
                ("X.", lambda c: f"{c}." in response),
                ("X:", lambda c: f"{c}:" in response or f":{c}" in response or f": {c}" in response))
    for name, found in patterns:
        letters = [c for c in choices if found(c)]
        if letters:
            return letters, name
    return [], ""


def read_site(reply: str, asked: Asked) -> Reading:
    """SITE's reading of a reply (module docstring)."""
    response = " " + reply.strip() + " "
    found, pattern = candidates(response, asked.letters)
    if not found:
        drawn = random.Random(f"site|{asked.key}").choice(asked.letters)
        return letter(asked, drawn, "no letter found: a random letter, drawn as the authors do (seeded by the item)")
    if len(found) == 1:
        return letter(asked, found[0], f"one letter by the {pattern!r} pattern")
    starts = [response.rfind(f" {c} ") for c in found]
    why = f"{len(found)} letters by {pattern!r}: the last standing alone"
    return letter(asked, found[starts.index(max(starts))], why)


SITE = component("reader", "site",
                 "SITE's parse_multi_choice_response: (X), a lone capital, X., X:; else a seeded draw")(
    Reader("site", read_site, "wenqi-wang20/SITE-Bench @36295bb eval_scripts/sitebench/utils.py l. 40-85",
           "(X), then a lone capital anywhere, then X., then X:; several: the last lone one; none: a seeded "
           "random letter",
           unread="never: a random letter is drawn (seeded by the item here)"))
