"""Read and write the spatial-commonsense release format (JSON lines).

size / height records: ``{"text", "question", "obj_a", "obj_b", "label"}``, label 1 = obj_a
larger/taller. posrel records: ``{"text", "label", "obj_a", "obj_b"}``, label 0 inside, 1 above,
2 below, 3 beside; ``text`` may carry a trailing space. Our own posrel file adds the optional
fields ``action`` and ``pronoun``; when absent they are recovered from the text.

A malformed line raises :class:`DataError` naming the file, the line and the field; the whole
file is validated before anything is returned, so nothing is half-loaded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spatialprobe import tasks
from spatialprobe.datasets.scale import capitalize_first, content_version, with_article
from spatialprobe.records import Dataset, Instance

POSREL_CODES = {0: "inside", 1: "above", 2: "below", 3: "beside"}
POSREL_CODE_OF = {v: k for k, v in POSREL_CODES.items()}
_FEMALE = {"woman", "girl", "lady", "mother", "queen", "actress", "grandmother", "sister",
           "daughter", "wife", "aunt", "niece", "princess", "enchantress", "waitress", "nun"}


class DataError(ValueError):
    """Bad input data, located by file, line and field."""

    def __init__(self, path: str | Path, line: int | None, field: str | None, message: str):
        self.path, self.line, self.field = str(path), line, field
        where = f"{path}" + (f", line {line}" if line else "") + (f", field '{field}'" if field else "")
        super().__init__(f"{where}: {message}")


def read_json_file(path: str | Path) -> Any:
    """A whole JSON file; a missing file or bad JSON is a DataError naming the file and line."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(path, None, None, "file not found") from None
    except IsADirectoryError:
        raise DataError(path, None, None, "is a directory, not a file") from None
    except UnicodeDecodeError as err:
        raise DataError(path, None, None, f"not UTF-8 text ({err.reason})") from None
    except json.JSONDecodeError as err:
        raise DataError(path, err.lineno, None, f"not valid JSON ({err.msg})") from None


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, record) for each non-blank line; bad text or JSON is a DataError."""
    path = Path(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 -- closed by the `with` below; only open() means "not found"
    except FileNotFoundError:
        raise DataError(path, None, None, "file not found") from None
    except IsADirectoryError:
        raise DataError(path, None, None, "is a directory, not a file") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise DataError(path, number, None, f"not UTF-8 text ({err.reason})") from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(path, number, None, f"not valid JSON ({err.msg})") from None
            if not isinstance(record, dict):
                raise DataError(path, number, None, "expected a JSON object")
            yield number, record


def require(record: dict, field: str, kind: type | tuple[type, ...], path, line) -> Any:
    if field not in record:
        raise DataError(path, line, field, "missing")
    value = record[field]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DataError(path, line, field, f"expected {names}, got {value!r}")
    if isinstance(value, str) and not value.strip():
        raise DataError(path, line, field, "empty")
    return value


def pronoun_for(person: str) -> str:
    return "She" if person.lower() in _FEMALE else "He"


def _action_from_text(text: str, person: str, obj: str) -> str:
    match = re.match(rf"^\s*an?\s+{re.escape(person)}\s+(.*?)\s+the\s+{re.escape(obj)}\s*\.?\s*$",
                     text, flags=re.IGNORECASE)
    return match.group(1) if match else ""


def guess_task(path: str | Path) -> str:
    """The task a release file holds, from its first record (posrel has no ``question``)."""
    for line, record in iter_jsonl(path):
        if "question" in record and "obj_a" in record:
            words = set(re.findall(r"[a-z]+", str(record["question"]).lower()))
            found = [t for t in tasks.comparisons() if words & set(tasks.get(t).labels)]
            if len(found) != 1:
                raise DataError(path, line, "question", "names no comparison task's words "
                                f"({', '.join(w for t in tasks.comparisons() for w in tasks.labels_of(t))})")
            return found[0]
        if "obj_a" in record:
            return "posrel"
        raise DataError(path, line, "obj_a", "missing: not a spatial-commonsense release file")
    raise DataError(path, None, None, "file has no records")


def load_release(path: str | Path, task: str | None = None) -> Dataset:
    """Load a release-format file of the given (or guessed) task."""
    path = Path(path)
    task = task or guess_task(path)
    instances: list[Instance] = []
    for line, rec in iter_jsonl(path):
        obj_a = require(rec, "obj_a", str, path, line).strip()
        obj_b = require(rec, "obj_b", str, path, line).strip()
        label = require(rec, "label", int, path, line)
        number = len(instances)
        definition = tasks.get(task)
        if not definition.is_comparison:
            if label not in POSREL_CODES:
                raise DataError(path, line, "label", f"expected 0-3 (inside/above/below/beside), got {label}")
            text = require(rec, "text", str, path, line).strip()
            action = rec.get("action") or _action_from_text(text, obj_a, obj_b)
            instances.append(Instance(
                id=f"{task}-{number:04d}", task=task, obj_a=obj_a, obj_b=obj_b,
                label=POSREL_CODES[label], text=text, action=action,
                pronoun=rec.get("pronoun") or pronoun_for(obj_a), fold_keys=(obj_b,)))
        else:
            if label not in (0, 1):
                raise DataError(path, line, "label", f"expected 0 or 1, got {label}")
            labels = definition.labels
            text = rec.get("text") or capitalize_first(f"{with_article(obj_a)} and {with_article(obj_b)}.")
            instances.append(Instance(
                id=f"{task}-{number:04d}", task=task, obj_a=obj_a, obj_b=obj_b,
                label=labels[0] if label == 1 else labels[1], text=str(text).strip(),
                fold_keys=(obj_a, obj_b)))
    if not instances:
        raise DataError(path, None, None, "file has no records")
    inst = tuple(instances)
    labels = tasks.get(task).labels
    return Dataset(name=path.name, version=content_version(path.stem, inst), task=task,
                   labels=labels, instances=inst)


def to_release_records(dataset: Dataset) -> list[dict[str, Any]]:
    """The dataset as release-format records (export, and a round trip through the loader)."""
    rows = []
    for inst in dataset.instances:
        if not tasks.get(dataset.task).is_comparison:
            row = {"text": inst.text, "label": POSREL_CODE_OF[inst.label],
                   "obj_a": inst.obj_a, "obj_b": inst.obj_b}
            if inst.action:
                row["action"] = inst.action
            if inst.pronoun:
                row["pronoun"] = inst.pronoun
        else:
            word = tasks.get(dataset.task).question_word
            row = {"text": inst.text,
                   "question": f"Is {with_article(inst.obj_a)} {word} than {with_article(inst.obj_b)}?",
                   "obj_a": inst.obj_a, "obj_b": inst.obj_b,
                   "label": int(inst.label == dataset.labels[0])}
        rows.append(row)
    return rows
