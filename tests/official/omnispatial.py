"""OmniSpatial: the authors' answer reading and per-task-type accuracy, transcribed.

Source: qizekun/OmniSpatial @ 208bac258d8671c6857b3be2834997936ba7fc51 (README: the test set is
CC BY-NC 4.0):

* ``api_eval.py`` ``process_info`` (l. 19–69): the prompt is the question and ``"X. option"``
  lines (l. 35–37); the gold letter is ``chr(65 + answer).upper()`` (l. 49); the reply is read by
  ``eval_type`` (l. 50–67):

  - ``json``: strip, drop a leading ```` ```json```` and a trailing ```` ``` ````, ``json.loads``,
    ``.get("answer", "A").strip().upper()[:1]``; any exception gives ``"A"``;
  - ``re`` (the default, l. 101): the **last** ``Answer\\s*:\\s*([A-D])\\b`` match, case-insensitive,
    **not upper-cased** — so "answer: b" reads ``"b"`` and never equals the gold ``"B"``; no match
    gives ``"A"``;
  - ``direct``: ``response.strip().upper()[:1]``;
  - ``llm``: a GPT-4.1-mini judge whose reply contains "true" (not transcribed: it calls an API).

* ``blank_stats`` / ``safe_update_and_dump`` (l. 76–94) and the final report (l. 157–169): every
  flag goes to ``Total``, to its task type's ``Total`` and to its sub-task; each accuracy is
  ``sum(flags) / (len(flags) + 1e-6) * 100``.
* Repeated sampling (l. 126–133, ``--repeat`` default 5, l. 103): every item is asked ``repeat``
  times and **all flags are pooled** — the overall is the pooled mean, which equals the mean of
  the per-run accuracies because every run holds every item. No temperature is set: the API call
  (``utils.py`` ``_chat_with_retry`` l. 37–51) uses the provider's default; a call failing 10 times
  returns the reply ``"A"``. The local scripts (``vlms_eval/qwenvl_eval.py`` l. 52, 101) repeat the
  data list ``* args.repeat`` and call ``model.generate`` with the model's own generation config.
  The authors on why (qizekun/OmniSpatial issue #3): temperature 0 "leads to performance
  degradation"; per-model prompt/eval types are in the paper's appendix.
* The image of an item is ``{dataset}/{task_type}/{id.split('_')[0]}.png`` (l. 39): items sharing
  the id's first field share an image.

No random fallback exists here (unread replies become "A", deterministically).

lmms-eval @ 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3 ships two copies, transcribed as ``lmms_*``:

* ``lmms_eval/tasks/omnispatial`` on the re-host ``pangyyyyy/OmniSpatial`` (fields ``gt`` — a
  letter — and ``image_path``): ``omnispatial_process_results`` (``utils.py`` l. 63–114) reads
  as the authors (``eval_type`` ``re``, ``prompt_type`` ``manual_cot`` from the YAML metadata),
  compares with ``doc["gt"]``; one greedy run (``temperature: 0.0``, ``max_new_tokens: 8192``);
  overall = plain mean (l. 121–159), sub-task means keyed ``"omnispatial_" + sub_task_type.lower()``.
* ``lmms_eval/tasks/omni_spatial`` on the re-host ``nv-njb/OmniSpatial-Test`` (embedded ``image``,
  integer ``answer``): ``_strip_think`` (l. 50–56) drops everything up to ``</think>`` /
  ``</thought>`` and keeps an ``<answer>…</answer>`` body; then the ``direct`` reader; a system
  prompt that mentions a "Multi-View Image" (l. 31–45); ``max_new_tokens: 16``, greedy, one run;
  means per task type (l. 104–129).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence

EPS = 1e-6
"""``api_eval.py`` l. 158: added to every denominator."""

TASKS: dict[str, tuple[str, ...]] = {
    "Dynamic_Reasoning": ("Manipulation", "Motion_Analysis"),
    "Spatial_Interaction": ("Traffic_Analysis", "Localization", "Geospatial_Strategy"),
    "Complex_Logic": ("Pattern_Recognition", "Geometric_Reasoning"),
    "Perspective_Taking": ("Egocentric", "Allocentric", "Hypothetical"),
}
"""``api_eval.py`` ``blank_stats`` l. 76–84, in its order."""

RE_PATTERN = re.compile(r"Answer\s*:\s*([A-D])\b", re.IGNORECASE)


def build_prompt(question: str, options: Sequence[str]) -> str:
    """``api_eval.py`` l. 35–37 (the system prompt is sent apart)."""
    prompt = question + "\n"
    for i in range(len(options)):
        prompt += f"{chr(65 + i)}. {options[i]}\n"
    return prompt


def gt_letter(answer: int) -> str:
    """``api_eval.py`` l. 49."""
    return chr(65 + answer).upper()


def read_letter(response: str, eval_type: str = "re") -> str:
    """``api_eval.py`` l. 50–63: the predicted letter for ``json``, ``re`` or ``direct``."""
    if eval_type == "json":
        try:
            cleaned = response.strip().removeprefix("```json").removesuffix("```").strip()
            pred_letter = json.loads(cleaned).get("answer", "A").strip().upper()[:1]
        except Exception:
            pred_letter = "A"
        return pred_letter
    elif eval_type == "re":
        found = RE_PATTERN.findall(response)
        return found[-1] if len(found) > 0 else "A"
    elif eval_type == "direct":
        return response.strip().upper()[:1]
    raise ValueError(f"Unknown or untranscribed eval_type: {eval_type}")


def is_correct(response: str, answer: int, eval_type: str = "re") -> bool:
    """``api_eval.py`` l. 49–63: ``flag = pred_letter == gt_letter``."""
    return read_letter(response, eval_type) == gt_letter(answer)


def blank_stats() -> dict:
    """``api_eval.py`` l. 76–84 (``Processed`` kept for resume)."""
    stats: dict = {"Processed": [], "Total": []}
    for task, subs in TASKS.items():
        stats[task] = {sub: [] for sub in subs}
        stats[task]["Total"] = []
    return stats


def update(res: dict, flag: bool, task: str, sub: str, uid: str) -> None:
    """``safe_update_and_dump`` l. 87–94 without the lock and the file."""
    res["Processed"].append(uid)
    res["Total"].append(flag)
    res[task][sub].append(flag)
    res[task]["Total"].append(flag)


def report(result: Mapping) -> dict:
    """The final report, ``api_eval.py`` l. 157–169: percentages with ``+ 1e-6`` denominators.

    Returns ``{"Overall": x, task: {"Total": x, sub: x, ...}, ...}``.
    """
    out: dict = {"Overall": sum(result["Total"]) / (len(result["Total"]) + EPS) * 100}
    for task in [k for k in result if k not in {"Total", "Processed"}]:
        out[task] = {"Total": sum(result[task]["Total"]) / (len(result[task]["Total"]) + EPS) * 100}
        for sub in result[task]:
            if sub == "Total":
                continue
            out[task][sub] = sum(result[task][sub]) / (len(result[task][sub]) + EPS) * 100
    return out


def evaluate(
    data: Sequence[Mapping], replies: Sequence[Sequence[str]], eval_type: str = "re"
) -> dict:
    """``api_eval.py`` main (l. 126–169) on given replies: ``replies[r][i]`` answers item ``i``
    in repeat ``r``; every repeat's flags are pooled. Returns ``report`` of the pooled stats."""
    result = blank_stats()
    for repeat, run in enumerate(replies):
        for it, response in zip(data, run, strict=True):
            uid = f"{it['task_type']}_{it['id']}_{repeat}"
            flag = is_correct(response, int(it["answer"]), eval_type)
            update(result, flag, str(it["task_type"]), str(it["sub_task_type"]), uid)
    return report(result)


