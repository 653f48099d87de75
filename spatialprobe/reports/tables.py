"""Markdown tables: one run's per-fold table, and several runs side by side (the paper's Table 2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def pm(value: Mapping[str, float] | None) -> str:
    if not value or value.get("mean") is None:
        return "–"
    std = value.get("std")  # None: no spread was measured (one run, no folds)
    return f"{value['mean']:.1f} ± {std:.1f}" if std is not None else f"{value['mean']:.1f}"


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
    rows = [[f["fold"], f["size"], f"{f['accuracy']:.1f}", f"{f['macro_f1']:.1f}",
             f"`{f['prompt']}`", ", ".join(f"{k}→{v}" for k, v in f["answers"].items())]
            for f in details["folds"]]
    rows.append(["mean ± σ", "", pm(summary["accuracy"]), pm(summary["macro_f1"]), "", ""])
    text = f"{title}\n\n{provenance_line(summary)}\n\n"
    text += _markdown(["fold", "test size", "accuracy", "macro-F1", "prompt", "answers"], rows)
    whole = details.get("whole_set")
    if whole:
        text += (f"\nWhole set with the hand-written prompt `{whole['prompt']}`: accuracy "
                 f"{whole['accuracy']:.1f}, macro-F1 {whole['macro_f1']:.1f} (n={whole['n']}).\n")
    if details.get("same_answer_both_actions") is not None:
        text += (f"\nSame answer for both actions of a person–object pair: "
                 f"{details['same_answer_both_actions']:.1f}%.\n")
    return text


def comparison_table(summaries: Iterable[Mapping[str, Any]]) -> str:
    """Rows: models (and run kinds); columns: accuracy and macro-F1 for each task present."""
    table: dict[str, dict[str, Mapping[str, Any]]] = {}
    tasks: list[str] = []
    for s in summaries:
        name = str(s.get("model"))
        if s.get("kind") not in (None, "probe"):
            name = f"{name} ({s['kind']})"
        if s.get("untrained"):
            name += " [untrained]"
        table.setdefault(name, {})[s["task"]] = s
        if s["task"] not in tasks:
            tasks.append(s["task"])
    from .. import tasks as registered

    order = registered.names()  # paper order first, as the task files state it
    tasks.sort(key=lambda t: (order.index(t) if t in order else len(order), t))
    header = ["model"] + [f"{t} {m}" for t in tasks for m in ("acc", "F1")]
    rows = [[name] + [pm(runs[t].get(m)) if t in runs else "–" for t in tasks
                      for m in ("accuracy", "macro_f1")] for name, runs in table.items()]
    return _markdown(header, rows)
