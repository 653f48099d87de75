"""ISM (Box) numbers: accuracy and macro-F1 of judged images, per-object figures, the table,
and the rule's own benchmark score where its record has one (``JudgeRule.score``).

A rule with a score (GenEval, T2I-CompBench 2-D and 3-D, HEIM) gives each image its benchmark's
value for the image's gold relation (the relation its prompt asks for), computed from the row
(``Score.of_row``) or written when the image was judged, and combines the images as its
benchmark does; on the benchmark's own prompt file it also gives the prompt-level score.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from spatialprobe.detectors import rules
from spatialprobe.judging.rulebook.lookup import rule_named, rule_of
from spatialprobe.judging.rulebook.record import Score
from spatialprobe.metrics.classification import label_statistics
from spatialprobe.metrics.estimates import point_estimates
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.runner.summary import Metric


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


def score_of(summary: Mapping[str, Any]) -> Score | None:
    """The benchmark score of the rule that judged a run (its record's), None for a rule without one."""
    rule = summary["details"].get("rule")
    return None if rule is None else rule_of(str(summary["task"]), str(rule)).score


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

    labels = tasks.labels_of(task)
    judge = rule_of(task, rule)
    if judge.reads_depth:  # a comparison or 3-D rule answers from depth, not from box pairs alone
        return labels
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

    m, score = summary["metrics"], score_of(summary)
    if score is not None and score.metric in m:
        return "**Headline (the rule's own score)**: " + benchmark_lines(score, {score.metric: m[score.metric]})
    return f"**Headline**: accuracy {pm(m['accuracy'])} % (ISM, whole set)\n\n"


def table_markdown(summary: Mapping[str, Any]) -> str:
    from spatialprobe.reports.tables import ci_suffix, header_of, intervals_line

    m = summary["metrics"]
    accuracy, f1 = (header_of(summary, name) for name in ("accuracy", "macro_f1"))  # the registry's
    title = f"# ISM (Box): {summary['task']} - {summary['model']}"
    if summary.get("untrained"):
        title += " (UNTRAINED test components: numbers are meaningless)"
    ratio = m["recognized_ratio"]
    score = score_of(summary)
    return (f"{title}\n\n" + rule_line(summary) + headline_line(summary) +
            f"| subset | images | {accuracy} (%) | {f1} (%) |\n|---|---:|---:|---:|\n"
            f"| whole set (unrecognized: random guess) | {m['accuracy']['n']} | "
            f"{_cell(m['accuracy'])} | {_cell(m['macro_f1'])} |\n"
            f"| recognized subset | {m['recognized_accuracy']['n']} | "
            f"{_cell(m['recognized_accuracy'])} | {_cell(m['recognized_macro_f1'])} |\n\n"
            f"Recognized ratio: {_pct(ratio['mean'])}%{ci_suffix(ratio) if ratio['mean'] is not None else ''}\n\n"
            + protocol_line(summary["details"]) + benchmark_lines(score, {k: v for k, v in m.items()
                                                                    if score is None or k != score.metric})
            + (f"{intervals_line(summary)}\n" if summary.get("intervals") else "") +
            "| object | images | accuracy (%) | detected (%) |\n|---|---:|---:|---:|\n"
            + "".join(f"| {obj} | {v['n']} | {v['accuracy']:.1f} | {v['detected']:.1f} |\n"
                      for obj, v in summary["details"]["per_object"].items()))


# ---- benchmark-level scores --------------------------------------------------------------------

def benchmark_metrics(rule: str, rows: Sequence[dict[str, Any]], rule_args: Mapping[str, Any],
                      protocol: Mapping[str, Any] | None = None) -> dict[str, Metric]:
    """The benchmark's own number of a rule with a score (else nothing), over all images, and,
    when the images are of that benchmark's prompt file (``protocol``, see
    :func:`prompt_protocol`), its prompt-level score beside it (:func:`prompt_level`).

    Each image's value is in its row (``Score.field``; computed here by ``Score.of_row`` from
    ``rule_args``, the rule's :meth:`~JudgeRule.benchmark_args`), so predictions.jsonl shows it.
    Measured once (``std`` None) by the registered ``share`` or ``mean``, as the spine measures
    the run's metrics (which these names decide).
    """
    score = rule_named(rule).score
    if score is None or not rows:
        return {}
    if score.of_row is not None:
        for row in rows:
            row[score.field] = score.of_row(row, row["gold"], rule_args)
    metrics = _measured(rows, score.field, score.metric, score.how)
    if protocol is not None and protocol.get("rule") == rule and score.prompt_metric is not None:
        how = "share" if protocol["prompt_score"] == "any" else "mean"
        metrics.update(_measured(prompt_level(rows, score.field, protocol["prompt_score"]), "value",
                                 score.prompt_metric, how))
    return metrics


def _measured(rows: Sequence[Mapping[str, Any]], field: str, name: str, how: str) -> dict[str, Metric]:
    """``name``: the registered statistic ``how`` (``share`` or ``mean``) of the rows' ``field``,
    as the spine computes it (:func:`~spatialprobe.metrics.estimates.point_estimates`)."""
    return point_estimates(rows, Resampling((), (), pred=field, metrics={name: how}))


# ---- prompt sets of a benchmark (synthesis/benchmark_prompts.py) ---------------------------------

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


def prompt_resampling(score: Score, benchmark: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                      protocol: Mapping[str, Any] | None, clusters: tuple[str, ...]) -> list[Resampling]:
    """The interval of a prompt-level score: its prompts resampled by the same clusters."""
    name = score.prompt_metric
    if name is None or name not in benchmark or protocol is None:
        return []
    how = protocol["prompt_score"]
    return [Resampling((), clusters, key=("instance_id",), pred="value", rows=prompt_level(rows, score.field, how),
                       metrics={name: "share" if how == "any" else "mean"})]


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


def benchmark_lines(score: Score | None, metrics: Mapping[str, Any]) -> str:
    """table.md lines for the numbers of a rule's score present in a summary's metrics."""
    from spatialprobe.reports.tables import ci_suffix

    lines = ""
    for name, words, digits, unit in score.lines() if score is not None else ():
        if name in metrics:
            m = metrics[name]
            lines += f"{words.format(n=m['n'])}: {m['mean']:.{digits}f}{unit}{ci_suffix(m, digits)}\n\n"
    return lines