def image_relpath(item: Mapping) -> str:
    """``api_eval.py`` l. 39: ``{task_type}/{id.split('_')[0]}.png`` under the dataset folder."""
    return f"{item['task_type']}/{str(item['id']).split('_')[0]}.png"


# --- lmms-eval: omnispatial (pangyyyyy/OmniSpatial) --------------------------------------------


def lmms_omnispatial_flag(response: str, gt: str, eval_type: str = "re") -> bool:
    """``tasks/omnispatial/utils.py`` l. 63–85: the authors' reader against ``doc["gt"]``."""
    return read_letter(response, eval_type) == gt


def lmms_omnispatial_aggregate(samples: Iterable[Mapping]) -> dict:
    """``omnispatial_aggregate_results`` (l. 121–159) and ``omnispatial_group_aggregate_results``
    (l. 117–118): plain means overall, per sub-task key and per task type.

    Each sample has ``is_correct``, ``task`` (task type) and ``sub_task``
    (``"omnispatial_" + sub_task_type.lower()``, l. 111).
    """
    samples = list(samples)
    sub: dict[str, list[int]] = {}
    task: dict[str, list[int]] = {}
    total_correct = 0
    for s in samples:
        v = 1 if s["is_correct"] else 0
        total_correct += v
        sub.setdefault(s["sub_task"], []).append(v)
        task.setdefault(s["task"], []).append(v)
    return {
        "omnispatial": total_correct / len(samples) if samples else 0,
        "sub_task": {k: sum(v) / len(v) for k, v in sub.items()},
        "task": {k: sum(v) / len(v) for k, v in task.items()},
    }


# --- lmms-eval: omni_spatial (nv-njb/OmniSpatial-Test) -----------------------------------------


def lmms_strip_think(text: str) -> str:
    """``tasks/omni_spatial/utils.py`` ``_strip_think`` l. 50–56, verbatim."""
    text = re.sub(r"^.*?</think>", "", text, flags=re.DOTALL)
    text = re.sub(r"^.*?</thought>", "", text, flags=re.DOTALL)
    m = re.search(r"<answer>(.*?)</answer>", text, flags=re.DOTALL | re.IGNORECASE)
    if m:
        return m.group(1).strip()
    return text.strip()


def lmms_omni_spatial_score(raw: str, answer: int) -> int:
    """``omni_spatial_process_results`` l. 79–84."""
    response = lmms_strip_think(raw)
    pred_letter = response.strip().upper()[:1] if response else ""
    return int(pred_letter == chr(65 + int(answer)))
