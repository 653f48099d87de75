"""SITE: the reply parser and the accuracy / chance-adjusted accuracy of SITE's own eval scripts.

Source: wenqi-wang20/SITE-Bench @36295bb ``eval_scripts/sitebench/utils.py``:
``parse_multi_choice_response`` (l. 40-85), ``spatial_process_results`` (l. 143-168) and
``spatial_aggregate_results`` (l. 170-212). lmms-eval carries the same file ("taken directly from"
it): EvolvingLMMs-Lab/lmms-eval @75571cf ``lmms_eval/tasks/sitebench/utils.py`` l. 51-96 (parser),
l. 298-327 and 330-370; the parser and the scoring are identical there, only the category names in
the ``Categories`` set differ (which moves a row between the category and dataset tables, never the
overall number) and lmms-eval adds per-category metrics. The prompt asks "Give me the answer
letter directly. The best answer is:" (``site_image.yaml``'s ``post_prompt``).

Quirks kept:
- no candidate found -> ``random.choice(all_choices)``: the authors draw from the global ``random``
  module, unseeded. Pass ``rng`` (a ``random.Random``) to make the draw reproducible; ``rng=None``
  draws from the global module as they do.
- several candidates -> the one whose ``" X "`` occurs last (``response.rfind(f" {can} ")``), even
  when the candidates were found by another pattern ("(X)", "X.", "X:"), where every rfind is -1 and
  ``np.argmax`` then picks the first candidate in letter order: "B or C" -> C, "(B) or (C)" -> B.
- a capital letter standing alone anywhere counts: "A cat is ..." -> A, "I think it is B" -> B (and
  "I" itself where the item has nine or more options).
- "X." anywhere, even inside a word ("the USA." -> A), when no bare letter was found.
"""

# ruff: noqa: PERF401 - the authors' code as they wrote it

from __future__ import annotations

import random
import string
from collections import defaultdict

import numpy as np

UpperLetters = list(string.ascii_uppercase)
POST_PROMPT = "Give me the answer letter directly. The best answer is:"
"""``site_image.yaml`` ``lmms_eval_specific_kwargs.default.post_prompt``."""

Categories = {  # SITE-Bench's utils.py l. 13-20 (lmms-eval renames two of them)
    "counting & existence",
    "spatial relationship reasoning",
    "object localization & positioning",
    "depth & 3d understanding",
    "movement navigation & intent prediction",
    "multi-view & cross-image reasoning",
}


def parse_multi_choice_response(response, all_choices, rng=None):
    """Transcribed from ``parse_multi_choice_response`` (SITE-Bench utils.py l. 40-85).

    ``rng``: where no candidate is found the authors call ``random.choice(all_choices)`` on the
    global module; ``rng`` replaces that module (``None`` keeps theirs)."""
    response = " " + response + " "  # Add space to avoid partial match

    candidates = []
    # Look for choices with parentheses, e.g., (A)
    for choice in all_choices:
        if f"({choice})" in response:
            candidates.append(choice)

    # Look for simple choices, e.g., A, B, C
    if len(candidates) == 0:
        for choice in all_choices:
            if f" {choice} " in response:
                candidates.append(choice)

    # Look for choices with periods, e.g., A., B., C.
    if len(candidates) == 0:
        for choice in all_choices:
            if f"{choice}." in response:
                candidates.append(choice)

    # Look for choices with periods, e.g., A:, B:, C:.
    if len(candidates) == 0:
        for choice in all_choices:
            if f"{choice}:" in response or f":{choice}" in response or f": {choice}" in response:
                candidates.append(choice)

    # If no candidates, randomly choose one
    if len(candidates) == 0:
        pred_index = (rng or random).choice(all_choices)
    elif len(candidates) > 1:
        # If more than one candidate, choose the last one found
        start_indexes = [response.rfind(f" {can} ") for can in candidates]
        pred_index = candidates[np.argmax(start_indexes)]
    else:
        # If only one candidate, use it
        pred_index = candidates[0]

    return pred_index


class NoDraw:
    """An ``rng`` whose draw is ``None``: the parser then returns ``None`` where the authors would
    have drawn a random letter (a test hook to count the replies that fell through, not their code)."""

    def choice(self, seq):
        return None


def spatial_process_results(doc, results, rng=None):
    """Transcribed from ``spatial_process_results`` (l. 143-168): ``doc`` has ``options``,
    ``answer`` (a letter), ``category``, ``dataset``; ``results`` is ``[reply]``."""
    response = results[0].strip()
    all_choices = UpperLetters[: len(doc["options"])]
    pred_index = parse_multi_choice_response(response, all_choices, rng)
    gt_index = doc["answer"]
    score = 1.0 if pred_index == gt_index else 0.0

    category = doc["category"]
    dataset = doc["dataset"]
    accuracy_dict = {"overall": score, category: score, dataset: score, "total": 1}

    adjusted_score = score - 1.0 / len(all_choices)
    chance_adjusted_accuracy_dict = {
        "overall": adjusted_score,
        category: adjusted_score,
        dataset: adjusted_score,
        "total": 1.0 - 1.0 / len(all_choices),
    }

    return {"accuracy": accuracy_dict, "chance_adjusted_acc": chance_adjusted_accuracy_dict}


def spatial_aggregate_results(results):
    """Transcribed from ``spatial_aggregate_results`` (l. 170-212): the overall percentage to five
    decimals; fed the ``chance_adjusted_acc`` dicts it gives Σ(right − 1/k) / Σ(1 − 1/k)."""
    total_correct, total_examples = 0, 0
    category_correct, category_total = defaultdict(int), defaultdict(int)
    dataset_correct, dataset_total = defaultdict(int), defaultdict(int)

    for result in results:
        total_correct += result["overall"]
        total_examples += result["total"]
        for key, score in result.items():
            if key in Categories:
                category_correct[key] += score
                category_total[key] += result["total"]
            elif key != "overall":
                dataset_correct[key] += score
                dataset_total[key] += result["total"]

    overall_accuracy = (total_correct / total_examples) * 100 if total_examples > 0 else 0.0
    return round(overall_accuracy, 5)
