"""SpatialScore: the authors' answer readers and per-source / per-category accuracy, transcribed.

Source: haoningwu3639/SpatialScore @ 1995c4f5115cdaecc533a3c2d383a1d286dd1ca6 (MIT). At that
commit the repository holds only the **version_0** evaluation ("we are working on updating our
up-to-date code and data", README); no v2 (CVPR 2026) scoring code is published. Transcribed:

* ``utils/util.py`` (identical to ``version_0/utils/util.py``): ``extract_number`` (l. 117–177),
  ``extract_yes_no`` (l. 180–222), ``extract_option`` (l. 225–278), ``extract_numeric_with_unit``
  (l. 281–386, ratio tolerance 2.0), ``abs_dist_norm`` and ``mean_relative_accuracy`` (l. 389–400,
  VSI-Bench's MRA, but ``inf`` relative error for a zero target).
* ``version_0/test_qwen.py`` ``main`` (l. 166–218; ``test_internvl.py`` l. 160–217 and
  ``test_all-in-one.py`` l. 353–410 are the same lines): the verdict by ``question_type``:

  - ``multi-choice``: ``extract_option(reply).upper() == extract_option(answer).upper()``;
  - ``judgment``: ``extract_yes_no`` on both, compared lower-cased;
  - otherwise (``open-ended``): if any of ``meter … m … cm … ft …`` is a **substring** of the
    lower-cased gold (so any gold containing the letter "m"), ``extract_numeric_with_unit``; else
    ``RealWorldQA`` exact match (lower-cased); else ``float(extract_number(...))`` on both (an
    unreadable reply is 0.0; an unreadable gold raises), scored by MRA for ``VSI-Bench_8``
    (a reply of 0 scores 1 only for a gold of 0) and by exact float equality for the rest.

* The summaries (l. 256–305): per ``source``, per ``category`` and overall,
  ``accuracy = score_sum / total * 100`` and ``correct = int(score_sum)`` (floored).

Generation there is greedy (``TEMPERATURE = 0.0``, ``do_sample=False``, ``max_new_tokens=1024``,
l. 65–66). No random fallback exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import numpy as np

_TAGS = r"</?(?:CONCLUSION|conclusion|ANSWER|answer|ASSISTANT|assistant)>"


def extract_number(text: str) -> str:
    """``utils/util.py`` l. 117–177, verbatim."""
    text = text.strip()
    if text.isdigit():
        return text

    assistant_match = re.search(r"ASSISTANT:\s*\(?([A-Fa-f])\)?", text)
    if assistant_match:
        return assistant_match.group(1).upper()

    clean_text = re.sub(_TAGS, "", text).strip()
    text_lower = clean_text.lower()

    conclusion_match = re.search(r"<conclusion>\s*(\d+)\s*</conclusion>", text, re.IGNORECASE)
    if conclusion_match:
        return conclusion_match.group(1)

    word_to_digit = {
        "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4",
        "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
        "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13",
        "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
        "eighteen": "18", "nineteen": "19", "twenty": "20",
        "first": "1", "second": "2", "third": "3", "fourth": "4", "fifth": "5",
        "sixth": "6", "seventh": "7", "eighth": "8", "ninth": "9", "tenth": "10",
    }  # fmt: skip

    match = re.search(r"\d+(?:\.\d+)?", text_lower)
    if match:
        return match.group(0)

    for word, digit in word_to_digit.items():
        if (
            text_lower.startswith(word)
            or f" {word} " in text_lower
            or f"there are {word}" in text_lower
            or f"there is {word}" in text_lower
            or f"shows {word}" in text_lower
            or text_lower.endswith(f" {word}")
        ):
            return digit

    for word, digit in word_to_digit.items():
        if word in text_lower.split():
            return digit

    return clean_text


def extract_yes_no(text: str) -> str:
    """``utils/util.py`` l. 180–222, verbatim."""
    text = text.strip()
    if text.lower() in ["yes", "no"]:
        return text.capitalize()

    assistant_match = re.search(r"ASSISTANT:\s*\(?([A-Fa-f])\)?", text)
    if assistant_match:
        return assistant_match.group(1).upper()

    clean_text = re.sub(_TAGS, "", text).strip()
    text_lower = clean_text.lower()

    conclusion_match = re.search(r"<conclusion>\s*(yes|no)\s*</conclusion>", text, re.IGNORECASE)
    if conclusion_match:
        return conclusion_match.group(1).capitalize()

    yes_patterns = [r"\byes\b", r"\byeah\b", r"\byep\b", r"\bcorrect\b", r"\btrue\b", r"\bright\b", r"\bagreed?\b"]
    no_patterns = [r"\bno\b", r"\bnope\b", r"\bnot\b", r"\bfalse\b", r"\bwrong\b", r"\bincorrect\b", r"\bdisagreed?\b"]

    for pattern in yes_patterns:
        if re.search(pattern, text_lower):
            return "Yes"
    for pattern in no_patterns:
        if re.search(pattern, text_lower):
            return "No"

    return clean_text


def extract_option(text: str) -> str:
    """``utils/util.py`` l. 225–278, verbatim."""
    text = text.strip()
    if re.match(r"^[A-Fa-f]\.?$", text):
        return text[0].upper()

    assistant_match = re.search(r"ASSISTANT:\s*\(?([A-Fa-f])\)?", text)
    if assistant_match:
        return assistant_match.group(1).upper()

    clean_text = re.sub(_TAGS, "", text).strip()

    conclusion_patterns = [
        r"<conclusion>\s*\(([A-Fa-f])\).*?</conclusion>",
        r"<conclusion>\s*\(?([A-Fa-f])\)?\.?\s*</conclusion>",
    ]
    for pattern in conclusion_patterns:
        match = re.search(pattern, text, re.IGNORECASE)
        if match:
            return match.group(1).upper()

    patterns = [
        r"(?i)(?:answer|option)[:\s]*\(?([A-Fa-f])\)?\.?",
        r"(?i)(?:^|\s)\(?([A-Fa-f])\)\.?(?:$|\s|\.)",
        r"(?i)(?:^|\s)([A-Fa-f])\.?(?:$|\s|\.|,)",
        r"(?i)(?:^|\s)([A-Fa-f])\.(?:$|\s)",
    ]
    for pattern in patterns:
        match = re.search(pattern, text)
        if match:
            return match.group(1).upper()

    basic_match = re.search(r"[A-Fa-f]", text)
    if basic_match:
        return basic_match.group(0).upper()

    return clean_text


_MULTIPLIERS = {
    "m": 100, "meter": 100, "meters": 100, "metre": 100, "metres": 100,
    "cm": 1, "centimeter": 1, "centimeters": 1, "mm": 0.1,
    "ft": 30.48, "foot": 30.48, "feet": 30.48, "in": 2.54, "inch": 2.54, "inches": 2.54,
}  # fmt: skip
"""``utils/util.py`` l. 362–366 (an unknown unit multiplies by 1)."""


def extract_numeric_with_unit(pred: str, gt: str | None = None, tolerance: float = 2.0) -> dict:
    """``utils/util.py`` l. 281–386, verbatim."""
    result: dict = {"value": None, "unit": None, "is_correct": False}
    pred = re.sub(_TAGS, "", pred).strip()

    value_match = re.search(r"\\scalar\{([^}]+)\}", pred)
    if not value_match:
        value_match = re.search(r"\*\*([\d.]+)\s*(?:[a-zA-Z]+)\*\*", pred)
    if not value_match:
        value_match = re.search(
            r"(?:approximately|about|roughly)\s*\**([\d.]+)\s*(?:[a-zA-Z]+)\**", pred, re.IGNORECASE
        )
    if not value_match:
        value_match = re.search(r"(\d+\.?\d*)\s*(?:[a-zA-Z]+)", pred)

    unit_match = re.search(r"\\distance_unit\{([^}]+)\}", pred)
    if not unit_match:
        unit_match = re.search(r"\*\*\d+\.?\d*\s*([a-zA-Z]+)\*\*", pred)
    if not unit_match:
        unit_match = re.search(r"(?:approximately|about|roughly)\s*\**\d+\.?\d*\s*([a-zA-Z]+)\**", pred, re.IGNORECASE)
    if not unit_match:
        number_unit_match = re.search(r"\d+\.?\d*\s*([a-zA-Z]+)", pred)
        if number_unit_match:
            unit_match = number_unit_match

    if value_match:
        try:  # noqa: SIM105  (as written there)
            result["value"] = float(re.findall(r"\d+\.?\d*", value_match.group(1))[0])
        except (IndexError, ValueError):
            pass

    if unit_match:
        try:  # noqa: SIM105  (as written there)
            result["unit"] = unit_match.group(1).lower().strip()
        except (IndexError, AttributeError):
            pass

    if gt is not None and result["value"] is not None and result["unit"] is not None:
        gt_match = re.search(r"(\d+\.?\d*)\s*([a-zA-Z]+)", gt)
        if gt_match:
            try:
                gt_value = float(gt_match.group(1))
                gt_unit = gt_match.group(2).lower().strip()
                if result["value"] == 0 or gt_value == 0:
                    result["is_correct"] = result["value"] == 0 and gt_value == 0
                    return result
                pred_multiplier = _MULTIPLIERS.get(result["unit"], 1)
                gt_multiplier = _MULTIPLIERS.get(gt_unit, 1)
                pred_value_cm = result["value"] * pred_multiplier
                gt_value_cm = gt_value * gt_multiplier
                try:
                    ratio = max(pred_value_cm / gt_value_cm, gt_value_cm / pred_value_cm)
                    result["is_correct"] = ratio < tolerance
                except ZeroDivisionError:
                    result["is_correct"] = False
            except (IndexError, ValueError):
                pass

    return result


def abs_dist_norm(pred: float, target: float) -> float:
    """``utils/util.py`` l. 389–391: ``inf`` for a zero target."""
    return abs(pred - target) / target if target != 0 else float("inf")


def mean_relative_accuracy(pred: float, target: float, start: float, end: float, interval: float) -> float:
    """``utils/util.py`` l. 394–400 (the thresholds as VSI-Bench's: ``int()`` of 10.999… is 10)."""
    num_pts = (end - start) / interval + 2
    conf_intervs = np.linspace(start, end, int(num_pts))
    accuracy = abs_dist_norm(pred, target) <= 1 - conf_intervs
    return accuracy.mean()


UNIT_WORDS = ["meter", "meters", "m", "cm", "centimeter", "centimeters", "km", "kilometer", "kilometers",
              "inch", "inches", "ft", "foot", "feet"]  # fmt: skip
"""``version_0/test_qwen.py`` l. 184, tested as substrings of the lower-cased gold."""


def score_item(item: Mapping[str, object], results: str) -> tuple[object, float]:
    """``version_0/test_qwen.py`` l. 166–218: ``(is_correct, score)`` for one reply.

    ``is_correct`` is ``True``/``False``, or the string ``"accuracy"`` for VSI-Bench_8's MRA
    items, exactly as stored in their ``all_results.json``.
    """
    is_correct: object = False
    score = 0.0
    question_type = str(item.get("question_type", ""))
    ground_truth = str(item.get("answer", ""))

    if question_type.lower() == "multi-choice":
        pred_answer = extract_option(results)
        gt_answer = extract_option(ground_truth)
        is_correct = pred_answer.upper() == gt_answer.upper()
    elif question_type.lower() == "judgment":
        pred_answer = extract_yes_no(results)
        gt_answer = extract_yes_no(ground_truth)
        is_correct = pred_answer.lower() == gt_answer.lower()
    else:
        if any(unit in ground_truth.lower() for unit in UNIT_WORDS):
            is_correct = extract_numeric_with_unit(results, ground_truth)["is_correct"]
        elif item.get("source") == "RealWorldQA":
            is_correct = results.lower() == ground_truth.lower()
        else:
            try:
                pred_value = float(extract_number(results))
            except Exception:  # a bare ``except:`` there
                pred_value = 0.0
            gt_value = float(extract_number(ground_truth))
            if pred_value is not None and gt_value is not None:
                if item.get("source") == "VSI-Bench_8":
                    is_correct = "accuracy"
                    if pred_value == 0:
                        score = 1.0 if gt_value == 0.0 else 0.0
                    else:
                        score = float(mean_relative_accuracy(pred_value, gt_value, start=0.5, end=0.95, interval=0.05))
                else:
                    is_correct = pred_value == gt_value

    if is_correct == True:  # noqa: E712  (their comparison, l. 214)
        score = 1.0
    elif is_correct == False:  # noqa: E712
        score = 0.0
    return is_correct, score


def summarize(entries: Iterable[Mapping[str, object]]) -> dict:
    """``version_0/test_qwen.py`` l. 256–305 on ``{"source", "category", "score"}`` entries.

    Returns ``{"overall": {...}, "by_source": {src: {...}}, "by_category": {cat: {...}}}`` with
    ``accuracy`` (percent), ``correct`` (``int`` of the score sum), ``total`` and ``score_sum``;
    groups in first-seen order.
    """
    entries = list(entries)

    def block(rows: list) -> dict:
        score_sum = sum(r.get("score", 0.0) for r in rows)
        total = len(rows)
        return {
            "accuracy": (score_sum / total) * 100 if total > 0 else 0,
            "correct": int(score_sum),
            "total": total,
            "score_sum": score_sum,
        }

    by_source: dict[str, list] = {}
    by_category: dict[str, list] = {}
    for e in entries:
        by_source.setdefault(str(e.get("source", "unknown")), []).append(e)
        by_category.setdefault(str(e.get("category", "unknown")), []).append(e)
    return {
        "overall": block(entries),
        "by_source": {k: block(v) for k, v in by_source.items()},
        "by_category": {k: block(v) for k, v in by_category.items()},
    }
