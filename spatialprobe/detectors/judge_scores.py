"""ISM (Box) numbers: accuracy and macro-F1 of judged images, per-object figures, the table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..runner.summary import Metric, single


def scores(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy and macro-F1 (percent); None for an empty set (nothing was measured).

    Macro-F1 averages over the labels that occur in gold or predictions (scikit-learn's
    default), so a small subset is not charged for labels it never contains.
    """
    from sklearn.metrics import accuracy_score, f1_score

    if not rows:
        return {"accuracy": None, "macro_f1": None, "n": 0}
    gold = [r["gold"] for r in rows]
    pred = [r["pred"] for r in rows]
    return {"accuracy": 100.0 * accuracy_score(gold, pred),
            "macro_f1": 100.0 * f1_score(gold, pred, average="macro", zero_division=0),
            "n": len(rows)}


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


def table_markdown(summary: Mapping[str, Any]) -> str:
    m = summary["metrics"]
    title = f"# ISM (Box): {summary['task']} - {summary['model']}"
    if summary.get("untrained"):
        title += " (UNTRAINED test components: numbers are meaningless)"
    return (f"{title}\n\n"
            "| subset | images | accuracy (%) | macro-F1 (%) |\n|---|---:|---:|---:|\n"
            f"| whole set (unrecognized: random guess) | {m['accuracy']['n']} | "
            f"{_pct(m['accuracy']['mean'])} | {_pct(m['macro_f1']['mean'])} |\n"
            f"| recognized subset | {m['recognized_accuracy']['n']} | "
            f"{_pct(m['recognized_accuracy']['mean'])} | {_pct(m['recognized_macro_f1']['mean'])} |\n\n"
            f"Recognized ratio: {_pct(m['recognized_ratio']['mean'])}%\n\n"
            "| object | images | accuracy (%) | detected (%) |\n|---|---:|---:|---:|\n"
            + "".join(f"| {obj} | {v['n']} | {v['accuracy']:.1f} | {v['detected']:.1f} |\n"
                      for obj, v in summary["details"]["per_object"].items()))


def judge_metrics(whole: dict[str, Any], recognized: dict[str, Any]) -> dict[str, Metric]:
    """Whole set (the headline), recognized subset and recognized ratio: each measured once."""
    ratio = 100.0 * recognized["n"] / whole["n"] if whole["n"] else None
    return {"accuracy": single(whole["accuracy"], whole["n"]),
            "macro_f1": single(whole["macro_f1"], whole["n"]),
            "recognized_accuracy": single(recognized["accuracy"], recognized["n"]),
            "recognized_macro_f1": single(recognized["macro_f1"], recognized["n"]),
            "recognized_ratio": single(ratio, whole["n"])}
