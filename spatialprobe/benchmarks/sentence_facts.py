"""The spatial fact a sentence states, read where it is unambiguous: What'sUp's captions ("A mug
on a table", "A photo of a dog to the left of a cat") and EmbSpatial's answer sentences ("The lamp
is above the bed"). ``spatialprobe report --by fact`` joins runs on these facts
(:mod:`spatialprobe.reports.facts` normalises the relation's wording and direction).

A sentence states a fact where exactly one relation phrase of :data:`RELATIONS` stands between
two object phrases: "A photo of", a leading article and a copula ("is", "are") are dropped, the
longest phrase wins where several start at one word ("on top of" over "on"). Anything else - two
relation phrases, no object on one side, or an object that is a side of the picture ("on the
left") - states none.
"""

from __future__ import annotations

RELATIONS = ("to the left of", "to the right of", "on the left of", "on the right of", "in front of",
             "on top of", "next to", "left of", "right of", "behind", "above", "below", "under", "underneath",
             "beneath", "beside", "near", "on")
"""The relation phrases a sentence may state, as they are written (the report merges wordings)."""
SIDES = frozenset({"left", "right", "top", "bottom", "middle", "center", "centre"})
"""Words that name a part of the picture, not an object."""
ARTICLES = ("a", "an", "the")


def stated_fact(sentence: str) -> tuple[str, str, str] | None:
    """(subject, relation, object) of a sentence stating one spatial relation between two objects,
    lower-cased without articles; None where it does not state exactly one (module docstring)."""
    words = sentence.strip().rstrip(".").lower().split()
    if words[:3] == ["a", "photo", "of"]:
        words = words[3:]
    found = _phrases(words)
    if len(found) != 1:
        return None
    start, phrase = found[0]
    subject = _object(words[:start], copula=True)
    obj = _object(words[start + len(phrase.split()):])
    if not subject or not obj or obj in SIDES or subject in SIDES:
        return None
    return subject, phrase, obj


def _phrases(words: list[str]) -> list[tuple[int, str]]:
    """(word index, phrase) of every relation phrase in ``words``, the longest at each start, none
    inside another."""
    found: list[tuple[int, str]] = []
    end = 0
    for start in range(len(words)):
        if start < end:
            continue
        phrase = next((p for p in sorted(RELATIONS, key=len, reverse=True)
                       if words[start:start + len(p.split())] == p.split()), None)
        if phrase is not None:
            found.append((start, phrase))
            end = start + len(phrase.split())
    return found


def _object(words: list[str], copula: bool = False) -> str:
    """An object phrase without its leading article (and, for the subject, a trailing is/are)."""
    if copula and words and words[-1] in ("is", "are"):
        words = words[:-1]
    if words and words[0] in ARTICLES:
        words = words[1:]
    return " ".join(words)
