"""SpatialScore's readers of a reply, one per answer type, and its verdict, as its scripts have them.

Source: haoningwu3639/SpatialScore @1995c4f (MIT), the published **version_0** evaluation:
``utils/util.py`` ``extract_number`` (l. 117-177), ``extract_yes_no`` (l. 180-222),
``extract_option`` (l. 225-278), ``extract_numeric_with_unit`` (l. 281-386) and
``version_0/test_qwen.py`` ``main`` l. 166-218 (the verdict by ``question_type``):

* ``multi-choice``: :func:`extract_option` of reply and gold compared upper-cased. It reads a
  bare letter, ``ASSISTANT: (x)``, a ``<conclusion>``, ``answer``/``option`` + letter, a letter
  alone in brackets or words - any case, so the article "a" is option A -, and at last **the
  first letter a-f anywhere** ("The answer is B" reads ``E``, from "The");
* ``judgment``: :func:`extract_yes_no` of both compared lower-cased ("right", "correct" are yes;
  "not", "wrong" are no; yes words win);
* ``open-ended``: where a unit word (:data:`UNIT_WORDS`) is a **substring** of the lower-cased gold
  (any gold holding an "m"), right when reply and gold agree within a factor of 2 after their
  units are turned into centimetres (:func:`unit_ratio_correct`); else for ``RealWorldQA`` exact
  lower-cased equality; else ``float(extract_number(...))`` of both (an unreadable reply is 0),
  scored by MRA for ``VSI-Bench_8`` (a reply of 0 scores 1 only for a gold of 0) and by exact
  float equality for the rest.

The scripts generate greedily and draw no random letter. A gold their code cannot read as a
number (an open-ended gold with neither a number nor a unit) raises there; here it is refused by
the loader, naming the record.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from spatialprobe.readers.base import Asked, Reader, Reading
from spatialprobe.registry import component

_TAGS = re.compile(r"</?(?:CONCLUSION|conclusion|ANSWER|answer|ASSISTANT|assistant)>")
_ASSISTANT = re.compile(r"ASSISTANT:\s*\(?([A-Fa-f])\)?")
_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
            "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
_WORDS = {**{w: str(n) for n, w in enumerate(_NUMBERS)}, **{w: str(n) for n, w in enumerate(_ORDINALS, 1)}}
"""``util.py`` l. 136-143, in its order (the numbers, then the ordinals)."""
_YES = tuple(re.compile(p) for p in (r"\byes\b", r"\byeah\b", r"\byep\b", r"\bcorrect\b", r"\btrue\b", r"\bright\b",
                                     r"\bagreed?\b"))
_NO = tuple(re.compile(p) for p in (r"\bno\b", r"\bnope\b", r"\bnot\b", r"\bfalse\b", r"\bwrong\b", r"\bincorrect\b",
                                    r"\bdisagreed?\b"))
_CONCLUDED = (re.compile(r"<conclusion>\s*\(([A-Fa-f])\).*?</conclusion>", re.IGNORECASE),
              re.compile(r"<conclusion>\s*\(?([A-Fa-f])\)?\.?\s*</conclusion>", re.IGNORECASE))
_OPTION = tuple(re.compile(p) for p in (r"(?i)(?:answer|option)[:\s]*\(?([A-Fa-f])\)?\.?",
                                        r"(?i)(?:^|\s)\(?([A-Fa-f])\)\.?(?:$|\s|\.)",
                                        r"(?i)(?:^|\s)([A-Fa-f])\.?(?:$|\s|\.|,)",
                                        r"(?i)(?:^|\s)([A-Fa-f])\.(?:$|\s)"))
UNIT_WORDS = ("meter", "meters", "m", "cm", "centimeter", "centimeters", "km", "kilometer", "kilometers",
              "inch", "inches", "ft", "foot", "feet")
"""``test_qwen.py`` l. 184: tested as **substrings** of the lower-cased gold."""
CENTIMETRES = {"m": 100, "meter": 100, "meters": 100, "metre": 100, "metres": 100, "cm": 1, "centimeter": 1,
               "centimeters": 1, "mm": 0.1, "ft": 30.48, "foot": 30.48, "feet": 30.48, "in": 2.54, "inch": 2.54,
               "inches": 2.54}
"""``util.py`` l. 362-366 (any other unit, ``km`` too, multiplies by 1)."""


def extract_option(text: str) -> str:
    """The option letter ``extract_option`` reads (upper case), or the cleaned reply where it reads none."""
    text = text.strip()
    if re.match(r"^[A-Fa-f]\.?$", text):
        return text[0].upper()
    for pattern in (_ASSISTANT, *_CONCLUDED, *_OPTION):
        match = pattern.search(text)
        if match:
            return match.group(1).upper()
    anywhere = re.search(r"[A-Fa-f]", text)
    return anywhere.group(0).upper() if anywhere else _TAGS.sub("", text).strip()


def extract_yes_no(text: str) -> str:
    """``Yes``/``No`` (or a letter after ``ASSISTANT:``) as ``extract_yes_no`` reads; else the cleaned reply."""
    text = text.strip()
    if text.lower() in ("yes", "no"):
        return text.capitalize()
    match = _ASSISTANT.search(text)
    if match:
        return match.group(1).upper()
    clean = _TAGS.sub("", text).strip()
    concluded = re.search(r"<conclusion>\s*(yes|no)\s*</conclusion>", text, re.IGNORECASE)
    if concluded:
        return concluded.group(1).capitalize()
    lowered = clean.lower()
    for patterns, word in ((_YES, "Yes"), (_NO, "No")):
        if any(p.search(lowered) for p in patterns):
            return word
    return clean


def extract_number(text: str) -> str:
    """The number ``extract_number`` reads, as text (digits, number or ordinal words); else the cleaned reply."""
    text = text.strip()
    if text.isdigit():
        return text
    match = _ASSISTANT.search(text)
    if match:
        return match.group(1).upper()
    clean = _TAGS.sub("", text).strip()
    lowered = clean.lower()
    concluded = re.search(r"<conclusion>\s*(\d+)\s*</conclusion>", text, re.IGNORECASE)
    if concluded:
        return concluded.group(1)
    digits = re.search(r"\d+(?:\.\d+)?", lowered)
    if digits:
        return digits.group(0)
    for word, digit in _WORDS.items():
        if lowered.startswith(word) or lowered.endswith(f" {word}") or any(
                f"{lead}{word}{tail}" in lowered for lead, tail in ((" ", " "), ("there are ", ""),
                                                                   ("there is ", ""), ("shows ", ""))):
            return digit
    split = lowered.split()
    return next((digit for word, digit in _WORDS.items() if word in split), clean)


_VALUE = (r"\\scalar\{([^}]+)\}", r"\*\*([\d.]+)\s*(?:[a-zA-Z]+)\*\*",
          r"(?:approximately|about|roughly)\s*\**([\d.]+)\s*(?:[a-zA-Z]+)\**", r"(\d+\.?\d*)\s*(?:[a-zA-Z]+)")
_UNIT = (r"\\distance_unit\{([^}]+)\}", r"\*\*\d+\.?\d*\s*([a-zA-Z]+)\*\*",
         r"(?:approximately|about|roughly)\s*\**\d+\.?\d*\s*([a-zA-Z]+)\**", r"\d+\.?\d*\s*([a-zA-Z]+)")


def value_and_unit(pred: str) -> tuple[float | None, str | None]:
    """The value and the unit ``extract_numeric_with_unit`` reads from a reply (each None where none)."""
    text, unit = value_text_and_unit(pred)
    return (None if text is None else float(text)), unit


def value_text_and_unit(pred: str) -> tuple[str | None, str | None]:
    """:func:`value_and_unit` with the value as the digits read (``float`` of them is the value)."""
    pred = _TAGS.sub("", pred).strip()
    value_match = next((m for m in (re.search(p, pred, re.IGNORECASE if "approx" in p else 0) for p in _VALUE) if m),
                       None)
    unit_match = next((m for m in (re.search(p, pred, re.IGNORECASE if "approx" in p else 0) for p in _UNIT) if m),
                      None)
    numbers = re.findall(r"\d+\.?\d*", value_match.group(1)) if value_match else []
    return (numbers[0] if numbers else None), unit_match.group(1).lower().strip() if unit_match else None


def ratio_correct(value: float, unit: str, gold: str, tolerance: float = 2.0) -> bool:
    """The verdict of ``extract_numeric_with_unit`` on a value and unit read: the gold's first
    ``number unit``, both in centimetres, ``max(ratio, 1 / ratio) < tolerance``; a 0 on either side
    is right only for both 0."""
    gold_match = re.search(r"(\d+\.?\d*)\s*([a-zA-Z]+)", gold)
    if not gold_match:
        return False
    gold_value, gold_unit = float(gold_match.group(1)), gold_match.group(2).lower().strip()
    if value == 0 or gold_value == 0:
        return value == 0 and gold_value == 0
    ours, theirs = value * CENTIMETRES.get(unit, 1), gold_value * CENTIMETRES.get(gold_unit, 1)
    return max(ours / theirs, theirs / ours) < tolerance


def unit_ratio_correct(pred: str, gold: str, tolerance: float = 2.0) -> bool:
    """``extract_numeric_with_unit(pred, gold)["is_correct"]`` (:func:`ratio_correct` of what it reads)."""
    value, unit = value_and_unit(pred)
    return value is not None and unit is not None and ratio_correct(value, unit, gold, tolerance)


def gold_unit(gold: str) -> str | None:
    """The unit of the gold's first ``number unit`` (what :func:`ratio_correct` converts it by)."""
    match = re.search(r"(\d+\.?\d*)\s*([a-zA-Z]+)", gold)
    return match.group(2).lower().strip() if match else None


