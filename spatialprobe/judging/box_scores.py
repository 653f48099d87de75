"""ISM (Box) numbers: accuracy and macro-F1 of judged images, per-object figures, the table,
and the benchmark-level scores of the position judges that come from a benchmark.

With ``--rule t2i-compbench`` a judge run also reports T2I-CompBench's 2-D spatial score, with
``--rule geneval`` GenEval's position-prompt correctness, each computed per image as the
benchmark's own script does from the two best boxes and the image's gold relation (the
relation its prompt asks for): :func:`t2i_compbench_image_score`, :func:`geneval_position_correct`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from spatialprobe.detectors import rules
from spatialprobe.metrics.classification import label_statistics
from spatialprobe.metrics.estimates import point_estimates
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.runner.summary import Metric

T2I_COMPBENCH_FLOOR = 0.5
"""T2I-CompBench sets an image score below 0.5 to 0 (``if (score<0.5): score=0``)."""
GENEVAL_CONFIDENCE = 0.3
"""GenEval's default confidence cut (``THRESHOLD = float(args.options.get('threshold', 0.3))``):
only boxes scoring strictly above it count. ``--rule-arg confidence_threshold=...`` changes it."""
BENCHMARK_ARGS = {"geneval": {"confidence_threshold": GENEVAL_CONFIDENCE}}
"""Rule arguments that only the benchmark score reads (not the position judge), with defaults."""
BENCHMARK_RULES: dict[str, Callable[..., tuple[float, str]]] = {
    "t2i-compbench": rules.t2i_compbench_judge, "geneval": rules.geneval_judge}
"""The position judges that come from a benchmark, whose score a judge run also reports."""


def benchmark_settings(rule: str, rule_args: Mapping[str, Any]) -> dict[str, Any]:
    """Every argument the benchmark score of ``rule`` reads, defaults filled in ({} for other rules)."""
    if rule not in BENCHMARK_RULES:
        return {}
    params = inspect.signature(BENCHMARK_RULES[rule]).parameters.values()
    defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    return {**defaults, **BENCHMARK_ARGS.get(rule, {}), **rule_args}


def scores(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy and macro-F1 (percent, the registered ``accuracy`` and ``macro_f1_seen``); None
    for an empty set (nothing was measured).

    Macro-F1 averages over the labels that occur in gold or predictions (scikit-learn's
    default), so a small subset is not charged for labels it never contains.
    """
    if not rows:
        return {"accuracy": None, "macro_f1": None, "n": 0}
    gold = [r["gold"] for r in rows]
    pred = [r["pred"] for r in rows]
    seen = sorted({*gold, *pred}, key=str)  # scikit-learn's label order
    figures = label_statistics(gold, pred, seen, ("accuracy", "macro_f1_seen"))
    return {"accuracy": figures["accuracy"], "macro_f1": figures["macro_f1_seen"], "n": len(rows)}


