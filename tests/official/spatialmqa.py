"""SpatialMQA: the authors' reply verdicts (``result``) and their ``calculate_xyz.py`` /
``calculate_prf1.py`` aggregation, exactly as those files run.

Source: ziyan-xiaoyu/SpatialMQA @7b2f475
- The verdict ``result`` is written by the experiment scripts, not by ``Code/eval``. The open-model
  scripts (``Code/experiment/spatial_test_llava.py`` l. 164-178, and likewise blip2, instructblip,
  mplug, spacellava, idefics): ``output`` is the model's decoded text, stripped (some scripts also
  ``.rstrip('.')``); an empty output becomes ``'--'``; ``result = 1`` if ``output.lower() in answer``
  or ``answer in output.lower()`` (substring either way), else 0. The closed-model zero-shot scripts
  (``Code/close_models/gpt4_zero_shot.py`` l. 104-122, ``gemini_0_shot.py`` l. 83-95, the text-only
  ones) test only ``output in answer`` after ``.strip().rstrip('.').lower()``, with no ``'--'`` guard:
  an empty reply is ``"" in answer``, counted right. The few-shot ones test both ways.
- ``Code/eval/calculate_xyz.py`` (l. 1-139): accuracy per axis (x: left of / right of, y: on/above
  / below, z: in front of / behind) from the stored ``result``, and overall = the axes' correct
  counts over all predictions. Its "on/above" clause (l. 65-69: for ids 1-500, the on/above items
  of the authors' sorted test file, any output containing "on" or "above" gets ``result = 1``)
  edits records that the file then discards: l. 123 reloads the predictions from disk and the
  write-back (l. 117-119) is commented out. As the file runs, the clause changes no number
  (``xyz_as_run``); ``xyz_with_clause_written_back`` gives the numbers the commented-out write-back
  would have produced (on a free reply "on" is in "front", "one", "none", "beyond"...).
- ``Code/eval/calculate_prf1.py`` (l. 11-19, 58-150): a right record's output is replaced by its
  answer; a prediction is classed by ``output in "on/above"`` (substring of the label: "" and "o"
  are "on/above") down the six labels; macro P and R over the six (a predicted count of 0 becomes
  1), F1 = 2PR/(P+R), accuracy = right / records with one of the six labels.

``strict_result`` is not the authors': the exact-match verdict issue 42 asks for as the strict
reader, with the experiment scripts' normalisation (strip, final period, lower case).
"""

# ruff: noqa: SIM102, SIM114 - the authors' code as they wrote it

from __future__ import annotations

import copy

position = {'y': ["on/above", "below"], 'z': ["in front of", "behind"], 'x': ["left of", "right of"]}
"""calculate_xyz.py l. 5-6."""

LABELS = ["on/above", "below", "left of", "right of", "in front of", "behind"]


def experiment_result(output, answer, rstrip_period=False):
    """The open-model experiment scripts' verdict (spatial_test_llava.py l. 164-178; the model's
    text is ``.strip()``-ed in ``eval_model``, l. 147; ``rstrip_period`` for the scripts that also
    ``.rstrip('.')``: blip2, mplug, idefics). Returns ``(result, stored_output)``."""
    output = output.strip()
    if rstrip_period:
        output = output.rstrip('.')
    if len(output) == 0:
        output = '--'
    if output.lower() in answer:
        return 1, output.lower()
    elif answer in output.lower():
        return 1, output.lower()
    return 0, output.lower()


def zero_shot_result(model_answer, answer):
    """The closed-model zero-shot scripts' verdict (gpt4_zero_shot.py l. 104-122): one-way
    substring, no ``'--'`` guard. Returns ``(result, stored_output)``."""
    output = model_answer.strip().rstrip('.').lower()
    if output in answer:
        return 1, output.lower()
    return 0, output.lower()


