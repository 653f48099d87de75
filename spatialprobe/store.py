"""A run directory with an embedded SQLite database, and a global index of runs.

Layout of a run directory::

    RUN/config.json        resolved configuration and provenance (written first)
    RUN/run.sqlite         per-run tables (score cache, image manifest, ...); WAL mode, crash-safe
    RUN/summary.json       the numbers a researcher reads
    RUN/predictions.jsonl  per-instance results
    RUN/table.md           the summary as a markdown table

Files are written atomically (temporary file + ``os.replace``), so a crash never leaves half a
file under its final name. Work that takes long is committed to ``run.sqlite`` as it goes and
is reused when the same command runs again on the same directory.

The index of runs lives at ``$SPATIALPROBE_HOME/index.sqlite`` (default
``~/.spatialprobe/index.sqlite``); ``spatialprobe runs`` lists it.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from . import __version__


def provenance() -> dict[str, Any]:
    """What produced an output: toolkit and library versions, host, time."""
    info: dict[str, Any] = {
        "toolkit": "spatialprobe",
        "toolkit_version": __version__,
        "python": platform.python_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    from importlib.metadata import PackageNotFoundError, version

    for lib in ("torch", "transformers", "diffusers"):
        with suppress(PackageNotFoundError):  # not installed
            info[f"{lib}_version"] = version(lib)
    return info


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: Path, data: Any) -> None:
    atomic_write_text(Path(path), json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    atomic_write_text(Path(path), "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def connect(db_path: Path) -> sqlite3.Connection:
    """Open SQLite in WAL mode: readers never block the writer, a crash loses no committed row."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(db_path), timeout=60)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


class RunDir:
    """One run's directory. Creating it twice on the same path resumes the same run."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        existing = next((p for p in (self.path, *self.path.parents) if p.exists()), None)
        if existing is not None and not existing.is_dir():  # else mkdir fails with a traceback
            where = "" if existing == self.path else f"{self.path}: "
            raise ValueError(f"--out {where}{existing} is a file, not a directory.")
        self.path.mkdir(parents=True, exist_ok=True)

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def db_path(self) -> Path:
        return self.path / "run.sqlite"

    @contextmanager
    def db(self) -> Iterator[sqlite3.Connection]:
        conn = connect(self.db_path)
        try:
            yield conn
            conn.commit()
        finally:
            conn.close()

    def config(self) -> dict[str, Any] | None:
        path = self.file("config.json")
        return read_json(path) if path.exists() else None

    def start(self, config: Mapping[str, Any], *, resume_keys: Iterable[str] = ()) -> dict[str, Any]:
        """Write ``config.json`` (with provenance) or check it against an existing run.

        A directory that already holds a run with different values for ``resume_keys`` is
        refused rather than silently mixed with the new one.
        """
        existing = self.config()
        if existing is not None:
            for key in resume_keys:
                if existing.get(key) != config.get(key):
                    raise ValueError(
                        f"{self.path} already holds a run with {key}={existing.get(key)!r}; "
                        f"this one has {key}={config.get(key)!r}. Use another --out directory."
                    )
        resolved = dict(config)
        resolved["provenance"] = provenance()
        write_json(self.file("config.json"), resolved)
        return resolved


# ---- global index of runs -------------------------------------------------------------------

def home() -> Path:
    return Path(os.environ.get("SPATIALPROBE_HOME", Path.home() / ".spatialprobe"))


_INDEX_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    path TEXT PRIMARY KEY,       -- absolute path of the run directory
    kind TEXT NOT NULL,          -- probe, judge, synthesize, vsr, ...
    task TEXT,                   -- size, height, posrel, ...
    model TEXT,                  -- model name or path
    dataset TEXT,                -- dataset name@version
    accuracy REAL,               -- headline accuracy (percent), mean over folds where folds exist
    macro_f1 REAL,               -- headline macro-F1 (percent)
    created TEXT NOT NULL        -- ISO time of the last write
)
"""


def register_run(path: Path, *, kind: str, task: str | None, model: str | None,
                 dataset: str | None, accuracy: float | None, macro_f1: float | None) -> None:
    conn = connect(home() / "index.sqlite")
    try:
        conn.execute(_INDEX_SCHEMA)
        conn.execute(
            "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (str(Path(path).resolve()), kind, task, model, dataset, accuracy, macro_f1,
             time.strftime("%Y-%m-%dT%H:%M:%S")),
        )
        conn.commit()
    finally:
        conn.close()


def list_runs() -> list[dict[str, Any]]:
    index = home() / "index.sqlite"
    if not index.exists():
        return []
    conn = connect(index)
    try:
        conn.execute(_INDEX_SCHEMA)
        conn.row_factory = sqlite3.Row
        rows = conn.execute("SELECT * FROM runs ORDER BY created").fetchall()
        return [dict(r) for r in rows if Path(r["path"]).exists()]
    finally:
        conn.close()
