"""Markdown tables: one run's per-fold table, several runs side by side (the paper's Table 2), and
two runs on the same items compared with a paired test."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spatialprobe.metrics.paired import PairedDifference


def print_table(text: str) -> None:
    """Print a table (markdown) to stdout as it is: rows are never wrapped at the terminal's or
    a pipe's 80 columns (rich's Console would wrap them), so piped markdown rows stay whole."""
    import typer

    typer.echo(text.rstrip("\n"))


def coverage_line(coverage: Mapping[str, Any] | None, what: str = "examples") -> str:
    """A table's first line: how many of the data's items its numbers cover, and why the rest
    are left out (``2,195 of 2,195 examples``; ``59 of 2,195 examples (2,136 images missing,
    skipped with --skip-missing)``)."""
    if not coverage:
        return ""
    notes = [f"--limit {coverage['limit']:,}"] if coverage.get("limit") else []
    if coverage.get("skipped_missing"):
        notes.append(f"{coverage['skipped_missing']:,} images missing, skipped"
                     + (" with --skip-missing" if coverage.get("skip_missing") else ""))
    return (f"Coverage: {coverage['used']:,} of {coverage['total']:,} {what}"
            + (f" ({'; '.join(notes)})" if notes else "") + ".")


def pm(value: Mapping[str, Any] | None) -> str:
    """``mean ± σ [low, high]``: σ where a spread was measured, the 95 % interval where one was
    (``[–]`` where one was asked for but could not be measured)."""
    if not value or value.get("mean") is None:
        return "–"
    std = value.get("std")  # None: no spread was measured (one run, no folds)
    text = f"{value['mean']:.1f} ± {std:.1f}" if std is not None else f"{value['mean']:.1f}"
    return text + ci_suffix(value)


def ci_text(ci: Sequence[float] | None) -> str:
    return f"[{ci[0]:.1f}, {ci[1]:.1f}]" if ci else "–"


def ci_suffix(metric: Mapping[str, Any], digits: int = 1) -> str:
    """`` [low, high]`` to follow a number a table writes its own way, `` [–]`` where the interval
    could not be measured, nothing where none was asked for."""
    if "ci" not in metric:
        return ""
    ci = metric["ci"]
    return " [–]" if ci is None else f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def intervals_line(summary: Mapping[str, Any]) -> str:
    """One sentence saying how the run's intervals were computed (empty where it has none)."""
    info = summary.get("intervals")
    if not info:
        return ""
    unmeasured = any(_has_null_interval(m) for m in (summary.get("metrics") or {}).values())
    return (f"[low, high]: {100 * info['level']:.0f} % {info['interval']} interval, {info['method']} "
            f"({', '.join(info['clusters'])}), {info['resamples']} resamples, seed {info['seed']}."
            + (" [–]: no interval (its rows come from fewer than two units to resample)." if unmeasured else "") + "\n")


def _has_null_interval(metric: Mapping[str, Any]) -> bool:
    return ("ci" in metric and metric["ci"] is None and metric.get("mean") is not None) or any(
        _has_null_interval(part) for part in (metric.get("breakdown") or {}).values())