def strict_result(output, answer):
    """Not the authors': exact match after the scripts' normalisation (see the module docstring)."""
    return int(output.strip().rstrip('.').lower() == answer)


def change_output(predict):
    """Transcribed from ``change_output`` (calculate_xyz.py l. 17-32; not called by ``main``)."""
    if "front" in predict['output']:
        predict['output'] = "in front of"
    elif "behind" in predict['output']:
        predict['output'] = "behind"
    elif "left" in predict['output']:
        predict['output'] = "left of"
    elif "right" in predict['output']:
        predict['output'] = "right of"
    elif "below" in predict['output']:
        predict['output'] = "below"
    elif "on" in predict['output'] or "above" in predict['output']:
        predict['output'] = "on/above"
    else:
        predict['output'] = "--"
    return predict['output']


def on_above_clause(predictions):
    """calculate_xyz.py l. 63-69, in place: returns ``change_count``."""
    change_count = 0
    for predict in predictions:
        if 501 > predict['id'] > 0:
            if "on" in predict['output'] or "above" in predict['output']:
                predict['result'] = 1
                change_count += 1
    return change_count


def calculate_accuracy(predictions, option):
    """Transcribed from ``calculate_accuracy`` (calculate_xyz.py l. 35-50), the global
    ``all_correct`` returned instead: ``(accuracy, correct_count)``."""
    correct_count = 0
    total_count = 0
    option1 = position[option][0]
    option2 = position[option][1]
    for predict in predictions:
        if predict['answer'] == option1 or predict['answer'] == option2:
            total_count += 1
            if predict['result'] == 1:
                correct_count += 1
    if total_count == 0:
        return 0.0, correct_count
    return correct_count / total_count, correct_count


def _xyz(predictions):
    accuracies, all_correct = {}, 0
    for option in ['x', 'y', 'z']:
        accuracies[option], correct = calculate_accuracy(predictions, option)
        all_correct += correct
    accuracies['overall'] = all_correct / len(predictions)
    return accuracies


def xyz_as_run(predictions):
    """``main`` of calculate_xyz.py (l. 53-135) for one file of records ``{id, result, output,
    answer}``: the on/above clause runs on the loaded copy, then the file is loaded again (l. 123)
    and the accuracies come from the stored ``result`` as it was."""
    loaded = copy.deepcopy(predictions)
    on_above_clause(loaded)  # discarded, as in the file
    return _xyz(copy.deepcopy(predictions))


def xyz_with_clause_written_back(predictions):
    """The numbers had the clause's edits been written back (its commented-out l. 117-119)."""
    edited = copy.deepcopy(predictions)
    on_above_clause(edited)
    return _xyz(edited)


def prf1(records):
    """Transcribed from calculate_prf1.py (``load_jsonl`` l. 11-19, ``main`` l. 64-145):
    ``{accuracy, precision, recall, f1}``; a label never asked divides by zero, as theirs."""
    data_list = []
    for tmp in copy.deepcopy(records):
        if tmp['result'] == 1:
            tmp['output'] = tmp['answer']
        data_list.append(tmp)
    pre = dict.fromkeys(LABELS, 0)
    label = dict.fromkeys(LABELS, 0)
    true = dict.fromkeys(LABELS, 0)
    for data in data_list:
        for name in LABELS:  # the elif chain on ``data['output'] in name``, l. 72-83
            if data['output'] in name:
                pre[name] += 1
                break
        if data['answer'] in label:
            label[data['answer']] += 1
        if data['answer'] == data['output'] and data['answer'] in true:
            true[data['answer']] += 1
    for name in LABELS:
        if pre[name] == 0:
            pre[name] = 1
    p = sum(true[n] / pre[n] for n in LABELS) / 6
    r = sum(true[n] / label[n] for n in LABELS) / 6
    f1 = 2 * p * r / (p + r)
    acc = sum(true.values()) / sum(label.values())
    return {"accuracy": acc, "precision": p, "recall": r, "f1": f1}