def vsi_mra(pred: float, gold: float) -> float:
    """``mean_relative_accuracy(pred, gold, .5, .95, .05)`` of ``util.py`` l. 389-400 (ten
    thresholds, as VSI-Bench's); a zero gold is an infinite relative error (0) there."""
    error = abs(pred - gold) / gold if gold != 0 else float("inf")
    return float((error <= 1 - np.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2))).mean())


def is_numeric_with_unit(gold: str) -> bool:
    """Whether the scripts score a gold by :func:`unit_ratio_correct` (a unit word is a substring of it)."""
    return any(unit in gold.lower() for unit in UNIT_WORDS)


def reading_of(item: Mapping[str, object], reply: str) -> tuple[str | None, str]:
    """The value the scripts compare for ``item`` (``question_type``, ``answer``, ``source``), as a
    label, and why: the option letter (``extract_option``, upper-cased), ``Yes``/``No`` or another
    word (``extract_yes_no``), ``"VALUE UNIT"`` (``extract_numeric_with_unit``: the value's digits, a
    space, the unit read - nothing where either is missing), the reply itself (RealWorldQA's
    open-ended words) or the number ``extract_number`` reads (``"0"`` where ``float`` fails: theirs)."""
    kind = str(item.get("question_type", "")).lower()
    gold = str(item.get("answer", ""))
    if kind == "multi-choice":
        return extract_option(reply).upper(), "extract_option"
    if kind == "judgment":
        found = extract_yes_no(reply)
        return {"yes": "Yes", "no": "No"}.get(found.lower(), found), "extract_yes_no"
    if is_numeric_with_unit(gold):
        text, unit = value_text_and_unit(reply)
        if text is None or unit is None:
            return None, "extract_numeric_with_unit: no " + ("value" if text is None else "unit") + " (wrong)"
        return f"{text} {unit}", "extract_numeric_with_unit"
    if item.get("source") == "RealWorldQA":
        return reply or None, "the reply itself (RealWorldQA: exact match in any case)"
    found = extract_number(reply)
    try:
        float(found)
    except ValueError:
        return "0", "extract_number reads no number: 0, as their code scores it"
    return found, "extract_number"


