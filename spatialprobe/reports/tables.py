"""Markdown tables: one run's per-fold table, several runs side by side (the paper's Table 2), and
two runs on the same items compared with a paired test."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spatialprobe.metrics.paired import PairedDifference
    from spatialprobe.reports.runs import Run


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
    drawn = f", {info['resamples']} resamples, seed {info['seed']}" if "resamples" in info else ""  # a bootstrap
    return (f"[low, high]: {100 * info['level']:.0f} % {info['interval']} interval, {info['method']} "
            f"({', '.join(info['clusters'])}){drawn}."
            + (" [–]: no interval (its rows come from fewer than two units to resample)." if unmeasured else "") + "\n")


def _has_null_interval(metric: Mapping[str, Any]) -> bool:
    return ("ci" in metric and metric["ci"] is None and metric.get("mean") is not None) or any(
        _has_null_interval(part) for part in (metric.get("breakdown") or {}).values())


def markdown_table(header: list[str], rows: Iterable[list[str]]) -> str:
    """A markdown table, one line per row whatever the terminal's width."""
    return _markdown(header, rows)


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
    text += _markdown(["fold", "test size", *(header_of(summary, m) for m in ("accuracy", "macro_f1")),
                       "prompt", "answers"], rows)
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


def header_of(summary: Mapping[str, Any], metric: str) -> str:
    """A metric's header: that of the registered statistic the summary declares it measured with
    (else the statistic of its name), else the metric's name."""
    from spatialprobe.runner.summary import statistic_of

    found = statistic_of(summary, metric)
    return found.header if found else metric


def _shown(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """The columns of one benchmark's table: what its runs report (:func:`spatialprobe.runner.summary.reported`,
    the benchmark's official list under its official reader), in the first run's order."""
    from spatialprobe.runner.summary import reported

    shown: dict[str, str] = {}
    for run in runs:
        for metric, stat in reported(run.summary):
            shown.setdefault(metric, stat)
    return list(shown.items())


def comparison_table(runs: Sequence[Run], labels: Sequence[str]) -> str:
    """One table per benchmark and metric family: the runs of one kind, task and dataset (named
    where a kind and task have several) share a table whose columns are that family's metrics, so
    numbers of different kinds (yes/no against 4-way accuracy) never share a column and no table
    is mostly empty. A row per run, ``labels`` (:func:`spatialprobe.reports.runs.labels`: what
    differs between the runs of its kind and task). Tables in the tasks' paper order."""
    from spatialprobe import tasks as registered
    from spatialprobe.runner.summary import display_name

    datasets: dict[tuple[str, str], set[str]] = {}
    for run in runs:
        datasets.setdefault(run.group, set()).add(str(run.summary.get("dataset")))
    order = registered.names()  # paper order first, as the task files state it

    def benchmark(run: Run) -> tuple[str, str, str]:
        kind, task = run.group
        return kind, task, str(run.summary.get("dataset")) if len(datasets[run.group]) > 1 else ""

    tables = []
    for kind, task, data in sorted({benchmark(r) for r in runs}, key=lambda c: (
            order.index(c[1]) if c[1] in order else len(order), c[1], c[0] != "probe", c[0], c[2])):
        name = f"{kind} {task}".strip() + (f" [{data}]" if data else "")
        shown = _shown([run for run in runs if benchmark(run) == (kind, task, data)])
        rows = sorted(([label.replace("|", "\\|"), *(pm((run.summary.get("metrics") or {}).get(metric)
                                                        or run.summary.get(metric)) for metric, _ in shown)]
                       for run, label in zip(runs, labels, strict=True) if benchmark(run) == (kind, task, data)),
                      key=lambda row: row[0])
        tables.append(_markdown(["run", *(f"{name} {display_name(metric, stat)}" for metric, stat in shown)], rows))
    return "\n".join(tables)


def paired_table(name_a: str, name_b: str, differences: Sequence[PairedDifference],
                 resamples: int, seed: int, method: str) -> str:
    """Run A against run B on the same items: each metric's difference, its interval and p-value,
    headed by its registered statistic's header (:mod:`spatialprobe.metrics.statistics`)."""
    from spatialprobe.metrics.statistics import get

    headers = [get(d.statistic).header if d.statistic else d.metric for d in differences]
    shared = {h for h in headers if headers.count(h) > 1}  # two metrics of one statistic: name them
    labels = [f"{d.metric} ({h})" if h in shared and d.metric != d.statistic else h
              for d, h in zip(differences, headers, strict=True)]
    rows = [[label, f"{d.a:.1f}", f"{d.b:.1f}", f"{d.difference:+.1f}",
             ci_text(d.ci), p_text(d.p), "significant" if d.significant else "n.s."]
            for d, label in zip(differences, labels, strict=True)]
    text = f"\n## Paired: A = {name_a}, B = {name_b} (same items)\n\n"
    text += _markdown(["metric", "A", "B", "A − B", "95 % CI", "p", "at 0.05"], rows)
    return text + (
        f"\nA − B as each run's point estimate is computed; interval and p: one cluster-robust standard "
        f"error of A − B over {method.split(' over ')[-1]} (every two rows sharing a cluster covary; "
        "small-sample corrected, Student's t with K−1 degrees of freedom, for object pairs variance components "
        "with Satterthwaite's), so p < 0.05 exactly where the interval "
        "excludes 0. n.s.: not significant at 0.05.\n")


def p_text(p: float) -> str:
    """A p-value to three decimals, ``< 0.001`` below that (never ``0.000``), ``–`` if unmeasurable."""
    if p != p:
        return "–"
    return "< 0.001" if p < 0.0005 else f"{p:.3f}"


def unpaired_note(name_a: str, name_b: str, reason: str) -> str:
    return (f"\nNo paired test of A = {name_a} and B = {name_b}: {reason}. Compare their intervals "
            "above instead (overlapping intervals do not show that a difference is absent).\n")
