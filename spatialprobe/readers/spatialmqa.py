"""SpatialMQA's reply reader: the authors' lenient verdict, as their experiment scripts and
``calculate_xyz.py`` run it.

Transcribed from ziyan-xiaoyu/SpatialMQA @7b2f475 ``Code/experiment/spatial_test_llava.py``
l. 164-178 (the other open-model scripts alike): the model's text is stripped (empty becomes
``--``) and lower-cased; the reply is right where it is a substring of the gold answer **or** the
gold answer a substring of it ("b" is in "above": right; "it is left of the car" for "left of":
right). ``Code/eval/calculate_xyz.py`` then reads those stored verdicts: its on/above clause (any
output containing "on" or "above" right for the on/above items) edits records the file reloads
before it counts (l. 123; the write-back, l. 117-119, is commented out), so it changes no number
and is not applied here. ``Code/eval/calculate_prf1.py`` classes a wrong reply by the first of
the six relations that contains it (``output in "on/above"``, ...), which is the reading given here
(nothing where none does). The authors' prompt lists the options unlettered; where a reply to the
toolkit's lettered wording is exactly an option's letter (``B``), it stands for that option's
text.

``spatialmqa-legacy``: the retired ``spatialmqa`` kind's rule (:func:`spatialprobe.readers.option_parser.lenient_label`:
trailing period and quotes dropped, and the on/above clause applied), kept for its migrated runs.
"""

from __future__ import annotations

from spatialprobe.readers.base import Asked, Reader, Reading
from spatialprobe.readers.option_parser import SPATIALMQA_LABEL_ORDER, lenient_label
from spatialprobe.registry import component


def read_lenient(reply: str, asked: Asked) -> Reading:
    if reply.strip() in asked.letters:  # our lettered wording: the letter stands for its option's text
        reply = asked.options[asked.letters.index(reply.strip())]
    output = reply.strip() or "--"
    text, answer = output.lower(), asked.gold_text()
    if text in answer or answer in text:
        return Reading(asked.gold, "the reply and the gold answer: one is part of the other")
    classed = next((label for label in SPATIALMQA_LABEL_ORDER if text in label), None)
    return Reading(classed, "wrong: the first relation holding the reply" if classed else "wrong: no relation holds it")


def read_legacy(reply: str, asked: Asked) -> Reading:
    label = lenient_label(reply, asked.gold_text())
    return Reading(None if label == "--" else label, "the retired spatialmqa kind's lenient rule")


LENIENT = component("reader", "spatialmqa",
                    "SpatialMQA's lenient verdict as its scripts run (substring either way)")(
    Reader("spatialmqa", read_lenient,
           "ziyan-xiaoyu/SpatialMQA @7b2f475 Code/experiment/spatial_test_llava.py l. 164-178",
           "right where the lower-cased reply is part of the gold answer or holds it; else the first "
           "relation holding the reply"))
LEGACY = component("reader", "spatialmqa-legacy",
                   "the retired spatialmqa kind's lenient rule (on/above clause)")(
    Reader("spatialmqa-legacy", read_legacy, "spatialprobe.readers.option_parser (the retired spatialmqa kind)",
           "the retired kind's lenient rule: substring either way, and 'on'/'above' anywhere for on/above"))