def score_of(item: Mapping[str, object], label: str | None) -> float:
    """The scripts' score (0 or 1; MRA in [0, 1] for ``VSI-Bench_8``'s numbers) of a reading:
    :func:`reading_of`'s, or a bare number (``strict``'s reading of a numeric item, in the gold's
    unit where the gold has one) - as ``main`` scores the reply it was read from."""
    if label is None:
        return 0.0
    kind = str(item.get("question_type", "")).lower()
    gold = str(item.get("answer", ""))
    if kind == "multi-choice":
        return float(label.upper() == extract_option(gold).upper())
    if kind == "judgment":
        return float(label.lower() == extract_yes_no(gold).lower())
    if is_numeric_with_unit(gold):
        value, unit = number_and_unit(label, gold)
        return float(value is not None and ratio_correct(value, unit, gold))
    if item.get("source") == "RealWorldQA":
        return float(label.lower() == gold.lower())
    pred = float(label)
    target = float(extract_number(gold))  # raises for an unreadable gold, as theirs does
    if item.get("source") == "VSI-Bench_8":
        return (1.0 if target == 0.0 else 0.0) if pred == 0 else vsi_mra(pred, target)
    return float(pred == target)


def number_and_unit(label: str, gold: str) -> tuple[float | None, str]:
    """A unit item's reading as (value, unit): ``"VALUE UNIT"``, or a bare number in the gold's unit."""
    text, space, unit = label.partition(" ")
    try:
        return float(text), (unit if space else gold_unit(gold) or "")
    except ValueError:
        return None, ""


def spatialscore_score(item: Mapping[str, object], reply: str) -> float:
    """One reply's score, as ``main`` scores it (:func:`score_of` of :func:`reading_of`)."""
    return score_of(item, reading_of(item, reply)[0])


def read(reply: str, asked: Asked) -> Reading:
    """The scripts' reading of a reply (stripped, as their ``generate_response`` returns it) by
    the item's question type (:func:`reading_of`); an option's letter is that option."""
    label, why = reading_of(asked.fields, reply.strip())
    return Reading(label or None, why)  # a multiple-choice item's labels are its letters


SPATIALSCORE = component("reader", "spatialscore", "SpatialScore version_0's extractors by question type")(
    Reader("spatialscore", read, "haoningwu3639/SpatialScore @1995c4f utils/util.py l. 117-386, "
           "version_0/test_qwen.py l. 166-218",
           "by question type: extract_option (any case, at last the first a-f anywhere), extract_yes_no, "
           "a number with its unit (within 2x), the number read (0 where none)"))
