"""SpatialEval's reply reader: the authors' per-task extractors and their substring verdict.

Transcribed from jiayuww/SpatialEval @d82ba38 ``evals/evaluation.py`` (l. 16-298),
``extract_answer_from_text_{spatialmap,mazenav,spatialgrid}`` rule for rule, and
``evaluate_model_accuracy``'s verdict ``oracle_answer in str(extracted).lower()`` - a substring
test, so "none" (also what an unread reply becomes, ``str(None)``) counts for "no" and "90" for
"0" (SpatialEval PR #3). Spatial-Real has no extractor there (the authors judged it with GPT-4o,
issue #2): nothing is read. A ``ValueError`` of their extractor (an unsupported question id)
counts wrong, as their loop skips it. The model-specific branches (``claude``, ``geminiv``,
``gpt4o``) run with the item field ``reference_model`` (``--option reference_model=NAME``).
Where the model was scored rather than asked to reply, the best-scored option's text is read as
its reply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from spatialprobe.readers.base import Asked, Reader, Reading, best_scored
from spatialprobe.registry import component


def read_spatialeval(reply: str, asked: Asked) -> Reading:
    """The authors' verdict as a reading: the gold label where it is right, else what was extracted."""
    fields = asked.fields
    answer = str(fields["oracle_answer"])
    verdict = reference_prediction(reply, answer, str(fields["task"]), int(fields["question"]),
                                   str(fields.get("reference_model") or ""))
    if verdict == answer:
        return Reading(asked.gold, "the extracted answer holds the oracle answer")
    return Reading(None if verdict == "--" else verdict, "no extractor, or it raised" if verdict == "--"
                   else "the extracted answer does not hold the oracle answer")


def _scores(scores: Sequence[float], asked: Asked) -> Reading:
    chosen = best_scored(scores, asked)
    return read_spatialeval(asked.options[asked.labels.index(chosen.label)] if chosen.label else "", asked)


def reference_prediction(reply: str, gold: str, task: str, qid: int, model_name: str = "") -> str:
    """The authors' verdict as a label: ``gold`` where ``gold in str(extract(reply)).lower()``
    (evals/evaluation.py ``evaluate_model_accuracy``), else what was extracted (``--`` where their
    code raises ValueError or has no extractor)."""
    extract = {"spatialmap": extract_spatialmap, "mazenav": extract_mazenav,
               "spatialgrid": extract_spatialgrid}.get(task)
    if extract is None:
        return "--"
    try:
        found = str(extract(reply, qid, model_name)).lower()
    except (ValueError, KeyError):  # theirs skips a ValueError (counted wrong); a KeyError stops their script
        return "--"
    return gold if str(gold).lower() in found else found


# -- the authors' extractors (jiayuww/SpatialEval @d82ba38 evals/evaluation.py), rule for rule --
_NUMBERS = {"zero": 0, "no": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9}
_DIRS = ["southeast", "northeast", "northwest", "southwest"]
_DIR = rf"\b({'|'.join(_DIRS)})\b"


def _to_int(value: str) -> Any:
    try:
        return int(value)
    except ValueError:
        return value


def _earliest_number(text: str) -> int | None:
    found = [(m.start(), n) for word, n in _NUMBERS.items() for m in re.finditer(rf"\b{word}\b", text, re.IGNORECASE)]
    text = re.sub(r"^\n\n\d+\.\s", "", text)
    found += [(m.start(), int(m.group(0))) for m in re.finditer(r"\d+", text)]
    return sorted(found, key=lambda x: x[0])[0][1] if found else None


def extract_spatialmap(text: str, qid: int, model_name: str = "") -> Any:
    """``extract_answer_from_text_spatialmap``."""
    if qid == 0:
        match = re.search(r"\b[A-D]\.\s*(" + "|".join(_DIRS) + r")\b", text, re.IGNORECASE)
        if match:
            return match.group(1).lower()
        match = re.search(_DIR, text, re.IGNORECASE)
        return match.group(1) if match else None
    if qid == 1:
        return _spatialmap_object(text, model_name)
    if qid == 2:
        match = re.search(r"\b[A-D]\.\s*(\d+)", text)
        return _to_int(match.group(1)) if match else _earliest_number(text)
    raise ValueError(f"Question ID {qid} is not supported.")


