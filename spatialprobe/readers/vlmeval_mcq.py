"""VLMEvalKit's two multiple-choice readers as registered readers (the functions: :mod:`.vlmeval`).

* ``vlmeval-can-infer`` - ``can_infer``, as ``ImageMCQDataset`` reads a prediction (3DSRBench and
  VLMEvalKit's other MCQ sets): its judge LLM is not run, so a reply it cannot read counts wrong,
  as under ``--judge exact_matching``; a refusal or a lone ``Z`` reads ``Z`` (wrong).
* ``vlmeval-can-match-option`` - ``can_match_option``, as its spatial suite reads a prediction
  (MMSI-Bench, SITE, ViewSpatial, EmbSpatial as VLMEvalKit hosts them): rule-based only; an
  unread reply is wrong. Called without ``choices``, as VLMEvalKit's rule path calls it.
"""

from __future__ import annotations

from spatialprobe.readers.base import Asked, Reader, Reading, letter
from spatialprobe.readers.vlmeval import can_infer, can_match_option
from spatialprobe.registry import component


def read_can_infer(reply: str, asked: Asked) -> Reading:
    found = can_infer(reply, dict(zip(asked.letters, asked.options, strict=True)))
    if found is None:
        return Reading(None, "can_infer reads no option: VLMEvalKit's judge LLM (not run) - counted wrong")
    if found == "Z":
        return Reading("Z", "a refusal or a lone Z: VLMEvalKit's 'Z', wrong")
    return letter(asked, found, "can_infer")


def read_can_match_option(reply: str, asked: Asked) -> Reading:
    found = can_match_option(reply)
    return letter(asked, found, "can_match_option") if found else Reading(None, "can_match_option reads no letter")


CAN_INFER = component("reader", "vlmeval-can-infer",
                      "VLMEvalKit's can_infer (3DSRBench, VLMEvalKit MCQ sets)")(
    Reader("vlmeval-can-infer", read_can_infer,
           "open-compass/VLMEvalKit @e8e78f0 vlmeval/utils/matching_util.py l. 18-127",
           "one option letter among the last four words, 'answer is X', else one option's text as a "
           "substring; else VLMEvalKit's judge (not run: wrong)",
           unread="VLMEvalKit's judge LLM, then a random letter (not run here): counted wrong, as "
           "under --judge exact_matching"))
CAN_MATCH_OPTION = component("reader", "vlmeval-can-match-option",
                             "VLMEvalKit's can_match_option (its spatial suite: MMSI-Bench, SITE, ViewSpatial, "
                             "EmbSpatial)")(
    Reader("vlmeval-can-match-option", read_can_match_option,
           "open-compass/VLMEvalKit @e8e78f0 vlmeval/dataset/utils/spatial_bench/matching_func.py "
           "l. 6-25, 39-203",
           "<answer> tags, the last lines' one letter, 'answer is X', else one lone capital A-F "
           "in the text; option text never"))
