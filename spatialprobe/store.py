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
``~/.spatialprobe/index.sqlite``); ``spatialprobe runs`` lists it. It is a cache of the run
folders, never a point of failure: where it cannot be read or written (a read-only home, a home
that is a file, a corrupt database) a run still writes all its own files, one warning says so,
and ``spatialprobe runs --rebuild`` makes it again from the run folders.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sqlite3
import sys
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from spatialprobe.errors import OutputError, RunInUse, UsageError
from spatialprobe.files import read_json, write_json
from spatialprobe.provenance import provenance

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; runs are then not guarded against each other
    fcntl = None  # type: ignore[assignment]


SQLITE_FULL = 13
"""SQLite's result code for "database or disk is full" (``sqlite3.SQLITE_FULL`` from Python 3.11)."""


def disk_full(err: sqlite3.Error) -> bool:
    """Whether SQLite failed for want of space (SQLITE_FULL: "database or disk is full")."""
    return getattr(err, "sqlite_errorcode", None) == SQLITE_FULL or "database or disk is full" in str(err)


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


def lock_holder(path: Path) -> str | None:
    """The pid of another process holding ``RUN/run.lock`` (``synthesize`` writing the run), else
    None. A shared ``flock`` probe on a read-only descriptor: it works on a read-only mount too."""
    lock = path / "run.lock"
    if fcntl is None or not lock.exists() or str(path.resolve()) in _HELD:  # _HELD: this process's own
        return None
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        return _holder_pid(fd)
    finally:
        os.close(fd)  # drops the probe's shared lock


class RunDir:
    """One run's directory. Creating it twice on the same path resumes the same run."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        _refuse_file_on_the_way(self.path)  # else mkdir fails with a traceback
        self.path.mkdir(parents=True, exist_ok=True)

    @classmethod
    def claim(cls, path: str | os.PathLike[str]) -> RunDir:
        """The run directory a run writes into, once :func:`require_own_folder` allows it. A
        folder another process is working in (its ``run.lock`` held) is that process's run: it is
        refused as in use before its contents are judged (they may be half written)."""
        holder = lock_holder(Path(path))
        if holder is not None:
            raise RunInUse(f"{path} is in use by another spatialprobe process (pid {holder}); "
                           "wait for it to finish or use another --out.")
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
        """The run's cache, committed on leaving; SQLite's "database or disk is full" becomes the
        OSError (ENOSPC, naming ``run.sqlite``) every other full-disk write raises, so the command
        says it in the one sentence a full disk gets (``cli.disk_message``)."""
        conn = connect(self.db_path)
        try:
            yield conn
            conn.commit()
        except sqlite3.OperationalError as err:
            if not disk_full(err):
                raise
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.db_path)) from None
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
                    raise UsageError(
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


_WARNED: set[str] = set()


def _unusable(index: Path, err: BaseException) -> None:
    """Warn, once per process and index, that the index cannot be used; the caller goes on."""
    if str(index) in _WARNED:
        return
    _WARNED.add(str(index))
    reason = str(err).strip() or type(err).__name__
    sys.stderr.write(f"Warning: the index of runs {index} cannot be used ({reason}); run folders are "
                     "read and written as usual, and `spatialprobe runs --rebuild` rebuilds the index "
                     "from them.\n")


def index_row(path: Path, summary: Mapping[str, Any]) -> tuple[Any, ...]:
    """A run's row of the index, all of it from the run folder (so a rebuild gives it again)."""
    def headline(name: str) -> float | None:
        value = (summary.get(name) or {}).get("mean")
        return None if value is None else float(value)

    dataset = summary.get("dataset")
    return (str(Path(path).resolve()), str(summary.get("kind")), summary.get("task"), summary.get("model"),
            None if dataset is None else str(dataset), headline("accuracy"), headline("macro_f1"),
            str((summary.get("provenance") or {}).get("created", "")))


def _write_rows(rows: Iterable[tuple[Any, ...]], *, replace_all: bool = False) -> bool:
    """Write rows into the index; False (and one warning) where the index cannot be written."""
    index = home() / "index.sqlite"
    if index.parent.exists() and not index.parent.is_dir():
        _unusable(index, NotADirectoryError(f"{index.parent} is a file, not a directory"))
        return False
    try:
        conn = connect(index)
        try:
            conn.execute(_INDEX_SCHEMA)
            if replace_all:
                conn.execute("DELETE FROM runs")
            conn.executemany("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", list(rows))
            conn.commit()
        finally:
            conn.close()
    except (sqlite3.Error, OSError) as err:  # read-only, a file for a home, a corrupt database
        _unusable(index, err)
        return False
    return True


def register_run(path: Path, summary: Mapping[str, Any]) -> bool:
    """Add a finished run to the index (a cache of the run folders: never a point of failure)."""
    return _write_rows([index_row(path, summary)])


def list_runs() -> list[dict[str, Any]] | None:
    """The indexed runs whose folders still exist, oldest first; ``None`` (after one warning)
    where the index cannot be read, so the caller falls back to run folders."""
    index = home() / "index.sqlite"
    if index.parent.exists() and not index.parent.is_dir():
        _unusable(index, NotADirectoryError(f"{index.parent} is a file, not a directory"))
        return None
    if not index.is_file():
        if index.exists():
            _unusable(index, IsADirectoryError(f"{index} is not a file"))
            return None
        return []
    try:
        conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=60)
        try:
            conn.row_factory = sqlite3.Row
            rows = conn.execute("SELECT * FROM runs ORDER BY created").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as err:
        _unusable(index, err)
        return None
    return [dict(r) for r in rows if Path(r["path"]).exists()]


def find_runs(roots: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Run folders (``config.json`` and ``summary.json``) at or under ``roots``, sorted."""
    found: set[Path] = set()
    for root in map(Path, roots):
        summaries = [root / "summary.json"] if (root / "summary.json").is_file() else root.rglob("summary.json")
        found.update(s.parent for s in summaries if (s.parent / "config.json").is_file())
    return sorted(found)


def rebuild_index(runs: Iterable[tuple[Path, Mapping[str, Any]]]) -> bool:
    """Replace the index by the rows of ``runs`` (folder, summary); False if it cannot be written."""
    return _write_rows([index_row(path, summary) for path, summary in runs], replace_all=True)
