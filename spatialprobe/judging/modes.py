"""``--mode reference|corrected``: which version of a rule judges, and the rules that need more
than the best box of each object (HEIM's box counts, T2I-CompBench++'s depth).

``corrected`` (the default) is today's rule of each name with its documented fixes;
``reference`` is what the peer's code computes, quirks included (:mod:`detectors.rules_reference`,
:mod:`detectors.rules_heim`, :mod:`detectors.rules_3d`; docs/judge.md's table of modes).
:func:`judge_mode_image` gives an image's row where the mode or the rule changes how it is
judged, and None where :func:`judging.box.judge_image`'s ordinary path is the rule's (GenEval
and VISOR are exact in both modes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spatialprobe import tasks
from spatialprobe.detectors import rules
from spatialprobe.detectors import rules_3d as r3
from spatialprobe.detectors import rules_heim as heim
from spatialprobe.detectors import rules_reference as ref
from spatialprobe.detectors.base import Detection, best_per_object
from spatialprobe.errors import UsageError

MODES = ("reference", "corrected")
DEFAULT_MODE = "corrected"
SCALE_RULES = {"area*depth^2": (rules.size_rule, rules.area, "area"),
               "height*depth": (rules.height_rule, rules.box_height, "height")}
"""Comparison tasks have one rule each (no thresholds): area*depth^2 or height*depth."""
DEPTH_RULES = {"t2i-compbench-3d": r3.RELATIONS_3D}
"""Position judges that read a depth map, and the relations they know (the task ``posrel3d``)."""
DEFAULT_RULES = {"posrel3d": "t2i-compbench-3d"}
"""A position task's default rule when it is not VDG."""
FIXED_THRESHOLDS = {"vdg", "vdg-legacy", "heim"}
"""Rules whose reference has no arguments (the release's and HELM's comparisons are fixed)."""
REFERENCE_RULES = {"vdg", "vdg-legacy", "t2i-compbench", "heim", "visor", "geneval", *DEPTH_RULES}
"""The position rules that have a reference mode (the peers' code this toolkit transcribes)."""
NO_ARGUMENTS = {"heim", *DEPTH_RULES}
"""Rules without arguments in either mode."""
NO_REFERENCE = {"visor", "geneval"}
"""Rules equal to their peer's code in both modes (tests/test_judge_rules.py, test_judge_visor.py)."""


def default_rule(task: str) -> str:
    return DEFAULT_RULES.get(task, "vdg")


def check_rule(task: str, rule: str, mode: str, rule_args: Mapping[str, Any], depth_region: str | None
               ) -> None:
    """Refuse a mode, rule or argument that cannot judge ``task``, in one sentence."""
    if mode not in MODES:
        raise UsageError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}.")
    three_d = task in DEFAULT_RULES
    if rule in DEPTH_RULES and not three_d:
        raise UsageError(f"--rule {rule} judges the 3-D relations of judge posrel3d, not {task}.")
    if three_d and rule not in DEPTH_RULES:
        raise UsageError(f"judge {task} needs a rule that reads depth ({', '.join(sorted(DEPTH_RULES))}); "
                         f"{rule} judges 2-D relations only.")
    if mode == "reference" and tasks.get(task).judge_rule not in SCALE_RULES and rule not in REFERENCE_RULES:
        raise UsageError(f"--rule {rule} has no reference mode (rules with one: "
                         f"{', '.join(sorted(REFERENCE_RULES))}); use --mode corrected.")
    if rule in NO_ARGUMENTS and rule_args:
        raise UsageError(f"--rule-arg does not apply to --rule {rule}: it has no arguments.")
    if mode == "reference" and rule in FIXED_THRESHOLDS and rule_args:
        raise UsageError(f"--rule-arg does not apply to --rule {rule} --mode reference: the peer's "
                         "comparisons have no arguments.")
    if mode == "reference" and depth_region not in (None, "release"):
        raise UsageError("--depth-region covered does not apply to --mode reference: the release "
                         "averages the int()-truncated box.")


