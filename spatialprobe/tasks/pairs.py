"""Generic object-pair comparison files: CSV, TSV or JSON lines.

Each row names a first object, a second object and which of the two is larger (or taller).
Column names are options, so RelativeSize (Bagherinezhad et al. 2016) or a user's own pairs run
through the same probe. The "which" column accepts: 1/0, true/false, yes/no, ``a``/``b``, the
label words themselves (``larger``/``smaller``), or the name of the larger object.
"""

from __future__ import annotations

import csv
from pathlib import Path

from spatialprobe import tasks
from spatialprobe.errors import UsageError
from spatialprobe.files import DataError, iter_jsonl, shown, unreadable_refused
from spatialprobe.records import Dataset, Instance
from spatialprobe.tasks.levels import capitalize_first, content_version, with_article
from spatialprobe.validate import MAX_ID, cut, pair_problems

_TRUE = {"1", "true", "yes", "y", "a", "first"}
_FALSE = {"0", "false", "no", "n", "b", "second"}


def _rows(path: Path, delimiter: str | None):
    """(line, row) of a pair file; a CSV row starts on the line after the previous one ended, so
    a value that runs over lines (an unbalanced quote) is named at the line the quote opens."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        yield from iter_jsonl(path)
        return
    delimiter = delimiter or ("\t" if suffix in (".tsv", ".tab") else ",")
    if len(delimiter) != 1:
        raise UsageError(f"--delimiter must be one character, not {delimiter!r}.")
    # utf-8-sig: Excel saves CSV with a byte-order mark
    with unreadable_refused(path), open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        start = 1
        try:
            if any("\n" in name or "\r" in name for name in reader.fieldnames or ()):
                raise DataError(path, 1, None, "a quoted column name runs over lines: is a quote left open?")
            start = reader.line_num + 1  # the line after the header
            for row in reader:
                for field, value in row.items():
                    if isinstance(value, str) and ("\n" in value or "\r" in value):
                        raise DataError(path, start, cut(field), "a quoted value runs from here to line "
                                        f"{reader.line_num}: is a quote left open?")
                yield start, row
                start = reader.line_num + 1
        except csv.Error as err:
            raise DataError(path, start, None, f"not valid CSV ({err})") from None


def _first_is_larger(value, obj_a: str, obj_b: str, labels, path, line, field) -> bool:
    text = str(value).strip().lower()
    if text in _TRUE or text == labels[0] or text == obj_a.lower():
        return True
    if text in _FALSE or text == labels[1] or text == obj_b.lower():
        return False
    raise DataError(path, line, field,
                    f"cannot tell which object is {labels[0]} from {shown(value)} "
                    f"(use 1/0, a/b, {labels[0]}/{labels[1]} or an object's name)")


def _value(row: dict, field: str, path: Path, line: int) -> str:
    """A cell as text: a string (an object's name) or, in JSON lines, a number or true/false."""
    value = row.get(field)
    if isinstance(value, (int, float)):  # JSON 1 / true as the answer
        value = str(value).lower()
    if value is not None and not isinstance(value, str):
        raise DataError(path, line, field, f"expected text, got {shown(value)}")
    if value is None or not value.strip():
        raise DataError(path, line, field, "missing or empty")
    if len(value) > MAX_ID:
        raise DataError(path, line, field, f"{len(value):,} characters long; at most {MAX_ID} allowed")
    return value.strip()


def load_pairs(path: str | Path, task: str = "size", *, first: str = "obj_a", second: str = "obj_b",
               answer: str = "label", delimiter: str | None = None, name: str | None = None,
               allow_duplicates: bool = False) -> Dataset:
    """Load comparison pairs; ``first``/``second``/``answer`` name the columns to read. An object
    compared with itself, a repeated row (unless ``allow_duplicates``) and rows contradicting
    each other are refused, naming the lines (:func:`spatialprobe.validate.pair_problems`)."""
    if task not in tasks.comparisons():
        raise UsageError(f"Pair files hold comparisons ({', '.join(tasks.comparisons())}), not {task!r}.")
    path = Path(path)
    labels = tasks.get(task).labels
    rows = []
    for line, row in _rows(path, delimiter):
        obj_a, obj_b = _value(row, first, path, line), _value(row, second, path, line)
        a_larger = _first_is_larger(_value(row, answer, path, line), obj_a, obj_b, labels, path, line,
                                    answer)
        rows.append((line, obj_a, obj_b, a_larger))
    if not rows:
        raise DataError(path, None, None, "file has no rows")
    pair_problems(rows, path, answer, allow_duplicates)
    inst = tuple(Instance(
        id=f"{task}-{number:04d}", task=task, obj_a=obj_a, obj_b=obj_b,
        label=labels[0] if a_larger else labels[1],
        text=capitalize_first(f"{with_article(obj_a)} and {with_article(obj_b)}."),
        fold_keys=(obj_a, obj_b)) for number, (_, obj_a, obj_b, a_larger) in enumerate(rows))
    return Dataset(name=name or path.name, version=content_version(path.stem, inst), task=task,
                   labels=labels, instances=inst)
