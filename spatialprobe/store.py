"""A run directory with an embedded SQLite database, and a global index of runs.

Layout of a run directory::

    RUN/config.json        resolved configuration and provenance (written first)
    RUN/run.sqlite         per-run tables (score cache, image manifest, ...); WAL mode, crash-safe
    RUN/summary.json       the numbers a researcher reads
    RUN/predictions.jsonl  per-instance results
    RUN/table.md           the summary as a markdown table
    RUN/run.lock           advisory lock: one spatialprobe process at a time works in RUN

Files are written atomically (:mod:`spatialprobe.files`: temporary file, fsync, ``os.replace``,
fsync of the directory), so a crash or power cut never leaves half a file under its final name.
Work that takes long is
committed to ``run.sqlite`` as it goes and is reused when the same command runs again on the same
directory. A run holds ``RUN/run.lock`` (``fcntl.flock``) from ``RunDir.start`` until it ends; the
OS drops the lock when the process dies, ``kill -9`` included, so a second process on the same
directory is refused while the first lives and a rerun after a crash just resumes.

The index of runs lives at ``$SPATIALPROBE_HOME/index.sqlite`` (default
``~/.spatialprobe/index.sqlite``); ``spatialprobe runs`` lists it.
"""

from __future__ import annotations

import os
import platform
import sqlite3
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from spatialprobe import __version__
from spatialprobe.errors import RunInUse
from spatialprobe.files import read_json, write_json

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; runs are then not guarded against each other
    fcntl = None  # type: ignore[assignment]


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


def connect(db_path: Path) -> sqlite3.Connection:
    """Open SQLite in WAL mode: readers never block the writer, a crash loses no committed row."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(db_path), timeout=60)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn




# Locks this process holds: resolved directory -> [file descriptor, RunDir objects holding it].
# flock locks belong to an open file, so two opens in one process would refuse each other; the
# count lets several RunDir objects of one process share the directory (a run that resumes itself).
_HELD: dict[str, list[int]] = {}


def _release(key: str) -> None:
    held = _HELD.get(key)
    if held is None:
        return
    held[1] -= 1
    if held[1] == 0:
        del _HELD[key]
        os.close(held[0])  # closing the last descriptor drops the flock


def _holder_pid(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode("ascii").strip() or "unknown"
    except (OSError, UnicodeDecodeError):
        return "unknown"


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

    def lock(self) -> None:
        """Take the directory for this process (``RUN/run.lock``, non-blocking ``flock``) until
        this RunDir is garbage-collected or the process ends, however it ends. Raises
        ``RunInUse`` (a ValueError, so commands report it in one sentence) if another process
        holds it. Calling it again is a no-op."""
        if fcntl is None or getattr(self, "_lock_key", None):
            return
        key = str(self.path.resolve())
        if key in _HELD:
            _HELD[key][1] += 1
        else:
            fd = os.open(self.file("run.lock"), os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _holder_pid(fd)
                os.close(fd)
                raise RunInUse(f"{self.path} is in use by another spatialprobe process (pid {pid}); "
                               "wait for it to finish or use another --out.") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            _HELD[key] = [fd, 1]
        self._lock_key = key
        weakref.finalize(self, _release, key)

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
        refused rather than silently mixed with the new one, and so is a directory another
        process is working in (see ``lock``).
        """
        self.lock()
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