def reads_depth(task: str, rule: str | None) -> bool:
    """size and height read depth, and of the position tasks the 3-D relations (``posrel3d``)."""
    return tasks.get(task).judge_rule in SCALE_RULES or task in DEFAULT_RULES or rule in DEPTH_RULES


def pair_row(det_a: Detection | None, det_b: Detection | None) -> dict[str, Any]:
    """A row's boxes and scores of the two objects (pred None until a rule answers)."""
    return {"found_a": det_a is not None, "found_b": det_b is not None,
            "box_a": list(det_a.box) if det_a else None, "box_b": list(det_b.box) if det_b else None,
            "score_a": det_a.score if det_a else None, "score_b": det_b.score if det_b else None,
            "pred": None}


def unrecognized(row: dict[str, Any], names: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The row of an image missing a box of some object (it gets the seeded guess later)."""
    row["explanation"] = f"not recognized: no box for {', '.join(n for n, d in names if d is None)}"
    return row


def classified(row: dict[str, Any], judge: Callable[..., tuple[float, str]], box_a, box_b,
               labels: Sequence[str], **kwargs) -> dict[str, Any]:
    """The best-scoring label; a rule that finds no relation leaves the image not recognized."""
    pred, why = rules.classify_position(judge, box_a, box_b, labels, **kwargs)
    row["pred"] = None if pred == "none" else pred
    row["explanation"] = f"not recognized: {why}" if pred == "none" else why
    return row


def judge_mode_image(cfg, detections: Sequence[Detection], depth_map, meta: Mapping[str, Any],
                     labels: Sequence[str], judge_args: Mapping[str, Any]) -> dict[str, Any] | None:
    """The row of one image where the mode or rule has its own path (else None)."""
    if cfg.rule in DEPTH_RULES:
        return judge_3d(cfg.mode, detections, depth_map, meta, labels)
    if cfg.rule == "heim":
        return judge_heim(cfg.mode, detections, meta, labels)
    scale = tasks.get(cfg.task).judge_rule in SCALE_RULES
    if cfg.mode != "reference" or (cfg.rule in NO_REFERENCE and not scale):
        return None
    a, b = meta["obj_a"], meta["obj_b"]
    if cfg.rule == "t2i-compbench" and not scale:
        det_a, det_b = ref.first_of_class(detections, a), ref.first_of_class(detections, b)
    else:
        det_a, det_b = ref.release_best(detections, a), ref.release_best(detections, b)
    row = pair_row(det_a, det_b)
    if det_a is None or det_b is None:
        return unrecognized(row, ((a, det_a), (b, det_b)))
    if scale:  # the release's mean of a box with no pixel is NaN: "smaller" / "shorter"
        depth_of = lambda box: ref.release_mean_depth(depth_map, box)  # noqa: E731
        return without_nan(scale_row(row, str(tasks.get(cfg.task).judge_rule), det_a, det_b, depth_of, labels, (a, b)))
    if cfg.rule == "t2i-compbench":
        return classified(row, rules.t2i_compbench_judge, det_a.box, det_b.box, labels, **judge_args)
    if cfg.rule in ("vdg", "vdg-legacy"):
        return classified(row, ref.release_position_judge, det_a.box, det_b.box, labels)
    raise UsageError(f"--rule {cfg.rule} has no reference mode; use --mode corrected.")


def without_nan(row: dict[str, Any]) -> dict[str, Any]:
    """A NaN depth (the release's mean of a box with no pixel) is written as null, with the reason
    (predictions.jsonl stays standard JSON)."""
    nan = [key for key in ("depth_a", "depth_b") if key in row and math.isnan(row[key])]
    for key in nan:
        row[key] = None
    if nan:
        row["explanation"] = (f"{' and '.join(nan)}: the release's mean over a box with no pixel is NaN, and "
                              f"no comparison with NaN holds -> {row['pred']}")
    return row


def scale_row(row: dict[str, Any], rule_name: str, det_a: Detection, det_b: Detection,
              depth_of: Callable[[Any], float], labels: Sequence[str], names: tuple[str, str]
              ) -> dict[str, Any]:
    """size / height: area x depth^2 or height x depth, each box's depth from ``depth_of``. The
    release counts a best box without area (size) or height (height) as not recognized
    (code/size/image_probing_box.py: ``if size_a>0 and size_b>0``; height: ``height_a>0 and ...``)."""
    rule, measure, what = SCALE_RULES[rule_name]
    flat = [n for n, d in zip(names, (det_a, det_b), strict=True) if measure(d.box) <= 0]
    if flat:
        row["explanation"] = f"not recognized: box of zero {what} for {', '.join(flat)}"
        return row
    row["depth_a"], row["depth_b"] = depth_of(det_a.box), depth_of(det_b.box)
    row["pred"], row["explanation"] = rule(det_a.box, row["depth_a"], det_b.box, row["depth_b"], labels=labels)
    return row


def judge_heim(mode: str, detections: Sequence[Detection], meta: Mapping[str, Any], labels: Sequence[str]
               ) -> dict[str, Any]:
    """HEIM: reference needs exactly one box of each class (every box of it is read); corrected
    takes the best box of each. ``heim_correct``: the image's HEIM score for its gold relation."""
    a, b = meta["obj_a"], meta["obj_b"]
    if mode == "reference":
        boxes_a = [d.box for d in detections if d.label == a]
        boxes_b = [d.box for d in detections if d.label == b]
        first = {n: next((d for d in detections if d.label == n), None) for n in (a, b)}
        row = pair_row(first[a], first[b])
        row["boxes_found"] = [len(boxes_a), len(boxes_b)]
        row["heim_correct"] = heim.heim_reference(boxes_a, boxes_b, meta["label"], a == b)[0] == 1.0
        return classified(row, lambda _a, _b, rel: heim.heim_reference(boxes_a, boxes_b, rel, a == b),
                          None, None, labels)
    best = best_per_object(detections, [a, b])
    row = pair_row(best[a], best[b])
    det_a, det_b = best[a], best[b]
    if det_a is None or det_b is None:
        row["heim_correct"] = False
        return unrecognized(row, ((a, det_a), (b, det_b)))
    row["heim_correct"] = heim.heim_judge(det_a.box, det_b.box, meta["label"])[0] == 1.0
    return classified(row, heim.heim_judge, det_a.box, det_b.box, labels)


def judge_3d(mode: str, detections: Sequence[Detection], depth_map, meta: Mapping[str, Any],
             labels: Sequence[str]) -> dict[str, Any]:
    """T2I-CompBench++'s 3-D rule on the normalised disparity of ``depth_map``; the row keeps the
    image's benchmark score for its gold relation (``t2i_compbench_3d_score``)."""
    a, b = meta["obj_a"], meta["obj_b"]
    if mode == "reference":
        det_a, det_b = ref.t2i_3d_positions(detections, a, b)
        judge: Callable[..., tuple[float, str]] = r3.t2i_3d_reference
    else:
        best = best_per_object(detections, [a, b])
        det_a, det_b, judge = best[a], best[b], r3.t2i_3d_judge
    row = pair_row(det_a, det_b)
    row["t2i_compbench_3d_score"] = 0.25 * sum(d.score for d in (det_a, det_b) if d is not None)
    if det_a is None or det_b is None:
        return unrecognized(row, ((a, det_a), (b, det_b)))
    disparity = r3.normalised_disparity(depth_map)
    position, _ = judge(det_a.box, det_b.box, meta["label"], disparity)
    row["t2i_compbench_3d_score"] += position / 2
    return classified(row, judge, det_a.box, det_b.box, labels, disparity=disparity)


BENCHMARKS = {"heim": ("heim_spatial_accuracy", "heim_correct", "share"),
              "t2i-compbench-3d": ("t2i_compbench_3d_score", "t2i_compbench_3d_score", "mean")}
"""Benchmark scores of the new rules: (metric, per-image field, how images combine)."""
