"""Files in and out: atomic writes, our own JSON files, and users' JSON / JSON-lines input.

**Writing.** Every file a run writes goes through :func:`atomic_path` (a temporary file next to
the target, fsync, ``os.replace``, fsync of the directory), so a crash or power cut never leaves
half a file under its final name; files get the mode a plain ``open()`` would give (0666 minus
the umask), not ``mkstemp``'s 0600.

**Reading our own files** (:func:`read_json`, :func:`read_jsonl`): plain, they were written here.

**Reading a user's file** (:func:`read_json_file`, :func:`iter_jsonl`, :func:`require`): bad
input is a :class:`DataError` that names the file, the line and the field. Both readers accept a
UTF-8 byte-order mark (as Excel and Notepad save) and refuse JSON nested deeper than
:data:`MAX_DEPTH` (no user file of ours nests beyond a few levels; Python's parser would die with
a ``RecursionError`` on a few thousand).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError

MAX_DEPTH = 32
"""Deepest nesting of lists and objects a user's JSON may have."""


def nesting_depth(value: Any) -> int:
    """How deep lists and objects nest in ``value`` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in item if isinstance(child, (dict, list)))
    return deepest


def parse_json(text: str, path: str | Path, line: int | None = None) -> Any:
    """``json.loads`` of a user's text: bad JSON or nesting deeper than :data:`MAX_DEPTH` is a
    DataError naming the file (and line)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(path, line or err.lineno, None, f"not valid JSON ({err.msg})") from None
    except RecursionError:  # thousands of levels: deeper than MAX_DEPTH in any case
        value = None
        depth = MAX_DEPTH + 1
    else:
        depth = nesting_depth(value)
    if depth > MAX_DEPTH:
        raise DataError(path, line, None, f"lists or objects nested deeper than {MAX_DEPTH} levels")
    return value


def read_json_file(path: str | Path) -> Any:
    """A whole JSON file; a missing file or bad JSON is a DataError naming the file and line."""
    path = Path(path)
    with unreadable_refused(path):
        return parse_json(path.read_text(encoding="utf-8-sig"), path)


@contextmanager
def unreadable_refused(path: Path) -> Iterator[None]:
    """A user's file that cannot be opened or decoded inside, refused as a DataError naming it:
    not found, a directory, unreadable, not UTF-8."""
    try:
        yield
    except FileNotFoundError:
        raise DataError(path, None, None, "file not found") from None
    except IsADirectoryError:
        raise DataError(path, None, None, "is a directory, not a file") from None
    except OSError as err:
        raise DataError(path, None, None, f"cannot be read ({err.strerror or err})") from None
    except UnicodeDecodeError as err:
        raise DataError(path, None, None, f"not UTF-8 text ({err.reason})") from None


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, record) for each non-blank line; bad text or JSON is a DataError."""
    path = Path(path)
    with unreadable_refused(path):
        handle = open(path, "rb")  # noqa: SIM115 -- closed by the `with` below; only open() means "not found"
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise DataError(path, number, None, f"not UTF-8 text ({err.reason})") from None
            if not line.strip():
                continue
            record = parse_json(line, path, number)
            if not isinstance(record, dict):
                raise DataError(path, number, None, "expected a JSON object")
            yield number, record


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for a message that stays one short line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def require(record: dict, field: str, kind: type | tuple[type, ...], path, line) -> Any:
    if field not in record:
        raise DataError(path, line, field, "missing")
    value = record[field]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DataError(path, line, field, f"expected {names}, got {shown(value)}")
    if isinstance(value, str) and not value.strip():
        raise DataError(path, line, field, "empty")
    return value


def current_umask() -> int:
    """The process umask, read without changing it.

    ``os.umask`` can only be read by setting it, and between the two calls another thread that
    creates a file would get the temporary mask; ``/proc/self/status`` (Linux 4.7+) has no such
    race and follows later ``umask`` changes, so it is read on every write (a few microseconds
    next to an fsync). Elsewhere the two-call read is the only way.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable: the new directory entry survives a power cut."""
    if os.name != "posix":  # directories cannot be opened for fsync on Windows
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit_file(tmp: Path, final: Path) -> None:
    """Rename a fully written ``tmp`` onto ``final``: its bytes synced to disk first, its mode
    what ``open()`` would have given (0666 minus the umask), the directory synced after."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o666 & ~current_umask())
    os.replace(tmp, final)
    fsync_dir(final.parent)


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path next to ``path`` to write to; renamed onto ``path`` when the block ends
    without an exception, deleted when it raises. The temporary name keeps ``path``'s suffix, so
    writers that pick a format by suffix (matplotlib ``savefig``) still work."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        commit_file(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, data: Any) -> None:
    atomic_write_text(Path(path), json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    atomic_write_text(Path(path), "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A run's rows (``predictions.jsonl``), as :func:`read_jsonl`; a line that is not a JSON
    object (a file cut off while it was written, or edited) is a DataError naming the file and line."""
    lines = [line for line in Path(path).read_bytes().split(b"\n") if line.strip()]
    try:  # every line at once (a fifth of the time); any doubt: line by line, naming the bad one
        rows = json.loads(b"[" + b",".join(lines) + b"]")
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        rows = None
    if rows is not None and len(rows) == len(lines) and all(isinstance(r, dict) for r in rows):
        return rows
    out = []
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as err:
                reason = err.msg if isinstance(err, json.JSONDecodeError) else "not UTF-8"
                raise DataError(path, number, None, f"is not a JSON row ({reason}): the file is cut off or "
                                "damaged; run the run again (it resumes) or remove the line") from None
            if not isinstance(value, dict):
                raise DataError(path, number, None, f"is a JSON {type(value).__name__}, not a row object")
            out.append(value)
    return out
