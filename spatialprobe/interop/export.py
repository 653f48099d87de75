"""``spatialprobe export RUN... --format csv|parquet|eee``: every run's items as one long table
(:data:`COLUMNS`, one row per item and condition), or in the Every Eval Ever schema
(:mod:`.eee`). The table reads back in one line: ``pandas.read_csv(FILE)`` / ``pandas.read_parquet(FILE)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.errors import UsageError

COLUMNS = ("run", "model", "benchmark", "item", "fold", "cluster", "condition", "protocol", "gold", "prediction",
           "correct", "score")
"""The long table's columns. ``cluster`` joins a row's clusters with ``|`` (a pair of objects);
``fold`` is empty where a run has no folds; ``score`` is the harness's per-item score where a
run was imported, else 1 or 0."""


def spec_of(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> Any:
    """How the run's rows are read (fields of gold, prediction, clusters, key)."""
    from spatialprobe.metrics.paired import resampling_of

    return resampling_of(summary, rows)


def correct_of(row: Mapping[str, Any], spec: Any) -> bool:
    """Whether a row is correct, as the run's headline statistic reads it."""
    if "correct" in row and isinstance(row["correct"], bool):
        return row["correct"]
    pred, gold = row.get(spec.pred), row.get(spec.gold)
    if spec.fold_case and isinstance(pred, str) and isinstance(gold, str):
        return pred.casefold() == gold.casefold()
    return pred is not None and pred == gold


def run_rows(path: Path) -> tuple[Any, list[dict[str, Any]]]:
    """(the run, its items in the long table's columns)."""
    from spatialprobe.files import read_jsonl
    from spatialprobe.reports.runs import load_run

    run = load_run(path)
    rows = read_jsonl(path / "predictions.jsonl") if (path / "predictions.jsonl").is_file() else []
    if not rows:
        raise UsageError(f"{path} has no predictions.jsonl rows to export.")
    spec = spec_of(run.summary, rows)
    details = run.summary.get("details") or {}
    protocols = details.get("protocols") or [None]
    out = []
    for row in rows:
        correct = correct_of(row, spec)
        score = row.get("score")
        out.append({"run": str(path), "model": run.summary.get("model"), "benchmark": run.summary.get("task"),
                    "item": str(row.get("instance_id")), "fold": row.get("fold"),
                    "cluster": "|".join(str(row.get(c)) for c in spec.clusters),
                    "condition": row.get("condition"), "protocol": row.get("protocol", protocols[0]),
                    "gold": _text(row.get(spec.gold)), "prediction": _text(row.get("pred")), "correct": correct,
                    "score": float(score) if isinstance(score, (int, float)) else float(correct)})
    return run, out


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def long_table(paths: Sequence[Path]) -> Any:
    """Every run's rows as one pandas DataFrame with :data:`COLUMNS`."""
    import importlib

    pd: Any = importlib.import_module("pandas")  # a base dependency (statsmodels'); no stubs here
    rows = [row for path in paths for row in run_rows(Path(path))[1]]
    return pd.DataFrame(rows, columns=list(COLUMNS))


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""A cell starting so is a formula to Excel, LibreOffice and Google Sheets (OWASP, CSV injection)."""


def spreadsheet_safe(table: Any) -> Any:
    """``table`` with every text cell that a spreadsheet would run as a formula (``=cmd|' /C calc'!A0``,
    ``=HYPERLINK(...)``, ``@SUM``, ``+``, ``-``, a leading tab or carriage return) prefixed with a single
    quote, as OWASP advises: the cell shows as text, and ``pandas.read_csv`` reads it with the quote.
    A model's reply or an item id is data, never something to run on the reader's machine."""
    out = table.copy()
    for column in out.columns:
        values = out[column].tolist()
        if any(isinstance(v, str) for v in values):
            out[column] = [("'" + v) if isinstance(v, str) and v.startswith(FORMULA_STARTS) else v for v in values]
    return out


def export(paths: Sequence[Path], fmt: str, out: Path) -> list[Path]:
    """Write ``paths``' runs to ``out`` as one long table in ``fmt`` (csv, parquet); the files written."""
    table = long_table(paths)
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        # RFC 4180 line ends: a cell holding a bare carriage return is quoted, not split into two rows
        spreadsheet_safe(table).to_csv(out, index=False, lineterminator="\r\n")
    elif fmt == "parquet":
        from spatialprobe.extras import require

        require("pyarrow", "interop", "Writing Parquet (spatialprobe export --format parquet)")
        table.to_parquet(out, index=False)
    else:
        raise UsageError(f"--format {fmt} is not one export writes: csv, parquet or eee.")  # eee: .eee
    return [out]
