"""MindCube: the authors' answer reader and accuracy by setting, transcribed.

Source: mll-lab-nu/MindCube @ 6d8fd9acdf5b80769373a21cdbfcf068ab356e0f (MIT):

* ``src/evaluation/core/extractors.py`` ``extract_answer`` (l. 15–93): a cascade of regular
  expressions, each taking its **last** match: ``([A-E])\\.`` anywhere first (l. 32–34); then the
  text after ``<Answer>`` (l. 37–50); then eight patterns in priority order (l. 53–69); then,
  line by line, the last line holding ``X. words`` (l. 73–84); then the bottom-most line holding a
  whole capital letter A–E (l. 87–91). Case-sensitive throughout.
* ``get_setting_from_id`` (l. 211–235): ``around`` / ``rotation`` / ``translation`` / ``among``
  by substring of the lower-cased id, else ``other``.
* ``src/evaluation/evaluator.py`` ``BasicEvaluator.evaluate`` (l. 25–109) with
  ``src/evaluation/core/base_metrics.py`` ``initialize_basic_results_structure`` (l. 25–59) and
  ``update_accuracy_metrics`` (l. 62–85): items without ``gt_answer`` are skipped; the reply is
  ``cogmap_gen_answer``, else ``answer``; correct when the extracted letter equals ``gt_answer``
  exactly; accuracy per setting over all its items, and overall over the settings whose
  ``include_in_overall`` is true — **translation is excluded from the overall** (l. 37–43).

No chance or frequency baseline is computed in this code (``git grep -i "chance|frequen"`` finds
none at that commit). The MindCube challenge page (mind-cube.github.io/challenge) lists
"Random (chance)" and "Random (frequency)" rows for its held-out test set without their code.

lmms-eval's copy (EvolvingLMMs-Lab/lmms-eval @ 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3,
``lmms_eval/tasks/mindcube/utils.py``; data ``oscarqjh/MindCube_lmmseval``, configs ``tiny`` and
``full``, split ``combined`` or per setting) carries ``extract_answer`` unchanged (l. 71–143, "taken
directly from the official mindcube codebase") but differs in the rest, transcribed below as
``lmms_*``: the reply is ``.strip()``-ped first (l. 170); the setting is the id's first
``_``-separated field, ``aroundnew`` counting as ``around`` (l. 176–186); the overall is the mean
over every item (no translation exclusion, l. 205–224).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping


def extract_answer(text: str) -> str | None:
    """``src/evaluation/core/extractors.py`` l. 15–93, verbatim."""
    if not text:
        return None

    # First, try to match simple answer format: A., B., C., D., E. with highest priority
    simple_pattern_matches = list(re.finditer(r"([A-E])\.", text))
    if simple_pattern_matches:
        return simple_pattern_matches[-1].group(1)

    # Then check if <Answer> tag exists and extract content after it
    answer_section_match = re.search(r"<Answer>(.*?)(?:<|$)", text, re.DOTALL)
    if answer_section_match:
        answer_section = answer_section_match.group(1)
        for pattern in [
            r"[Mm]y answer is ([A-E])",
            r"[Mm]y answer is ([A-E])\.",
            r"[Tt]he answer is ([A-E])",
            r"(?:Answer: )?([A-E])\.",
            r"\b([A-E])\b",
        ]:
            matches = list(re.finditer(pattern, answer_section))
            if matches:
                return matches[-1].group(1)

    # If no matches found after <Answer> tag, proceed with regular priority patterns
    patterns = [
        r'(?:Answer: )?([A-E])\. [A-Za-z0-9 \-\(\)\'",]+(?=(?:\n|$|\.|"))',  # Full answer with description
        r'(?:Answer: )?([A-E])\. [A-Za-z0-9 \-\(\)\'"]+',  # Answer with partial description
        r"(?:^|\n)(?:Answer: )?([A-E])(?:\.|$|\s)",  # Answer at line beginning
        r"[\*\"]([A-E])[\*\"]",  # Answer in quotes or asterisks
        r"\bAnswer:?\s*([A-E])\b",  # Answer following "Answer:"
        r"[Mm]y answer is ([A-E])",  # "My answer is X"
        r"[Mm]y answer is ([A-E])\.",  # "My answer is X."
        r"answer is ([A-E])",  # "The answer is X"
    ]
    for pattern in patterns:
        matches = list(re.finditer(pattern, text))
        if matches:
            return matches[-1].group(1)

    # Line by line: first the more specific pattern on each line
    lines = text.split("\n")
    line_matches = []
    for i, line in enumerate(lines):
        match = re.search(r'([A-E])\. [A-Za-z0-9 \-\(\)\'",]+', line)
        if match:
            line_matches.append((i, match.group(1)))
    if line_matches:
        return line_matches[-1][1]

    # Finally, the most general pattern on each line, from the bottom
    for i in reversed(range(len(lines))):
        match = re.search(r"\b([A-E])\b", lines[i])
        if match:
            return match.group(1)

    return None


def get_setting_from_id(item_id: str) -> str:
    """``src/evaluation/core/extractors.py`` l. 211–235, verbatim."""
    if not item_id:
        return "other"
    item_id_lower = item_id.lower()
    if "around" in item_id_lower:
        return "around"
    elif "rotation" in item_id_lower:
        return "rotation"
    elif "translation" in item_id_lower:
        return "translation"
    elif "among" in item_id_lower:
        return "among"
    else:
        return "other"


SETTINGS = ("around", "rotation", "translation", "among", "other")
"""``base_metrics.py`` l. 33."""

INCLUDE_IN_OVERALL = {"around": True, "rotation": True, "translation": False, "among": True, "other": True}
"""``base_metrics.py`` l. 37–43: translation is tracked but left out of the overall."""


def basic_evaluate(data: Iterable[Mapping[str, object]]) -> dict:
    """``BasicEvaluator.evaluate`` (``evaluator.py`` l. 36–99) on loaded JSONL records.

    Each record carries ``id``, ``gt_answer`` and the reply in ``cogmap_gen_answer`` or
    ``answer``. Returns the ``results`` dict: ``total``, ``gen_cogmap_correct``,
    ``gen_cogmap_accuracy`` (overall, translation excluded), ``unfiltered_total`` and
    ``settings`` (per setting ``total``, ``gen_cogmap_correct``, ``gen_cogmap_accuracy``,
    ``include_in_overall``); plus ``error_ids``, the ids whose reply gave no letter.
    """
    data = list(data)
    settings = {
        s: {
            "total": 0,
            "gen_cogmap_correct": 0,
            "gen_cogmap_accuracy": 0.0,
            "include_in_overall": INCLUDE_IN_OVERALL[s],
        }
        for s in SETTINGS
    }
    results: dict = {
        "total": 0,
        "unfiltered_total": len(data),
        "gen_cogmap_correct": 0,
        "gen_cogmap_accuracy": 0.0,
        "settings": settings,
    }
    error_ids: list[str] = []
    filtered_total = 0
    filtered_correct = 0
    for item in data:
        gt_answer = item.get("gt_answer")
        if not gt_answer:
            continue
        item_id = str(item.get("id", ""))
        setting = get_setting_from_id(item_id)
        settings[setting]["total"] += 1
        include_in_overall = settings[setting].get("include_in_overall", True)
        if include_in_overall:
            filtered_total += 1
        answer_text = item.get("cogmap_gen_answer", item.get("answer", ""))
        extracted_answer = extract_answer(answer_text)  # type: ignore[arg-type]
        if not extracted_answer:
            error_ids.append(item_id)
        is_correct = extracted_answer == gt_answer if extracted_answer else False
        if is_correct:
            settings[setting]["gen_cogmap_correct"] += 1
            if include_in_overall:
                filtered_correct += 1
    results["total"] = filtered_total
    results["gen_cogmap_correct"] = filtered_correct
    # update_accuracy_metrics, base_metrics.py l. 72–85
    for stats in settings.values():
        stats["gen_cogmap_accuracy"] = stats["gen_cogmap_correct"] / stats["total"] if stats["total"] > 0 else 0.0
    results["gen_cogmap_accuracy"] = results["gen_cogmap_correct"] / results["total"] if results["total"] > 0 else 0.0
    results["error_ids"] = error_ids
    return results


# --- lmms-eval's copy -------------------------------------------------------------------------


def lmms_setting(row_id: str) -> str:
    """lmms-eval ``mindcube_process_results`` l. 176–186: the id's first ``_`` field."""
    first = row_id.split("_", 1)[0]
    if first == "among":
        return "among"
    elif first == "rotation":
        return "rotation"
    elif first in ("around", "aroundnew"):
        return "around"
    else:
        return "other"


def lmms_score(reply: str, gt_answer: str) -> float:
    """lmms-eval ``mindcube_process_results`` l. 167–173: strip, extract, exact match."""
    pred_answer = extract_answer(reply.strip())
    return 1.0 if pred_answer == gt_answer else 0.0


def lmms_aggregate(records: Iterable[Mapping[str, object]], replies: Iterable[str]) -> dict[str, float]:
    """lmms-eval ``mindcube_aggregate_*`` (l. 205–293): overall mean and per-type means.

    A type with no items reports 0.0, as their ``count > 0`` guard does.
    """
    scored = [
        (lmms_score(reply, str(rec["gt_answer"])), lmms_setting(str(rec["id"])))
        for rec, reply in zip(records, replies, strict=True)
    ]
    out = {"overall_accuracy": sum(s for s, _ in scored) / len(scored) if scored else 0.0}
    for kind in ("rotation", "among", "around"):
        picked = [s for s, t in scored if t == kind]
        out[f"{kind}_accuracy"] = sum(picked) / len(picked) if picked else 0.0
    return out
