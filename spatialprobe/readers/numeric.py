"""A reply read as a number: digits, number words and, where the benchmark allows, a unit.

:func:`read_number` is the strict reader of numeric answers; it returns a :class:`NumberRead`
(the value, the rule that read it, the span read, the unit, and - when nothing reads - the
reason). It reads:

* **digits**: ``3``, ``-2``, ``3.5``, ``.5``, ``1,250`` (thousands separators), ``2.5e3``, a
  fraction ``3/4``;
* **number words**: ``zero`` to ``nineteen``, the tens, ``hundred``, ``thousand``, ``million``,
  joined by spaces, hyphens or ``and`` (``three hundred and twenty-one`` is 321; ``a dozen``
  is not read);
* **a unit** right after the number, only where the benchmark gives its units (a mapping of unit
  -> factor to the benchmark's base unit, :data:`LENGTH_METERS`, :data:`AREA_SQUARE_METERS`):
  ``180 cm`` is 1.8 under :data:`LENGTH_METERS`. Without units, or after a word that is no unit
  given, the number is read as it stands (``3 chairs`` is 3).

Which number, where a reply holds several: the first one after an answer cue (``answer is``,
``answer:``, ``approximately``, ``about``, ``≈``), else the first in the reply - what
lmms-eval's ``extract_number`` reads, except that a cue lets a reasoning reply put its answer
last. Nothing read gives ``value`` None and a ``reason`` (an empty reply, no number in it).

:func:`first_token_number` is thinking-in-space's own reader (the reply's first space-separated
token, trailing dots removed, then ``float``), for a benchmark whose official reader it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

WORD_VALUES: Mapping[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
SCALES: Mapping[str, int] = {"hundred": 100, "thousand": 1000, "million": 1_000_000}

LENGTH_METERS: Mapping[str, float] = {
    "m": 1.0, "meter": 1.0, "meters": 1.0, "metre": 1.0, "metres": 1.0, "cm": 0.01, "centimeter": 0.01,
    "centimeters": 0.01, "centimetre": 0.01, "centimetres": 0.01, "mm": 0.001, "millimeter": 0.001,
    "millimeters": 0.001, "km": 1000.0, "kilometer": 1000.0, "kilometers": 1000.0, "ft": 0.3048,
    "foot": 0.3048, "feet": 0.3048, "inch": 0.0254, "inches": 0.0254, "yd": 0.9144,
    "yard": 0.9144, "yards": 0.9144,
}  # fmt: skip
"""Lengths in meters (VSI-Bench's distances and sizes are in meters). ``in`` is left out: ``3 in
the room`` would read as inches."""
AREA_SQUARE_METERS: Mapping[str, float] = {
    "square meters": 1.0, "square meter": 1.0, "square metres": 1.0, "sq m": 1.0, "m2": 1.0, "m²": 1.0,
    "sqm": 1.0, "square feet": 0.09290304, "square foot": 0.09290304, "sq ft": 0.09290304, "ft2": 0.09290304,
    "ft²": 0.09290304,
}  # fmt: skip
"""Areas in square meters (VSI-Bench's room sizes)."""

_DIGITS = r"(?<![\w.])[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?(?:/\d+)?"
_NUMBER = re.compile(_DIGITS)
_WORD = re.compile(r"[a-z]+")
_CUE = re.compile(r"(?:answer\s*(?:is|:|=)|approximately|about|roughly|around|≈|=)\s*", re.IGNORECASE)


@dataclass(frozen=True)
class NumberRead:
    """What :func:`read_number` read from a reply."""

    value: float | None
    """The number, in the benchmark's base unit where a unit was read; None: nothing read."""
    rule: str
    """``digits``, ``words``, ``digits+unit``, ``words+unit``, or ``none``."""
    text: str = ""
    """The span of the reply read (the number and its unit)."""
    unit: str | None = None
    """The unit read after the number (one of the benchmark's), or None."""
    reason: str | None = None
    """Why nothing was read (``value`` None), in words; None where a number was read."""


def read_number(reply: str | None, units: Mapping[str, float] | None = None) -> NumberRead:
    """The number a reply gives (see the module): the first after an answer cue, else the first."""
    text = (reply or "").strip()
    if not text:
        return NumberRead(None, "none", reason="the reply is empty")
    lowered = text.lower()
    starts = [m.end() for m in _CUE.finditer(lowered)]
    for start in (*starts, 0):
        found = _number_at(lowered, start)
        if found is not None:
            value, rule, begin, end = found
            return _with_unit(text, value, rule, begin, end, units)
    return NumberRead(None, "none", reason="the reply holds no number (digits or number words)")


def _number_at(text: str, start: int) -> tuple[float, str, int, int] | None:
    """(value, rule, span) of the first number at or after ``start`` (digits or a word run)."""
    digits = next((m for m in _NUMBER.finditer(text, start) if re.search(r"\d", m.group(0))), None)
    words = _word_run(text, start)
    if digits is not None and (words is None or digits.start() < words[2]):
        value = _digits_value(digits.group(0))
        if value is not None:
            return value, "digits", digits.start(), digits.end()
    return words


def _digits_value(token: str) -> float | None:
    token = token.replace("−", "-").replace(",", "")
    try:
        if "/" in token:
            top, bottom = token.split("/")
            return float(top) / float(bottom) if float(bottom) else None
        return float(token)
    except ValueError:
        return None


def _word_run(text: str, start: int) -> tuple[float, str, int, int] | None:
    """The first run of number words at or after ``start`` (joined by spaces, hyphens, or ``and``
    after a scale word), as (value, ``words``, begin, end)."""
    tokens: list[str] = []
    begin = end = gap_end = -1
    for m in _WORD.finditer(text, start):
        word = m.group(0)
        if tokens and text[gap_end:m.start()].strip(" -") != "":
            break  # something other than spaces and hyphens between: the run has ended
        if word in WORD_VALUES or word in SCALES:
            begin = m.start() if not tokens else begin
            tokens.append(word)
            end = gap_end = m.end()
        elif word == "and" and tokens and tokens[-1] in SCALES:
            gap_end = m.end()  # three hundred and twenty
        elif tokens:
            break
    if not tokens:
        return None
    total, current = 0, 0
    for word in tokens:
        if word in SCALES:
            if SCALES[word] == 100:
                current = max(current, 1) * 100
            else:
                total += max(current, 1) * SCALES[word]
                current = 0
        else:
            current += WORD_VALUES[word]
    return float(total + current), "words", begin, end


def _with_unit(text: str, value: float, rule: str, begin: int, end: int,
               units: Mapping[str, float] | None) -> NumberRead:
    """The read number, converted by the unit right after it where ``units`` names one."""
    if units:
        rest = text[end:].lower()
        for unit in sorted(units, key=len, reverse=True):
            if re.match(rf"\s*{re.escape(unit)}(?![a-z0-9²])", rest):
                stop = end + re.match(rf"\s*{re.escape(unit)}", rest).end()  # type: ignore[union-attr]
                return NumberRead(value * units[unit], f"{rule}+unit", text[begin:stop], unit)
    return NumberRead(value, rule, text[begin:end])


def first_token_number(reply: str | None) -> float | None:
    """thinking-in-space's reader (``fuzzy_matching`` then ``to_float``, vision-x-nyu/thinking-in-space
    @51e089c ``lmms_eval/tasks/vsibench/utils.py`` l. 81–82, 101–106): the reply's first
    space-separated token, trailing dots removed, as a float; None where it is no number."""
    token = str(reply or "").split(" ")[0].rstrip(".").strip()
    try:
        return float(token)
    except (TypeError, ValueError, OverflowError):
        return None
