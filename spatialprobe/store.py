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

A run owns its folder (:func:`require_own_folder`, checked by :meth:`RunDir.claim` before the
lock file or anything else is written): it writes only into a new or empty directory, or one
whose ``config.json`` is a spatialprobe run config; a model checkpoint or a project folder given
as ``--out`` is refused, naming the file the run would have overwritten, and left untouched.

The index of runs lives at ``$SPATIALPROBE_HOME/index.sqlite`` (default
``~/.spatialprobe/index.sqlite``); ``spatialprobe runs`` lists it.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from spatialprobe.errors import OutputError, RunInUse
from spatialprobe.files import read_json, write_json
from spatialprobe.provenance import provenance

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; runs are then not guarded against each other
    fcntl = None  # type: ignore[assignment]


def connect(db_path: Path) -> sqlite3.Connection:
    """Open SQLite in WAL mode: readers never block the writer, a crash loses no committed row."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(db_path), timeout=60)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


# ---- a run owns its folder ------------------------------------------------------------------

RUN_FILES = ("config.json", "summary.json", "predictions.jsonl", "table.md", "run.sqlite", "run.lock")
"""The files every run writes: a folder holding one of them without being a run is not taken."""

_STARTING = {"run.lock", "run.sqlite", "run.sqlite-wal", "run.sqlite-shm"}
"""What a run leaves when it stops before its ``config.json`` (locked, cache opened): still ours."""

_IDENTITY = re.compile(r"[0-9a-f]{64}")


def _refuse_file_on_the_way(path: Path) -> None:
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        where = "" if existing == path else f"{path}: "
        raise OutputError(f"--out {where}{existing} is a file, not a directory.")


def run_config_problem(config: Any) -> str | None:
    """Why ``config`` (a parsed ``config.json``) is not one the run spine wrote, or None: a
    dict with a registered ``kind``, a sha256 ``identity`` and ``settings``/``runtime`` dicts."""
    from spatialprobe.registry import names

    if not isinstance(config, dict):
        return f"holds a JSON {type(config).__name__}, not a run's settings"
    kind = config.get("kind")
    if kind not in names("run-kind"):
        return ("has no 'kind'" if kind is None else f"has kind {kind!r}, which is no run kind")
    if not isinstance(config.get("identity"), str) or not _IDENTITY.fullmatch(config["identity"]):
        return "has no run identity"
    for key in ("settings", "runtime"):
        if not isinstance(config.get(key, {}), dict):
            return f"has '{key}' that is not an object"
    return None


def require_own_folder(path: str | os.PathLike[str], option: str = "--out") -> None:
    """THE rule for every run kind: a run writes only into a new or empty directory, or one
    whose ``config.json`` is a spatialprobe run config. Anything else (a model checkpoint with
    its own ``config.json``, a project folder) is refused with an :class:`OutputError` naming
    the file the run would have overwritten, before anything in it is touched."""
    path = Path(path)
    _refuse_file_on_the_way(path)
    if not path.exists():
        return
    entries = sorted(entry.name for entry in path.iterdir())
    config = path / "config.json"
    if config.is_file():
        try:
            problem = run_config_problem(json.loads(config.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            problem = "is not readable JSON"
        if problem is None:
            return
        raise OutputError(f"{option} {path} is not a spatialprobe run: a run would overwrite "
                          f"{config}, which {problem}; use a new or empty directory.")
    if set(entries) <= _STARTING:  # empty, or a run that stopped before writing config.json
        return
    victim = next((name for name in RUN_FILES if name in entries), None)
    what = (f"a run would overwrite {path / victim}" if victim else
            f"it holds {path / entries[0]}" + (f" and {len(entries) - 1} more" if len(entries) > 1 else ""))
    raise OutputError(f"{option} {path} is not empty and not a spatialprobe run (no config.json): "
                      f"{what}; use a new or empty directory.")


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
        with suppress(OSError):  # a free run's lock is empty: the pid names a holder
            os.ftruncate(held[0], 0)
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
        _refuse_file_on_the_way(self.path)  # else mkdir fails with a traceback
        self.path.mkdir(parents=True, exist_ok=True)

    @classmethod
    def claim(cls, path: str | os.PathLike[str]) -> RunDir:
        """The run directory a run writes into, once :func:`require_own_folder` allows it."""
        require_own_folder(path)
        return cls(path)

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
