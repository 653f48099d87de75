"""VLMEvalKit's ``can_infer`` as a registered reader (the functions: :mod:`.vlmeval`)."""

from __future__ import annotations

from spatialprobe.readers.base import Asked, Reader, Reading, letter
from spatialprobe.readers.vlmeval import can_infer


def read_can_infer(reply: str, asked: Asked) -> Reading:
    found = can_infer(reply, dict(zip(asked.letters, asked.options, strict=True)))
    if found is None:
        return Reading(None, "can_infer reads no option: VLMEvalKit's judge LLM (not run) - counted wrong")
    if found == "Z":
        return Reading("Z", "a refusal or a lone Z: VLMEvalKit's 'Z', wrong")
    return letter(asked, found, "can_infer")


CAN_INFER = Reader("vlmeval-can-infer", read_can_infer,
                   "open-compass/VLMEvalKit @e8e78f0 vlmeval/utils/matching_util.py l. 18-127",
                   "one option letter among the last four words, 'answer is X', else one option's text as a "
                   "substring; else VLMEvalKit's judge (not run: wrong)",
                   unread="VLMEvalKit's judge LLM, then a random letter (not run here): counted wrong, as "
                          "under --judge exact_matching")
