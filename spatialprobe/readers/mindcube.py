"""MindCube's reader of a reply and its setting of an item, as the authors' evaluator has them.

Source: mll-lab-nu/MindCube @6d8fd9a (MIT) ``src/evaluation/core/extractors.py``:

* ``extract_answer`` (l. 15-93), a cascade of case-sensitive patterns, each taking its **last**
  match: ``X.`` anywhere (A-E) first - so "E.g. the answer is B" reads E -; then, after an
  ``<Answer>`` tag, five patterns; then eight patterns over the whole reply in priority order
  (``X. words``, ``X`` at a line start, ``*X*`` or ``"X"``, ``Answer: X``, ``answer is X``, ...);
  then the last line holding ``X. words``; then, from the bottom, the first line holding a whole
  capital A-E. Lower case is never read ("a" reads nothing).
* ``get_setting_from_id`` (l. 211-235): ``around``, ``rotation``, ``translation``, ``among`` by
  substring of the lower-cased id, in that order; else ``other``.

lmms-eval's ``mindcube`` task (EvolvingLMMs-Lab/lmms-eval @75571cf ``lmms_eval/tasks/mindcube/utils.py``)
carries ``extract_answer`` unchanged but strips the reply first and takes the setting from the
id's first ``_`` field (:func:`lmms_setting`).
"""

from __future__ import annotations

import re

from spatialprobe.readers.base import Reader, letter_reader
from spatialprobe.registry import component

_SIMPLE = re.compile(r"([A-E])\.")
_TAGGED = re.compile(r"<Answer>(.*?)(?:<|$)", re.DOTALL)
_AFTER_TAG = tuple(re.compile(p) for p in (
    r"[Mm]y answer is ([A-E])", r"[Mm]y answer is ([A-E])\.", r"[Tt]he answer is ([A-E])",
    r"(?:Answer: )?([A-E])\.", r"\b([A-E])\b"))
_PRIORITY = tuple(re.compile(p) for p in (
    r'(?:Answer: )?([A-E])\. [A-Za-z0-9 \-\(\)\'",]+(?=(?:\n|$|\.|"))',
    r'(?:Answer: )?([A-E])\. [A-Za-z0-9 \-\(\)\'"]+',
    r"(?:^|\n)(?:Answer: )?([A-E])(?:\.|$|\s)",
    r"[\*\"]([A-E])[\*\"]",
    r"\bAnswer:?\s*([A-E])\b",
    r"[Mm]y answer is ([A-E])",
    r"[Mm]y answer is ([A-E])\.",
    r"answer is ([A-E])"))
_LINE_DESCRIBED = re.compile(r'([A-E])\. [A-Za-z0-9 \-\(\)\'",]+')
_LINE_LETTER = re.compile(r"\b([A-E])\b")
SETTINGS = ("around", "rotation", "translation", "among")
"""The settings ``get_setting_from_id`` looks for, in its order (``other`` where none is found)."""
IN_OVERALL = {"around": True, "rotation": True, "translation": False, "among": True, "other": True}
"""``src/evaluation/core/base_metrics.py`` l. 37-43: translation is tracked, not in the overall."""


def _last(pattern: re.Pattern[str], text: str) -> str | None:
    matches = list(pattern.finditer(text))
    return matches[-1].group(1) if matches else None


def read_mindcube(reply: str | None) -> str | None:
    """The letter ``extract_answer`` reads from a reply (module docstring); None where none."""
    if not reply:
        return None
    found = _last(_SIMPLE, reply)
    if found:
        return found
    tagged = _TAGGED.search(reply)
    if tagged:
        for pattern in _AFTER_TAG:
            found = _last(pattern, tagged.group(1))
            if found:
                return found
    for pattern in _PRIORITY:
        found = _last(pattern, reply)
        if found:
            return found
    lines = reply.split("\n")
    described = [m.group(1) for m in (_LINE_DESCRIBED.search(line) for line in lines) if m]
    if described:
        return described[-1]
    for line in reversed(lines):
        match = _LINE_LETTER.search(line)
        if match:
            return match.group(1)
    return None


read = letter_reader(read_mindcube, "the last match of extract_answer's first pattern that matches",
                     "no capital A-E by any of extract_answer's patterns")
"""The authors' reading as a :class:`~spatialprobe.readers.base.Reading`."""


MINDCUBE = component("reader", "mindcube", "MindCube's extract_answer: a cascade of patterns, each its last match")(
    Reader("mindcube", read, "mll-lab-nu/MindCube @6d8fd9a src/evaluation/core/extractors.py l. 15-93",
           "a cascade of case-sensitive patterns, each its last match: 'X.' anywhere first ('E.g.' reads E)"))


def setting_of(item_id: str) -> str:
    """The authors' setting of an item id: the first of :data:`SETTINGS` in it (lower-cased), else ``other``."""
    lowered = item_id.lower()
    return next((s for s in SETTINGS if s in lowered), "other") if item_id else "other"


def lmms_setting(item_id: str) -> str:
    """lmms-eval's setting: the id's first ``_`` field (``aroundnew`` is ``around``); else ``other``."""
    first = item_id.split("_", 1)[0]
    return {"among": "among", "rotation": "rotation", "around": "around", "aroundnew": "around"}.get(first, "other")