def _markdown(header: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def provenance_line(summary: Mapping[str, Any]) -> str:
    prov = summary.get("provenance", {})
    dataset = summary.get("dataset")
    dataset = f"{dataset.get('name')}@{dataset.get('version')}" if isinstance(dataset, Mapping) else dataset
    return (f"model `{summary.get('model')}` · dataset `{dataset}` · seed {summary.get('seed', '–')} · "
            f"spatialprobe {prov.get('toolkit_version', '?')} · {prov.get('created', '')}")


def probe_table(summary: Mapping[str, Any]) -> str:
    """Per-fold accuracy and macro-F1 of one probe run, with mean ± σ."""
    title = f"# {summary['task']} · {summary['model']}"
    if summary.get("untrained"):
        title += " (UNTRAINED smoke model: numbers are meaningless)"
    details = summary["details"]

    def part(metric: str, fold: Any) -> str:
        ci = ((summary.get(metric) or {}).get("breakdown") or {}).get(f"fold {fold}", {}).get("ci")
        return f" {ci_text(ci)}" if ci else ""

    rows = [[f["fold"], f["size"], f"{f['accuracy']:.1f}{part('accuracy', f['fold'])}",
             f"{f['macro_f1']:.1f}{part('macro_f1', f['fold'])}",
             f"`{f['prompt']}`", ", ".join(f"{k}→{v}" for k, v in f["answers"].items())]
            for f in details["folds"]]
    rows.append(["mean ± σ", "", pm(summary["accuracy"]), pm(summary["macro_f1"]), "", ""])
    text = f"{title}\n\n{provenance_line(summary)}\n\n"
    text += _markdown(["fold", "test size", "accuracy", "macro-F1", "prompt", "answers"], rows)
    text += f"\n{intervals_line(summary)}" if summary.get("intervals") else ""
    whole = details.get("whole_set")
    if whole:
        metrics = summary.get("metrics", {})
        acc = pm(metrics.get("whole_set_accuracy")) if "whole_set_accuracy" in metrics else f"{whole['accuracy']:.1f}"
        f1 = pm(metrics.get("whole_set_macro_f1")) if "whole_set_macro_f1" in metrics else f"{whole['macro_f1']:.1f}"
        text += (f"\nWhole set with the hand-written prompt `{whole['prompt']}`: accuracy {acc}, "
                 f"macro-F1 {f1} (n={whole['n']}).\n")
    if details.get("same_answer_both_actions") is not None:
        text += (f"\nSame answer for both actions of a person–object pair: "
                 f"{details['same_answer_both_actions']:.1f}%.\n")
    return text


def comparison_table(summaries: Iterable[Mapping[str, Any]], labels: Sequence[str] | None = None) -> str:
    """Rows: models (and run kinds); columns: accuracy and macro-F1 for each task present.

    ``labels`` (one per summary, e.g. "A", "B") start the row names, so two runs of one model get
    a row each; without them a model's runs of one task share a row (the last one is shown).
    """
    table: dict[str, dict[str, Mapping[str, Any]]] = {}
    tasks: list[str] = []
    for n, s in enumerate(summaries):
        name = str(s.get("model")) if labels is None else f"{labels[n]}: {s.get('model')}"
        if s.get("kind") not in (None, "probe"):
            name = f"{name} ({s['kind']})"
        if s.get("untrained"):
            name += " [untrained]"
        table.setdefault(name, {})[s["task"]] = s
        if s["task"] not in tasks:
            tasks.append(s["task"])
    from spatialprobe import tasks as registered

    order = registered.names()  # paper order first, as the task files state it
    tasks.sort(key=lambda t: (order.index(t) if t in order else len(order), t))
    header = ["model"] + [f"{t} {m}" for t in tasks for m in ("acc", "F1")]
    rows = [[name] + [pm(runs[t].get(m)) if t in runs else "–" for t in tasks
                      for m in ("accuracy", "macro_f1")] for name, runs in table.items()]
    return _markdown(header, rows)


def paired_table(name_a: str, name_b: str, differences: Sequence[PairedDifference],
                 resamples: int, seed: int, method: str) -> str:
    """Run A against run B on the same items: each metric's difference, its interval and p-value."""
    labels = {"accuracy": "accuracy", "macro_f1": "macro-F1"}
    rows = [[labels.get(d.metric, d.metric), f"{d.a:.1f}", f"{d.b:.1f}", f"{d.difference:+.1f}",
             ci_text(d.ci), f"{d.p:.3f}", "significant" if d.significant else "n.s."]
            for d in differences]
    text = f"\n## Paired: A = {name_a}, B = {name_b} (same items)\n\n"
    text += _markdown(["metric", "A", "B", "A − B", "95 % CI", "p", "at 0.05"], rows)
    return text + (
        f"\nA − B as each run's point estimate is computed; interval: {method}, {resamples} resamples; "
        f"p: two-sided paired permutation test ({resamples} random swaps of the two runs' predictions "
        f"per unit, a unit being an object, an object pair, an image or an instance); seed {seed}. "
        "n.s.: not significant at 0.05 (significant needs p < 0.05 and an interval without 0).\n")


def unpaired_note(name_a: str, name_b: str, reason: str) -> str:
    return (f"\nNo paired test of A = {name_a} and B = {name_b}: {reason}. Compare their intervals "
            "above instead (overlapping intervals do not show that a difference is absent).\n")
