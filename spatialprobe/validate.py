"""Every input checked against its task before anything runs: one check per input kind.

The readers (``tasks.release``, ``tasks.pairs``, ``tasks.yes_no``, ``prompts.templates``,
``synthesis.prompts``, ``judging.human``) check each record's fields with the helpers here, and
the commands and ``spatialprobe datasets validate`` call the same entry points
(:mod:`spatialprobe.tasks.probe_data`: ``task_data``, ``check_folds``), so ``validate``
passes exactly what a run accepts.

What is checked, and where the rule lives:

* field types and sizes: :func:`text` (a non-empty string, ids at most :data:`MAX_ID`
  characters), :func:`string_list` (SR2D attributes); nesting depth and the byte-order mark in
  :mod:`spatialprobe.files`;
* labels are the task's: :func:`task_label`; a release file's question asks the task's question
  (``tasks.release``);
* ids are unique: :class:`Unique` names both lines;
* comparison pairs: :func:`pair_problems` (an object with itself, repeated and contradicting
  rows);
* folds: ``probe_data.check_folds`` refuses folds that leave a fold without dev or test instances and
  says how many instances no fold tests.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.files import shown

MAX_ID = 200
"""Longest id a user's file may give (ids name image files and table rows)."""


def cut(name: str, limit: int = 40) -> str:
    """A name from a user's file (a key, a column) cut to ``limit`` characters, on one line."""
    name = " ".join(name.split())
    return name if len(name) <= limit else f"{name[:limit]}..."


def text(record: dict, field: str, path, line, *, optional: bool = False,
         max_len: int | None = None) -> str | None:
    """``record[field]`` as a non-empty string (None when ``optional`` and absent or null)."""
    value = record.get(field)
    if value is None:
        if optional:
            return None
        raise DataError(path, line, field, "missing")
    if not isinstance(value, str):
        raise DataError(path, line, field, f"expected str, got {shown(value)}")
    if not value.strip():
        raise DataError(path, line, field, "empty")
    if max_len is not None and len(value) > max_len:
        raise DataError(path, line, field, f"{len(value):,} characters long; at most {max_len} allowed")
    return value


def identifier(record: dict, field: str, path, line, *, optional: bool = False) -> str | None:
    """An id: a non-empty string of at most :data:`MAX_ID` characters."""
    return text(record, field, path, line, optional=optional, max_len=MAX_ID)


def string_list(record: dict, field: str, path, line) -> list[str]:
    """A non-empty list of non-empty strings (SR2D's ``obj_1_attributes``)."""
    value = record.get(field)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise DataError(path, line, field, f"expected a non-empty list of names, got {shown(value)}")
    return value


def task_label(value: Any, task: str, path, line, field: str = "label") -> str:
    """``value``, which must be one of ``task``'s labels (as its task file spells them)."""
    from spatialprobe import tasks

    labels = tasks.labels_of(task)
    word = value if isinstance(value, str) else None
    if word not in labels:
        raise DataError(path, line, field, f"{shown(value)} is not a {task} label "
                                           f"({', '.join(labels)})")
    return word


def normal(value: str) -> str:
    """Lower case, single spaces, no spaces at the ends: how answers and labels are compared."""
    return " ".join(value.lower().split())


class Unique:
    """Remembers the line of each key; a repeat is a DataError naming both lines."""

    def __init__(self, path, field: str):
        self.path, self.field = path, field
        self.lines: dict[Hashable, int | None] = {}

    def add(self, key: Hashable, line: int | None) -> None:
        if key in self.lines:
            raise DataError(self.path, line, self.field, f"repeats {shown(key)} of line {self.lines[key]}")
        self.lines[key] = line


def known_task(value: str, path, line, field: str = "task") -> str:
    """A task named in a file: one the toolkit has."""
    from spatialprobe import tasks

    if value not in tasks.names():
        raise DataError(path, line, field, f"{shown(value)} is not a task ({', '.join(tasks.names())})")
    return value


def task_name(task: str, option: str = "--task") -> str:
    """A known task, or one sentence naming the tasks there are."""
    from spatialprobe import tasks

    if task not in tasks.names():
        raise UsageError(f"{option} {task!r} is not a task; choose from {', '.join(tasks.names())}.")
    return task


