"""lmms-eval's first-letter reader and the scoring around it: CV-Bench and EmbSpatial-Bench.

Source: EvolvingLMMs-Lab/lmms-eval @75571cf
- ``lmms_eval/tasks/cv_bench/utils.py``: ``_extract_answer_letter`` (l. 6-24),
  ``cv_bench_process_results`` (l. 41-52), ``cv_bench_aggregate_results`` (l. 55-64),
  ``cv_bench_default_aggregate_results`` (l. 67-79);
- ``lmms_eval/tasks/embspatial/utils.py``: ``_extract_answer_letter`` (l. 23-41, character for
  character the same function as CV-Bench's), ``embspatial_process_results`` (l. 104-121),
  ``embspatial_aggregate_results`` (l. 124-149), ``_aggregate_by_source`` (l. 152-155).
  (``lmms_eval/tasks/blink/utils.py`` l. 10-28 holds the same function again.)

The reader: ``re.match`` at the start of the stripped reply of ``[\\(\\s]*([A-Z])[\\)\\.\\s]*``,
case-insensitive, upper-cased. It is the reply's first letter of any word: "The answer is B" -> "T",
"answer: B" -> "A", "b" -> "B", "**B**" -> "" (an asterisk is not skipped), "" -> "". Where the
first letter is another option's letter the reply counts as that option ("A cat is left" -> A;
"Because ..." -> B; "Definitely C" -> D).

Prompts (the templates' ``pre_prompt``): CV-Bench "Note: You only need to respond with {} without
providing any additional information.\\n" with {} the letters "A, B, C, ..." then the item's
``prompt``; EmbSpatial "Note: You only need to respond with A, B, C, D without providing any
additional information.\\n" + question + "\\nA) ...\\nB) ...".
"""

from __future__ import annotations

import re
from collections import defaultdict

CV_BENCH_PRE_PROMPT = "Note: You only need to respond with {} without providing any additional information.\n"
EMBSPATIAL_PRE_PROMPT = "Note: You only need to respond with A, B, C, D without providing any additional information.\n"


def _extract_answer_letter(text: str) -> str:
    """Transcribed from ``_extract_answer_letter`` (cv_bench/utils.py l. 6-24 = embspatial/utils.py
    l. 23-41): the first letter, upper-cased, or ``""``."""
    text = text.strip()
    match = re.match(r"[\(\s]*([A-Z])[\)\.\s]*", text, flags=re.IGNORECASE)
    if match:
        return match.group(1).upper()
    return ""


def cv_bench_process_results(doc, result):
    """Transcribed from ``cv_bench_process_results`` (l. 41-52): ``doc`` has ``answer`` ("(B)"),
    ``idx``, ``type``, ``task``, ``source``; ``result`` is ``[reply]``."""
    key_name = "cv_bench_acc"
    grounded_output = doc["answer"].strip("()")
    response = result[0]
    pred_letter = _extract_answer_letter(response)
    flag = pred_letter == grounded_output
    cv_bench_submission = {"id": doc["idx"], "gt_content": grounded_output, "pred_parsed": pred_letter,
                           "pred": response, "type": doc["type"], "task": doc["task"], "source": doc["source"],
                           "is_correct": flag}
    return {key_name: cv_bench_submission}


def cv_bench_aggregate_results(results):
    """Transcribed from ``cv_bench_aggregate_results`` (l. 55-64): the plain accuracy."""
    total_samples = len(results)
    total_correct = 0
    for sample in results:
        if sample["is_correct"]:
            total_correct += 1
    return total_correct / total_samples if total_samples > 0 else 0


def cv_bench_default_aggregate_results(results):
    """Transcribed from ``cv_bench_default_aggregate_results`` (l. 67-79): ½((ADE20K + COCO)/2 +
    Omni3D) over the sources' accuracies (a missing source raises ``KeyError``, as theirs)."""
    source_samples = defaultdict(list)
    for elem in results:
        source = elem["source"]
        source_samples[source].append(elem["is_correct"])
    source_accuracies = {source: sum(scores) / len(scores) for source, scores in source_samples.items()}
    ade20k_2d = source_accuracies["ADE20K"]
    coco_2d = source_accuracies["COCO"]
    omni_3d = source_accuracies["Omni3D"]
    return 1 / 2 * ((ade20k_2d + coco_2d) / 2 + omni_3d)


DATA_SOURCES = ["ai2thor", "mp3d", "scannet"]


def embspatial_process_results(doc, results):
    """Transcribed from ``embspatial_process_results`` (l. 104-121): ``doc["answer"]`` is the gold
    option's index (0-3), ``relation``, ``question_id``, optional ``data_source``."""
    choices = ["A", "B", "C", "D"]
    grounded_output = choices[doc["answer"]]
    response = results[0]
    pred_letter = _extract_answer_letter(response)
    flag = pred_letter == grounded_output
    data_source = doc.get("data_source", "unknown")
    entry = {"id": doc["question_id"], "gt_content": grounded_output, "pred": response, "sub_task": doc["relation"],
             "is_correct": flag, "data_source": data_source}
    result = {"embspatial_acc": entry}
    for src in DATA_SOURCES:
        result[f"{src}_accuracy"] = entry
    return result


def embspatial_aggregate_results(results):
    """Transcribed from ``embspatial_aggregate_results`` (l. 124-149), its logging left out: the
    overall accuracy."""
    sub_task_to_eval_samples = defaultdict(list)
    total_samples = len(results)
    total_correct = 0
    for sample in results:
        sub_task = sample["sub_task"]
        if sample["is_correct"]:
            total_correct += 1
            sub_task_to_eval_samples[sub_task].append(1)
        else:
            sub_task_to_eval_samples[sub_task].append(0)
    return total_correct / total_samples if total_samples > 0 else 0


def aggregate_by_source(results, target_source):
    """Transcribed from ``_aggregate_by_source`` (l. 152-155)."""
    scores = [1 if r["is_correct"] else 0 for r in results if r.get("data_source") == target_source]
    return sum(scores) / len(scores) if scores else 0.0