def per_object(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """For each object: images it appears in, accuracy there, and how often it was detected."""
    stats: dict[str, list[tuple[bool, bool]]] = {}
    for r in rows:
        for obj, found in ((r["obj_a"], r["found_a"]), (r["obj_b"], r["found_b"])):
            stats.setdefault(obj, []).append((r["pred"] == r["gold"], found))
    return {obj: {"n": len(v), "accuracy": 100.0 * sum(c for c, _ in v) / len(v),
                  "detected": 100.0 * sum(f for _, f in v) / len(v)}
            for obj, v in sorted(stats.items())}


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _cell(metric: Mapping[str, Any]) -> str:
    """``54.0 [40.0, 62.5]``: the value and its 95 % interval, as every table shows them."""
    from spatialprobe.reports.tables import pm

    return pm(metric)


RULE_HEADLINES = {"t2i-compbench": "t2i_compbench_score", "geneval": "geneval_position_accuracy",
                  "heim": "heim_spatial_accuracy", "t2i-compbench-3d": "t2i_compbench_3d_score"}
"""The score each benchmark's rule defines: its table's headline (other rules: ISM accuracy)."""


Box4 = tuple[float, float, float, float]


def _box_pairs() -> list[tuple[Box4, Box4]]:
    """A fixed grid of box A against box B (40-60 square): every offset, size and nesting."""
    b: Box4 = (40.0, 40.0, 60.0, 60.0)
    pairs: list[tuple[Box4, Box4]] = [((45.0, 45.0, 55.0, 55.0), b), ((30.0, 30.0, 70.0, 70.0), b)]
    for x in range(0, 100, 5):
        for y in range(0, 100, 5):
            pairs += [((float(x), float(y), x + w, y + h), b) for w in (4.0, 12.0, 30.0) for h in (4.0, 12.0, 30.0)]
    return pairs


@cache
def answerable(task: str, rule: str) -> tuple[str, ...]:
    """The labels of a position ``task`` that ``rule`` (its corrected judge) can give an image: the
    answers it gives over a fixed grid of box pairs. A label it never gives (``inside`` for every
    rule but VDG's; ``beside`` where ``left of`` and ``right of`` come first and every beside
    pair is one of them) counts wrong whenever an image's prompt asks it. Comparison and 3-D
    tasks: every label."""
    from spatialprobe import tasks
    from spatialprobe.registry import lookup

    labels = tasks.labels_of(task)
    if tasks.get(task).judge_rule != "position" or rule == "t2i-compbench-3d":
        return labels
    judge = lookup("position-judge", rule)
    found = {rules.classify_position(judge, a, b, labels)[0] for a, b in _box_pairs()}
    return tuple(label for label in labels if label in found)


def rule_line(summary: Mapping[str, Any]) -> str:
    """table.md's line naming the rule, its mode and the task's labels it can answer."""
    details, task = summary["details"], str(summary["task"])
    rule, mode = details.get("rule"), details.get("mode")
    if rule is None:
        return ""
    can = answerable(task, rule)
    never = [label for label in tasks_labels(task) if label not in can]
    line = f"Rule: {rule}, mode {mode}. On {task} it can answer {', '.join(can)}"
    if never:
        line += (f"; never {', '.join(never)} (an image whose prompt asks it counts wrong in accuracy and "
                 "macro-F1; the rule's own score asks each image's relation only)")
    return line + ".\n\n"


def tasks_labels(task: str) -> tuple[str, ...]:
    from spatialprobe import tasks

    return tasks.labels_of(task)


def headline_line(summary: Mapping[str, Any]) -> str:
    """table.md's headline: the score the rule defines (its benchmark's), else ISM accuracy."""
    from spatialprobe.reports.tables import pm

    m, rule = summary["metrics"], summary["details"].get("rule")
    name = RULE_HEADLINES.get(str(rule))
    if name is not None and name in m:
        return "**Headline (the rule's own score)**: " + benchmark_lines({name: m[name]})
    return f"**Headline**: accuracy {pm(m['accuracy'])} % (ISM, whole set)\n\n"


def table_markdown(summary: Mapping[str, Any]) -> str:
    from spatialprobe.reports.tables import ci_suffix, header_of, intervals_line

    m = summary["metrics"]
    accuracy, f1 = (header_of(summary, name) for name in ("accuracy", "macro_f1"))  # the registry's
    title = f"# ISM (Box): {summary['task']} - {summary['model']}"
    if summary.get("untrained"):
        title += " (UNTRAINED test components: numbers are meaningless)"
    ratio = m["recognized_ratio"]
    headline = RULE_HEADLINES.get(str(summary["details"].get("rule")))
    return (f"{title}\n\n" + rule_line(summary) + headline_line(summary) +
            f"| subset | images | {accuracy} (%) | {f1} (%) |\n|---|---:|---:|---:|\n"
            f"| whole set (unrecognized: random guess) | {m['accuracy']['n']} | "
            f"{_cell(m['accuracy'])} | {_cell(m['macro_f1'])} |\n"
            f"| recognized subset | {m['recognized_accuracy']['n']} | "
            f"{_cell(m['recognized_accuracy'])} | {_cell(m['recognized_macro_f1'])} |\n\n"
            f"Recognized ratio: {_pct(ratio['mean'])}%{ci_suffix(ratio) if ratio['mean'] is not None else ''}\n\n"
            + protocol_line(summary["details"]) + benchmark_lines({k: v for k, v in m.items() if k != headline})
            + (f"{intervals_line(summary)}\n" if summary.get("intervals") else "") +
            "| object | images | accuracy (%) | detected (%) |\n|---|---:|---:|---:|\n"
            + "".join(f"| {obj} | {v['n']} | {v['accuracy']:.1f} | {v['detected']:.1f} |\n"
                      for obj, v in summary["details"]["per_object"].items()))


# ---- benchmark-level scores --------------------------------------------------------------------

def t2i_compbench_image_score(row: Mapping[str, Any], relation: str, **judge_args: float) -> float:
    """One image's score as T2I-CompBench's ``UniDet_eval/2D_spatial_eval.py`` (``main``) gives it:
    0.25 x the confidence of each of the two objects found, plus half the IoU-damped position
    score of the pair (:func:`rules.t2i_compbench_judge`, its ``determine_position``) when both are
    found; a total under 0.5 is set to 0. ``row`` holds the best box and score of each object."""
    score = 0.0
    if row["found_a"]:
        score += 0.25 * row["score_a"]
    if row["found_b"]:
        score += 0.25 * row["score_b"]
    if row["found_a"] and row["found_b"]:
        position, _ = rules.t2i_compbench_judge(row["box_a"], row["box_b"], relation, **judge_args)
        score += position / 2
    return 0.0 if score < T2I_COMPBENCH_FLOOR else score


def geneval_position_correct(row: Mapping[str, Any], relation: str,
                             confidence_threshold: float = GENEVAL_CONFIDENCE, margin: float = 0.1) -> bool:
    """GenEval's correctness of a position prompt (``evaluation/evaluate_images.py``,
    ``evaluate_image`` and ``evaluate``): the top box of each object must score strictly above
    the confidence cut, and the relation must be in ``relative_position`` of A's top box to B's
    (:func:`rules.geneval_relations`, position threshold ``margin``). ``beside``, which GenEval
    has no prompt for, holds as ``left of`` or ``right of``; ``inside`` never does."""
    for found, score in ((row["found_a"], row["score_a"]), (row["found_b"], row["score_b"])):
        if not found or score <= confidence_threshold:
            return False
    holds, _ = rules.geneval_judge(row["box_a"], row["box_b"], relation, margin=margin)
    return holds == 1.0


def benchmark_metrics(rule: str, rows: Sequence[dict[str, Any]], rule_args: Mapping[str, Any],
                      protocol: Mapping[str, Any] | None = None) -> dict[str, Metric]:
    """The benchmark's own number for a rule from a benchmark (else nothing), over all images,
    and, when the images are of that benchmark's prompt file (``protocol``, see
    :func:`prompt_protocol`), its prompt-level score beside it (:func:`prompt_level`).

    Each image's value is added to its row (``t2i_compbench_score`` or ``geneval_correct``), so
    predictions.jsonl shows it. Measured once (``std`` None) by the registered ``share`` or
    ``mean``, as the spine measures the run's metrics (which these names decide).
    """
    metrics = _image_level(rule, rows, rule_args)
    if metrics and protocol is not None and protocol.get("rule") == rule and rule in PROMPT_LEVEL:
        field, name = PROMPT_LEVEL[rule]
        how = "share" if protocol["prompt_score"] == "any" else "mean"
        metrics.update(_measured(prompt_level(rows, field, protocol["prompt_score"]), "value", name, how))
    return metrics


def _measured(rows: Sequence[Mapping[str, Any]], field: str, name: str, how: str) -> dict[str, Metric]:
    """``name``: the registered statistic ``how`` (``share`` or ``mean``) of the rows' ``field``,
    as the spine computes it (:func:`~spatialprobe.metrics.estimates.point_estimates`)."""
    return point_estimates(rows, Resampling((), (), pred=field, metrics={name: how}))


def _image_level(rule: str, rows: Sequence[dict[str, Any]], rule_args: Mapping[str, Any]
                 ) -> dict[str, Metric]:
    from spatialprobe.judging import modes

    if not rows:
        return {}
    if rule in modes.BENCHMARKS:  # heim, t2i-compbench-3d: each row holds its value
        metric, field, how = modes.BENCHMARKS[rule]
        return _measured(rows, field, metric, how)
    if rule == "t2i-compbench":
        for row in rows:
            row["t2i_compbench_score"] = t2i_compbench_image_score(row, row["gold"], **rule_args)
        return _measured(rows, "t2i_compbench_score", "t2i_compbench_score", "mean")
    if rule == "geneval":
        cut = float(rule_args.get("confidence_threshold", GENEVAL_CONFIDENCE))
        margin = float(rule_args.get("margin", 0.1))
        for row in rows:
            row["geneval_correct"] = geneval_position_correct(row, row["gold"], cut, margin)
        return _measured(rows, "geneval_correct", "geneval_position_accuracy", "share")
    return {}


# ---- prompt sets of a benchmark (synthesis/benchmark_prompts.py) ---------------------------------

PROMPT_LEVEL = {"t2i-compbench": ("t2i_compbench_score", "t2i_compbench_prompt_score"),
                "geneval": ("geneval_correct", "geneval_prompt_accuracy"),
                "t2i-compbench-3d": ("t2i_compbench_3d_score", "t2i_compbench_3d_prompt_score")}
"""Rule -> (the row field of an image's benchmark value, the prompt-level metric's name)."""


def prompt_protocol(metas: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The benchmark protocol (``benchmark`` in the prompt metadata) every judged image's prompt
    shares; None when the prompts carry none, or differing ones."""
    found = {json.dumps(meta.get("benchmark"), sort_keys=True) for meta in metas}
    return json.loads(found.pop()) if len(found) == 1 else None


def prompt_level(rows: Sequence[Mapping[str, Any]], field: str, how: str) -> list[dict[str, Any]]:
    """One row per prompt (``instance_id``), in first-image order, whose ``value`` is its images'
    ``field`` combined as the benchmark does: ``any`` image correct (GenEval's
    ``evaluation/summary_scores.py``: ``df.groupby('metadata')['correct'].any()``) or the
    ``mean`` of the image scores."""
    images = _by_prompt(rows)
    combine = {"any": lambda v: bool(any(v)), "mean": lambda v: sum(v) / len(v)}[how]
    return [{"instance_id": pid, "obj_a": own[0]["obj_a"], "obj_b": own[0]["obj_b"], "images": len(own),
             "value": combine([r[field] for r in own])} for pid, own in images.items()]


def prompt_resampling(benchmark: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                      protocol: Mapping[str, Any] | None, clusters: tuple[str, ...]) -> list[Resampling]:
    """The interval of a prompt-level score: its prompts resampled by the same clusters."""
    specs = []
    for field, name in PROMPT_LEVEL.values():
        if name in benchmark and protocol is not None:
            how = protocol["prompt_score"]
            specs.append(Resampling((), clusters, key=("instance_id",), pred="value",
                                    rows=prompt_level(rows, field, how),
                                    metrics={name: "share" if how == "any" else "mean"}))
    return specs


def protocol_record(protocol: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], rule: str
                    ) -> dict[str, Any]:
    """The summary's ``details.prompt_set``: the protocol, and where this judgement departs from it."""
    counts = sorted({len(v) for v in _by_prompt(rows).values()})
    departs = []
    if counts != [protocol["images_per_prompt"]]:
        departs.append(f"{'/'.join(map(str, counts))} image(s) per prompt judged, where its protocol "
                       f"makes {protocol['images_per_prompt']}")
    if rule != protocol["rule"]:
        departs.append(f"judged with --rule {rule}, where its protocol uses --rule {protocol['rule']} "
                       "(no prompt-level score)")
    return {**protocol, "images_per_prompt_judged": counts, "departures": departs}


def _by_prompt(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    found: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        found.setdefault(row["instance_id"], []).append(row)
    return found


def protocol_line(details: Mapping[str, Any]) -> str:
    """table.md's line on the benchmark prompt set judged (nothing for other prompts)."""
    record = details.get("prompt_set")
    if not record:
        return ""
    line = f"Prompts: {record['title']} ({record['images_per_prompt']} images per prompt, --rule {record['rule']})"
    return line + (f"; departs from it: {'; '.join(record['departures'])}" if record["departures"] else "") + "\n\n"


BENCHMARK_LINES = (
    ("t2i_compbench_score", "T2I-CompBench 2-D spatial score (mean over {n} images, 0-1; its "
                            "UniDet_eval/2D_spatial_eval.py)", 4, ""),
    ("geneval_position_accuracy", "GenEval position accuracy (correct images of {n}; its "
                                  "evaluation/evaluate_images.py)", 1, "%"),
    ("t2i_compbench_prompt_score", "T2I-CompBench prompt-level score (mean over {n} prompts of "
                                   "their images' mean)", 4, ""),
    ("geneval_prompt_accuracy", "GenEval prompt-level accuracy (prompts with a correct image, of "
                                "{n}; its evaluation/summary_scores.py)", 1, "%"),
    ("t2i_compbench_3d_score", "T2I-CompBench++ 3-D spatial score (mean over {n} images, 0-1; its "
                               "UniDet_eval/3D_spatial_eval.py)", 4, ""),
    ("heim_spatial_accuracy", "HEIM spatial accuracy (correct images of {n}; HELM's "
                              "detectors/vitdet.py compute_score_spatial)", 1, "%"),
    ("t2i_compbench_3d_prompt_score", "T2I-CompBench++ 3-D prompt-level score (mean over {n} prompts of "
                                      "their images' mean)", 4, ""))
"""table.md's line of each benchmark score: metric, its words, digits, unit."""


def benchmark_lines(metrics: Mapping[str, Any]) -> str:
    """table.md lines for the benchmark scores present in a summary's metrics."""
    from spatialprobe.reports.tables import ci_suffix

    lines = ""
    for name, words, digits, unit in BENCHMARK_LINES:
        if name in metrics:
            m = metrics[name]
            lines += f"{words.format(n=m['n'])}: {m['mean']:.{digits}f}{unit}{ci_suffix(m, digits)}\n\n"
    return lines