def _spatialmap_object(text: str, model_name: str) -> Any:
    word = r"[\w\s\'’]"
    located = r"(?:located\s+|in\s+the\s+|located\s+to\s+the\s+)"
    match = re.search(rf"^({word}+?)\s+is\s+{located}({_DIR})", text, re.IGNORECASE)
    if match:
        return match.group(1)
    match = re.search(r"\b[A-D]\.\s*(.*)", text)
    if match:
        return match.group(1).replace("**", "").replace(".", "").split(" is", 1)[0].strip()
    match = re.search(r"\b([ABCD][.,]|[(][abcdABCD][)])\s*(.*?)(?=\sis\b|\.|,|<|$)", text)
    if match:
        return re.sub(r"[\.,\?!<]+$", "", match.group(1).strip())
    match = re.search(rf"Therefore, the object in the {_DIR} of {word}+ is ({word}+)", text, re.IGNORECASE)
    if match:
        return match.group(2)
    name = model_name.lower()
    within = r"(?:located\s+|in\s+the\s+|in\s+|located\s+to\s+the\s+)"
    if "claude" in name:
        match = re.search(rf"^({word}+?)\s+is\s+(to\s+the\s+)({_DIR})", text, re.IGNORECASE)
        if match:
            return match.group(1)
    if "geminiv" in name:
        for pattern in (rf"\*\*Concise Answer:\*\*\n({word}+?)\s+is\s+{within}({_DIR})",
                        rf"\*\*Answer:\*\*\s+({word}+?)\s+is\s+in\s+the\s+({_DIR})\s+of\s+({word}+)",
                        rf"\*\*Answer:\*\*\n({word}+)", rf"\*\*Answer\*\*:\s+({word}+)",
                        rf"\*\*Answer:\*\*\s+({word}+)"):
            match = re.search(pattern, text, re.IGNORECASE)
            if match:
                return match.group(1)
    if "gpt4o" in name:
        match = re.search(rf"Concise Answer:\s+({word}+?)\s+is\s+{within}({_DIR})", text, re.IGNORECASE)
        if match:
            return match.group(1)
    match = re.search(r"\bis\b\s+(.*?)(?=\.|,|<|$)", text)
    return re.sub(r"[\.,\?!<]+$", "", match.group(1).strip()) if match else None


_TURNS = {
    0: [r"\bThere are\s*(\d+)\s*right turns\b", r"\bThere is\s*(\d+)\s*right turn\b", r"\b(\d+)\s+right turn(s)?",
        r"answer is\s+(\d+)", r"answer is:\s*\n*\s*(\d+)", r"from S to E is\s+(\d+)", r"Answer:\*\*\s*(\d+)\b"],
    1: [r"\bThere are\s*(\d+)\s*total turns\b", r"\bThere are\s*(\d+)\s*turns\b", r"There is\s*(\d+)\s*turn\b",
        r"There is\s*(\d+)\s*total turn\b", r"answer is\s+(\d+)", r"answer is:\s*\n*\s*(\d+)",
        r"from S to E is\s+(\d+)",
        r"\btotal of\s+(\d+)\s+turn(s)?", r"Answer:\*\*\s*(\d+)\b", r"(\d+)\s+total turn(s)?", r"\b(\d+)\s+turn(s)?"]}


def extract_mazenav(text: str, qid: int, model_name: str = "") -> Any:
    """``extract_answer_from_text_mazenav``: a word number in the mapping's order first (not the
    earliest in the text), then the question's patterns, then the first digits."""
    if qid == 2:
        for pattern in (r"\byes\b", r"the answer is yes", r"\"yes\"", r"\'yes\'", r"is the shortest path"):
            if re.search(pattern, text, re.IGNORECASE):
                return "Yes"
        for pattern in (r"\bno\b", r"the answer is no", r"\"no\"", r"\'no\'", r"\bnot\b"):
            if re.search(pattern, text, re.IGNORECASE):
                return "No"
        return None
    for word, n in _NUMBERS.items():
        if re.search(rf"\b{word}\b", text, re.IGNORECASE):
            return n
    for pattern in _TURNS[qid]:  # a question id other than 0-2 raises KeyError there too
        match = re.search(pattern, text, re.IGNORECASE)
        if match:
            return int(match.group(1))
    match = re.search(r"\d+", text)
    return int(match.group(0)) if match else None


def extract_spatialgrid(text: str, qid: int, model_name: str = "") -> Any:
    """``extract_answer_from_text_spatialgrid``."""
    if qid >= 1:
        match = re.search(r"\b(giraffe|cat|dog|elephant|rabbit)\b", text, re.IGNORECASE)
        return match.group(1) if match else None
    if "claude" in model_name.lower():
        match = None
        for pattern in (r"\bthere are\s*(\d+)\s*blocks\b", r"\bthere appear to be\s*(\d+)\s*blocks\b",
                        r"\bcontains\s*(\d+)\s*blocks\b"):
            match = re.search(pattern, text, re.IGNORECASE)
        if match:  # the authors test only the last pattern's match (their indentation)
            return int(match.group(1))
    return _earliest_number(text)


SPATIALEVAL = component("reader", "spatialeval",
                        "SpatialEval's extractors and substring verdict")(
    Reader("spatialeval", read_spatialeval, "jiayuww/SpatialEval @d82ba38 evals/evaluation.py l. 16-298",
           "the task's extractor (directions, names, numbers, yes/no), right where the oracle answer is "
           "a substring of what it extracted", _scores))
