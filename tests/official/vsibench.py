"""VSI-Bench and VSI-Bench-Debiased: the authors' scoring, frame sampling and split, transcribed.

Scoring source: vision-x-nyu/thinking-in-space @ 51e089c3ae69b9435e9489058610f5b3964c56a8
(Apache-2.0), ``lmms_eval/tasks/vsibench/utils.py``:

* question types (l. 13–26): six multiple-choice (MCA) and four numeric (NA) types;
* ``fuzzy_matching`` (l. 81–82): the reply's first space-separated token, trailing dots removed,
  stripped — the reader for **both** answer types ("B. chair" → "B", "3.5 meters" → "3.5",
  "The answer is B" → "The", "two" → "two");
* ``exact_match`` (l. 84–85): case-insensitive equality with ``ground_truth`` (MCA);
* ``abs_dist_norm`` / ``mean_relative_accuracy`` (l. 87–94): MRA over thresholds from
  ``np.linspace(start, end, int((end - start) / interval + 2))`` with ``start=.5, end=.95,
  interval=.05`` (l. 33). ``(0.95 - 0.5) / 0.05 + 2`` is 10.999999999999998 in floating point, so
  ``int`` gives **10** thresholds .50, .55, …, .95 (not 11); a prediction counts at threshold θ
  when ``|pred − gt| / gt <= 1 − θ``, compared in floating point (``1 − 0.55`` is
  0.44999999999999996, so a relative error of exactly 0.45 fails that threshold);
* ``to_float`` (l. 101–106): ``float(x)`` or ``None``;
* ``vsibench_process_results`` (l. 108–123): MCA ``exact_match(fuzzy_matching(pred), gt)``;
  NA ``MRA(to_float(fuzzy_matching(pred)), to_float(gt))``, a ``TypeError`` (an unreadable
  number gives ``None``) scoring ``WORST_CASE_FOR_METRICS`` = 0; a ground truth of 0 would raise
  ``ZeroDivisionError`` (not caught);
* ``vsibench_aggregate_results`` (l. 125–185): the mean per question type (pandas ``groupby``,
  sorted keys), the three ``object_rel_direction_{easy,medium,hard}`` accuracies replaced by
  their unweighted mean (l. 146–151), and ``overall`` = the unweighted mean of the remaining
  eight per-type scores (l. 153) — **not** a mean over items; all reported ×100 (l. 157–175).

lmms-eval @ 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3 (``lmms_eval/tasks/vsibench/utils.py``),
transcribed as ``lmms_*``: the same MCA reader, MRA and aggregation, but numeric replies are read
by ``extract_number`` (l. 201–257: the first number token, digits or English number words,
"three hundred and twenty-one"), ``object_rel_direction_*`` popped unconditionally
(``_compute_all_subscores`` l. 287–316, a ``KeyError`` when one is missing) and each metric
returned as a fraction rounded to 6 places (l. 319–354), not ×100. Its ``vsibench_debiased``
task reads the HF config ``debiased`` of ``nyu-visionx/VSI-Bench`` (``vsibench_debiased.yaml``);
``vsibench_pruned.yaml`` reads config ``full`` (as committed).

Frame sampling is done by each model wrapper, not by the task; ``evaluate_all_in_one.sh``
(l. 18, 74–131) runs the open models at ``max_frames_num=32`` (InternVL2 at 8, GPT-4o at 16;
Gemini uploads the whole video). Transcribed index rules (frame positions in a video of ``n``
decoded frames):

* decord uniform (``models/llava_onevision.py`` ``load_video`` l. 377–386, same in
  ``llava_vid.py`` l. 275–284 and ``longva.py`` l. 321–330): ``np.linspace(0, n - 1, k, dtype=int)``;
* PyAV (``models/model_utils/load_video.py`` ``read_video_pyav`` l. 31–71): ``min(n, k)``
  positions by the same linspace, plus the last frame appended when missing;
* GPT-4o (``models/gpt4v.py`` ``encode_video`` l. 120–129): linspace over ``n`` with the last
  frame appended when missing;
* VILA (``models/vila.py`` ``load_video`` l. 216–222): ``np.linspace(0, n - 2, k, dtype=int)``;
* InternVL2 (``models/internvl2.py`` ``get_index`` l. 91–100): segment midpoints
  ``int(start + seg/2 + round(seg * i))`` with ``seg = (n - 1) / k``;
* lmms-eval's own sampler for frame-list models (``sample_vsibench_video_frames`` l. 105–119):
  ``np.linspace(0, n - 1, min(k, n), dtype=int)``, default ``k = 32``.

VSI-Bench-Debiased: the HF dataset's ``create_pq.py`` (huggingface.co/datasets/nyu-visionx/VSI-Bench,
read through the docs index; commit not recorded there) reads ``pruned_ids.txt`` (one id a line)
and ``test.jsonl``, marks ``pruned = df["id"].astype(str).isin(pruned_ids)``, and writes the
non-pruned rows to ``test_debiased.parquet`` and the pruned ones to ``test_pruned.parquet``
(``index=False``). The ids come from Iterative Bias Pruning (arXiv 2511.04655).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from functools import partial

import numpy as np

MCA_QUESTION_TYPES = [
    "object_rel_direction_easy",
    "object_rel_direction_medium",
    "object_rel_direction_hard",
    "object_rel_distance",
    "route_planning",
    "obj_appearance_order",
]
NA_QUESTION_TYPES = [
    "object_abs_distance",
    "object_counting",
    "object_size_estimation",
    "room_size_estimation",
]

WORST_CASE_FOR_METRICS = {"accuracy": 0.0, "MRA:.5:.95:.05": 0.0}

REPORT_ORDER = [
    "object_counting",
    "object_abs_distance",
    "object_size_estimation",
    "room_size_estimation",
    "object_rel_distance",
    "object_rel_direction",
    "route_planning",
    "obj_appearance_order",
]
"""``utils.py`` l. 159–168."""


def fuzzy_matching(pred: str) -> str:
    """l. 81–82, verbatim."""
    return pred.split(" ")[0].rstrip(".").strip()


def exact_match(pred: str, target: str) -> float:
    """l. 84–85, verbatim."""
    return 1.0 if pred.lower() == target.lower() else 0.0


def abs_dist_norm(pred: float, target: float) -> float:
    """l. 87–88, verbatim."""
    return abs(pred - target) / target


def mean_relative_accuracy(pred: float, target: float, start: float, end: float, interval: float) -> float:
    """l. 90–94, verbatim."""
    num_pts = (end - start) / interval + 2
    conf_intervs = np.linspace(start, end, int(num_pts))
    accuracy = abs_dist_norm(pred, target) <= 1 - conf_intervs
    return accuracy.mean()


MRA = partial(mean_relative_accuracy, start=0.5, end=0.95, interval=0.05)
"""``METRICS_FOR_NA`` l. 32–34."""


def mra_thresholds() -> list[float]:
    """The thresholds ``mean_relative_accuracy`` builds for .5:.95:.05 (ten of them)."""
    start, end, interval = 0.5, 0.95, 0.05
    return np.linspace(start, end, int((end - start) / interval + 2)).tolist()


def to_float(pred: object) -> float | None:
    """l. 101–106, verbatim."""
    try:
        return float(pred)  # type: ignore[arg-type]
    except BaseException:
        return None


def process_result(doc: Mapping[str, object], prediction: str) -> dict[str, object]:
    """``vsibench_process_results`` l. 108–123: the doc with ``prediction`` and its metric."""
    doc = dict(doc)
    doc["prediction"] = prediction
    question_type = doc["question_type"]
    if question_type in MCA_QUESTION_TYPES:
        doc["accuracy"] = exact_match(fuzzy_matching(prediction), str(doc["ground_truth"]))
    elif question_type in NA_QUESTION_TYPES:
        try:
            doc["MRA:.5:.95:.05"] = MRA(to_float(fuzzy_matching(prediction)), to_float(doc["ground_truth"]))
        except TypeError:
            doc["MRA:.5:.95:.05"] = WORST_CASE_FOR_METRICS["MRA:.5:.95:.05"]
    else:
        raise ValueError(f"Unknown question type: {question_type}")
    return doc


def _per_type(results: Sequence[Mapping[str, object]]) -> dict[str, float]:
    """``vsibench_aggregate_results`` l. 126–144: mean per question type, types sorted as
    pandas ``groupby`` sorts them (``np.mean`` is the reduction ``Series.mean`` uses)."""
    groups: dict[str, list[float]] = {}
    for r in results:
        groups.setdefault(str(r["question_type"]), []).append(r)  # type: ignore[arg-type]
    output: dict[str, float] = {}
    for question_type in sorted(groups):
        rows = groups[question_type]
        if question_type in MCA_QUESTION_TYPES:
            values = np.array([row["accuracy"] for row in rows], dtype=float)
            output[f"{question_type}_accuracy"] = float(np.mean(values))
        elif question_type in NA_QUESTION_TYPES:
            key = "MRA:.5:.95:.05"
            output[f"{question_type}_{key}"] = float(np.mean(np.array([row[key] for row in rows], dtype=float)))
        else:
            raise ValueError(f"Unknown question type: {question_type}")
    return output


def aggregate(results: Sequence[Mapping[str, object]]) -> OrderedDict:
    """``vsibench_aggregate_results`` l. 125–175: ``overall`` and per-type scores, ×100."""
    output = _per_type(results)
    if "object_rel_direction_easy_accuracy" in output:
        output["object_rel_direction_accuracy"] = (
            sum(
                [
                    output.pop("object_rel_direction_easy_accuracy"),
                    output.pop("object_rel_direction_medium_accuracy"),
                    output.pop("object_rel_direction_hard_accuracy"),
                ]
            )
            / 3.0
        )
    output["overall"] = sum([v for v in output.values()]) / len(output)  # noqa: C416  (verbatim)
    report: OrderedDict = OrderedDict()
    report["overall"] = output["overall"] * 100.0
    for question_type in REPORT_ORDER:
        for metric in ["accuracy", "MRA:.5:.95:.05"]:
            key = f"{question_type}_{metric}"
            if key in output:
                report[key] = output[key] * 100.0
    return report


# --- lmms-eval @ 75571cf ----------------------------------------------------------------------

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000,
}  # fmt: skip
"""lmms-eval ``utils.py`` l. 12–43."""
_NUM_RE = re.compile(r"-?\d+(?:\.\d+)?")


def lmms_extract_number(text: object) -> float | None:
    """lmms-eval ``extract_number`` l. 201–257, verbatim: the first number token wins."""
    if text is None:
        return None
    s = str(text).strip().lower()
    if not s:
        return None

    digit_match = _NUM_RE.search(s)
    word_run_start = None
    word_run_tokens: list[str] = []
    for m in re.finditer(r"[a-z]+", s):
        tok = m.group(0)
        if word_run_start is None:
            if tok in _NUMBER_WORDS:
                word_run_start = m.start()
                word_run_tokens.append(tok)
        else:
            if tok == "and":
                continue
            if tok in _NUMBER_WORDS:
                word_run_tokens.append(tok)
            else:
                break

    digit_first = digit_match is not None and (word_run_start is None or digit_match.start() < word_run_start)
    if digit_first:
        try:
            return float(digit_match.group(0))  # type: ignore[union-attr]
        except ValueError:
            pass

    if word_run_start is None:
        return None

    total, current = 0, 0
    for tok in word_run_tokens:
        val = _NUMBER_WORDS[tok]
        if val == 100:
            current = max(current, 1) * 100
        elif val == 1000:
            total += max(current, 1) * 1000
            current = 0
        else:
            current += val
    return float(total + current)


def lmms_process_result(doc: Mapping[str, object], prediction: str) -> dict[str, object]:
    """lmms-eval ``vsibench_process_results`` l. 260–272: NA replies read by ``extract_number``."""
    doc = dict(doc)
    doc["prediction"] = prediction
    question_type = doc["question_type"]
    if question_type in MCA_QUESTION_TYPES:
        doc["accuracy"] = exact_match(fuzzy_matching(prediction), str(doc["ground_truth"]))
    elif question_type in NA_QUESTION_TYPES:
        try:
            doc["MRA:.5:.95:.05"] = MRA(lmms_extract_number(prediction), to_float(doc["ground_truth"]))
        except TypeError:
            doc["MRA:.5:.95:.05"] = WORST_CASE_FOR_METRICS["MRA:.5:.95:.05"]
    else:
        raise ValueError(f"Unknown question type: {question_type}")
    return doc


def lmms_subscores(results: Sequence[Mapping[str, object]]) -> dict[str, float]:
    """lmms-eval ``_compute_all_subscores`` l. 287–316 (unguarded pops: ``KeyError`` when a
    relative-direction level is absent); ``vsibench_aggregate_*`` round each to 6 places."""
    output = _per_type(results)
    output["object_rel_direction_accuracy"] = (
        sum(
            [
                output.pop("object_rel_direction_easy_accuracy"),
                output.pop("object_rel_direction_medium_accuracy"),
                output.pop("object_rel_direction_hard_accuracy"),
            ]
        )
        / 3.0
    )
    output["overall"] = sum([v for v in output.values()]) / len(output)  # noqa: C416  (verbatim)
    return {k: round(v, 6) for k, v in output.items()}


# --- frame positions --------------------------------------------------------------------------


def decord_uniform_indices(total_frame_num: int, max_frames_num: int) -> list[int]:
    """``llava_onevision.py`` ``load_video`` l. 383–384 (also llava_vid, longva)."""
    return np.linspace(0, total_frame_num - 1, max_frames_num, dtype=int).tolist()


def pyav_indices(total_frames: int, num_frm: int = 8) -> list[int]:
    """``model_utils/load_video.py`` ``read_video_pyav`` l. 38–44."""
    sampled_frm = min(total_frames, num_frm)
    indices = np.linspace(0, total_frames - 1, sampled_frm, dtype=int)
    if total_frames - 1 not in indices:
        indices = np.append(indices, total_frames - 1)
    return indices.tolist()


def gpt4v_indices(total_frame_num: int, for_get_frames_num: int) -> list[int]:
    """``gpt4v.py`` ``encode_video`` l. 122–129."""
    uniform_sampled_frames = np.linspace(0, total_frame_num - 1, for_get_frames_num, dtype=int)
    if total_frame_num - 1 not in uniform_sampled_frames:
        uniform_sampled_frames = np.append(uniform_sampled_frames, total_frame_num - 1)
    return uniform_sampled_frames.tolist()


def vila_indices(total_frame_num: int, max_frames_num: int) -> list[int]:
    """``vila.py`` ``load_video`` l. 219–221: up to ``n - 2``, never the last frame."""
    return np.linspace(0, total_frame_num - 2, max_frames_num, dtype=int).tolist()


def internvl2_indices(
    fps: float, max_frame: int, first_idx: int = 0, num_segments: int = 32, bound: tuple[float, float] | None = None
) -> list[int]:
    """``internvl2.py`` ``get_index`` l. 91–100 (``max_frame = len(vr) - 1``, l. 105)."""
    if bound:
        start, end = bound[0], bound[1]
    else:
        start, end = -100000, 100000
    start_idx = max(first_idx, round(start * fps))
    end_idx = min(round(end * fps), max_frame)
    seg_size = float(end_idx - start_idx) / num_segments
    frame_indices = np.array(
        [int(start_idx + (seg_size / 2) + np.round(seg_size * idx)) for idx in range(num_segments)]
    )
    return frame_indices.tolist()


def lmms_frame_indices(total_frames: int, num_frames: int = 32) -> list[int]:
    """lmms-eval ``sample_vsibench_video_frames`` l. 113–117."""
    num_frames = min(num_frames, total_frames)
    return np.linspace(0, total_frames - 1, num_frames, dtype=int).tolist()


def video_relpath(doc: Mapping[str, object]) -> str:
    """``vsibench_doc_to_visual`` l. 50: ``{dataset}/{scene_name}.mp4`` under the cache dir."""
    return str(doc["dataset"]) + "/" + str(doc["scene_name"]) + ".mp4"


# --- VSI-Bench-Debiased -----------------------------------------------------------------------


def split_debiased(
    records: Iterable[Mapping[str, object]], pruned_ids_text: str
) -> tuple[list[Mapping[str, object]], list[Mapping[str, object]]]:
    """``create_pq.py`` (HF ``nyu-visionx/VSI-Bench``): ``pruned_ids = f.read().splitlines()``;
    ``pruned = str(id) in pruned_ids``; returns ``(debiased, pruned)`` in file order."""
    pruned_ids = set(pruned_ids_text.splitlines())
    debiased: list[Mapping[str, object]] = []
    pruned: list[Mapping[str, object]] = []
    for rec in records:
        (pruned if str(rec["id"]) in pruned_ids else debiased).append(rec)
    return debiased, pruned
