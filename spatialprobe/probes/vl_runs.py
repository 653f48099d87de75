"""Run-directory plumbing shared by the VSR and SpatialMQA evaluations.

Per-example results go to ``run.sqlite`` (table ``vl_results``) as each batch finishes, so an
interrupted run resumes where it stopped; the summary files are written at the end.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..store import RunDir, atomic_write_text, register_run, write_json, write_jsonl

_SCHEMA = "CREATE TABLE IF NOT EXISTS vl_results (id TEXT PRIMARY KEY, row TEXT NOT NULL)"


def done_results(run: RunDir) -> dict[str, dict[str, Any]]:
    with run.db() as conn:
        conn.execute(_SCHEMA)
        return {i: json.loads(r) for i, r in conn.execute("SELECT id, row FROM vl_results")}


def save_results(run: RunDir, rows: Iterable[Mapping[str, Any]]) -> None:
    with run.db() as conn:
        conn.execute(_SCHEMA)
        conn.executemany("INSERT OR REPLACE INTO vl_results VALUES (?, ?)",
                         [(r["id"], json.dumps(r, ensure_ascii=False)) for r in rows])


def pct(value: float) -> float:
    return round(100.0 * value, 2)


def write_summary(run: RunDir, summary: dict[str, Any], predictions: list[dict[str, Any]],
                  table_rows: Sequence[tuple[str, ...]], table_header: tuple[str, ...]) -> None:
    """summary.json (+ predictions.jsonl, table.md) and an entry in the global run index."""
    write_json(run.file("summary.json"), summary)
    write_jsonl(run.file("predictions.jsonl"), predictions)
    lines = ["| " + " | ".join(table_header) + " |", "|" + "---|" * len(table_header)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows]
    atomic_write_text(run.file("table.md"), "\n".join(lines) + "\n")
    register_run(run.path, kind=summary["kind"], task=summary["task"], model=summary["model"],
                 dataset=summary["dataset"], accuracy=summary["accuracy"]["mean"],
                 macro_f1=summary["macro_f1"]["mean"])