def read_run_config(path: Path) -> dict[str, Any]:
    """A run's ``config.json`` as far as its shape goes (an object with a string ``kind`` and
    ``settings``, ``runtime`` and ``inputs`` objects); each kind checks its own settings."""
    from spatialprobe.files import read_json_file

    data = read_json_file(path)
    if not isinstance(data, dict):
        raise DataError(path, None, None, "not a spatialprobe run config (expected a JSON object)")
    if not isinstance(data.get("kind"), str):
        raise DataError(path, None, "kind", "missing: not a spatialprobe run config")
    for key in ("settings", "runtime", "inputs"):
        if not isinstance(data.get(key, {}), dict):
            raise DataError(path, None, key, f"expected an object, got {shown(data[key])}")
    return data


def detection_prompt(key: str, prompts: dict[int, dict[str, Any]], path, prompts_path) -> dict[str, Any]:
    """The SR2D prompt a released detection entry ``<unique_id>_<k>`` belongs to."""
    head = key.split("_")[0]
    if not head.isdigit() or int(head) not in prompts:
        raise DataError(path, None, cut(key), f"no SR2D prompt with unique_id {shown(head, 40)} "
                                                    f"in {prompts_path}")
    return prompts[int(head)]


def check_detection(key: str, record: Any, prompt: dict[str, Any], path) -> None:
    """A released detection entry: ``classes`` a list of names; ``sra`` (0/1) or ``centroid``
    (one [x, y] point per class) where both of the prompt's objects were detected."""
    where = cut(key)
    if not isinstance(record, dict) or "classes" not in record:
        raise DataError(path, None, f"{where}.classes", "missing")
    classes = record["classes"]
    if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
        raise DataError(path, None, f"{where}.classes", f"expected a list of class names, got {shown(classes)}")
    if not {prompt["obj_1_attributes"][0], prompt["obj_2_attributes"][0]} <= set(classes):
        return
    sra, centroid = record.get("sra"), record.get("centroid")
    if sra is None and centroid is None:
        raise DataError(path, None, f"{where}.sra", "missing: with both objects detected, give sra or centroid")
    if sra is not None and sra not in (0, 1):
        raise DataError(path, None, f"{where}.sra", f"expected 0 or 1, got {shown(sra)}")
    if sra is None and not (isinstance(centroid, list) and len(centroid) == len(classes) and all(
            isinstance(p, list) and len(p) == 2 and all(_number(v) for v in p) for p in centroid)):
        raise DataError(path, None, f"{where}.centroid", f"expected one [x, y] point per class, "
                                                         f"got {shown(centroid)}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---- comparison pairs ---------------------------------------------------------------------------

def pair_problems(rows: Sequence[tuple[int, str, str, bool]], path, field: str,
                  allow_duplicates: bool = False) -> None:
    """Check (line, first, second, first-is-X-er) rows: an object compared with itself and two
    rows that contradict each other ("a > b" and "a < b", or "a > b" and "b > a") are refused,
    naming the lines; a repeated row is refused too, unless ``allow_duplicates`` (then
    ``probe_data.repeated_pairs`` counts them)."""
    said: dict[tuple[str, str], tuple[bool, int]] = {}  # ordered pair -> (first is X-er, line)
    for line, a, b, a_wins in rows:
        key = (a.lower(), b.lower())
        if key[0] == key[1]:
            raise DataError(path, line, None, f"compares {shown(a)} with itself")
        for (x, y), wins in ((key, a_wins), ((key[1], key[0]), not a_wins)):
            if (x, y) not in said:
                continue
            before, first_line = said[(x, y)]
            if before != wins:
                raise DataError(path, line, field, f"contradicts line {first_line} ({shown(a)} and {shown(b)} "
                                                   "compared both ways)")
            if (x, y) == key and not allow_duplicates:
                raise DataError(path, line, None, f"repeats the pair of line {first_line} "
                                                  "(pass --allow-duplicates to keep repeats)")
        said.setdefault(key, (a_wins, line))
