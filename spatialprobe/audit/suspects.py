"""Items many runs answer alike against the gold: candidates for a wrong gold (``spatialprobe audit
data RUN...``), and what each run's headline would be without them.

Each run folder (native or imported, :mod:`spatialprobe.audit.runs`) gives, per item, its answer
(:func:`answers_of`): a native run's label; an imported run's extracted answer read as the letter
of an option where the log kept the options (an option's text, its letter or its position), else
as its text, case and spaces ignored; nothing read (``--``, empty) is no answer. An item is
**suspect** where at least ``k`` runs give one and the same answer that is not the gold; suspects
are ranked by how many runs agree on it (then by the share of the runs that answered).

Without them, each run's accuracy (its own verdict per item: a native run's pred = gold, an
imported run's ``correct``) is recomputed over the items all runs share, and the change
(without − with) gets a 95 % percentile interval from the cluster bootstrap of
:mod:`spatialprobe.metrics.intervals` (clusters drawn with replacement, both accuracies computed
on each draw, so the interval is paired), over the items' clusters (the source's unit).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from spatialprobe.metrics.intervals import DEFAULT_RESAMPLES, cluster_bootstrap, row_weights

NO_ANSWER = ("--", "", "none", "null")


def _read(value: Any, options: Sequence[str] | None) -> str | None:
    """An answer or a gold as compared: an option's letter where options are known, else its text."""
    from spatialprobe.audit.runs import gold_index

    if value is None or str(value).strip().casefold() in NO_ANSWER:
        return None
    if options:
        index = gold_index(value, tuple(options))
        if index is not None:
            return chr(ord("A") + index)
    return " ".join(str(value).split()).casefold()


def answers_of(path: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """(the run's name, {item: {"answer", "gold", "correct", "cluster"}}) of a run folder's first
    condition; an item asked several times (``--samples``) answers by its most frequent answer."""
    from spatialprobe.audit.runs import run_config
    from spatialprobe.files import read_jsonl

    config = run_config(path)
    settings = config.get("settings") or {}
    first = (settings.get("conditions") or [None])[0]
    imported = config.get("kind") == "imported"
    clusters = _clusters(path)
    found: dict[str, list[dict[str, Any]]] = {}
    for row in read_jsonl(path / "predictions.jsonl"):
        if (first is not None and row.get("condition") not in (None, first)) or "~" in str(row["instance_id"]):
            continue
        options = row.get("options") if imported else None
        answer, gold = _read(row.get("pred"), options), _read(row.get("gold"), options)
        correct = bool(row.get("correct")) if imported else (answer is not None and answer == gold)
        found.setdefault(str(row["instance_id"]), []).append(
            {"answer": answer, "gold": gold, "correct": correct,
             "cluster": "|".join(str(row.get(c)) for c in clusters) if clusters else str(row["instance_id"])})
    out = {}
    for key, rows in found.items():
        top = Counter(r["answer"] for r in rows if r["answer"] is not None).most_common(1)
        out[key] = {**rows[0], "answer": top[0][0] if top else None,
                    "correct": float(np.mean([r["correct"] for r in rows]))}
    return path.name, out


def _clusters(path: Path) -> list[str]:
    from spatialprobe.files import read_json

    summary = read_json(path / "summary.json") if (path / "summary.json").is_file() else {}
    clusters = (summary.get("intervals") or {}).get("clusters") or []
    return [c for c in clusters if c != "instance_id"]


def suspects(runs: Mapping[str, Mapping[str, Mapping[str, Any]]], k: int) -> list[dict[str, Any]]:
    """The items of every run where at least ``k`` runs give one answer that is not the gold, ranked."""
    keys = sorted(set.intersection(*(set(r) for r in runs.values())))
    out = []
    for key in keys:
        gold = next(iter(runs.values()))[key]["gold"]
        answers = [r[key]["answer"] for r in runs.values() if r[key]["answer"] is not None]
        wrong = Counter(a for a in answers if a != gold).most_common(1)
        if wrong and wrong[0][1] >= k:
            out.append({"key": key, "gold": gold, "answer": wrong[0][0], "agree": wrong[0][1],
                        "answered": len(answers), "runs": len(runs), "right": sum(a == gold for a in answers)})
    return sorted(out, key=lambda s: (-s["agree"], -s["agree"] / max(s["answered"], 1), s["key"]))


def without_suspects(runs: Mapping[str, Mapping[str, Mapping[str, Any]]], flagged: Sequence[str],
                     resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Each run's accuracy on the items all share, without the ``flagged`` ones, and the change
    with its paired 95 % interval (clusters drawn with replacement)."""
    keys = sorted(set.intersection(*(set(r) for r in runs.values())))
    first = next(iter(runs.values()))
    names = sorted({first[k]["cluster"] for k in keys})
    cluster = np.array([[names.index(first[k]["cluster"])] for k in keys])
    kept = np.array([k not in set(flagged) for k in keys], dtype=float)
    right = np.array([[r[k]["correct"] for k in keys] for r in runs.values()])  # [runs, items]

    def change(draws: np.ndarray) -> np.ndarray:
        w = row_weights(draws, cluster, len(names))  # [b, items]
        with np.errstate(invalid="ignore", divide="ignore"):
            every = (w[None] * right[:, None]).sum(-1) / w.sum(-1)
            without = (w[None] * right[:, None] * kept).sum(-1) / (w * kept).sum(-1)
        return 100 * (without - every)

    low, high = cluster_bootstrap(len(names), change, len(keys), resamples, seed)
    out = {}
    for n, name in enumerate(runs):
        every, without = 100 * right[n].mean(), 100 * right[n][kept > 0].mean() if kept.any() else float("nan")
        ci = None if np.isnan(low[n]) else [round(float(low[n]), 6), round(float(high[n]), 6)]
        out[name] = {"accuracy": float(every), "without": float(without), "change": float(without - every),
                     "ci": ci, "items": len(keys), "kept": int(kept.sum())}
    return out
