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
from spatialprobe.datasets.scale import capitalize_first, content_version, with_article
from spatialprobe.files import DataError, iter_jsonl
from spatialprobe.records import Dataset, Instance

_TRUE = {"1", "true", "yes", "y", "a", "first"}
_FALSE = {"0", "false", "no", "n", "b", "second"}


def _rows(path: Path, delimiter: str | None):
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        yield from iter_jsonl(path)
        return
    delimiter = delimiter or ("\t" if suffix in (".tsv", ".tab") else ",")
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle, delimiter=delimiter)
            for row in reader:
                yield reader.line_num, row
    except FileNotFoundError:
        raise DataError(path, None, None, "file not found") from None
    except UnicodeDecodeError as err:
        raise DataError(path, None, None, f"not UTF-8 text ({err.reason})") from None


def _first_is_larger(value, obj_a: str, obj_b: str, labels, path, line, field) -> bool:
    text = str(value).strip().lower()
    if text in _TRUE or text == labels[0] or text == obj_a.lower():
        return True
    if text in _FALSE or text == labels[1] or text == obj_b.lower():
        return False
    raise DataError(path, line, field,
                    f"cannot tell which object is {labels[0]} from {value!r} "
                    f"(use 1/0, a/b, {labels[0]}/{labels[1]} or an object's name)")


def load_pairs(path: str | Path, task: str = "size", *, first: str = "obj_a", second: str = "obj_b",
               answer: str = "label", delimiter: str | None = None, name: str | None = None) -> Dataset:
    """Load comparison pairs; ``first``/``second``/``answer`` name the columns to read."""
    if task not in tasks.comparisons():
        raise ValueError(f"Pair files hold comparisons ({', '.join(tasks.comparisons())}), not {task!r}.")
    path = Path(path)
    labels = tasks.get(task).labels
    instances: list[Instance] = []
    for line, row in _rows(path, delimiter):
        values = {}
        for field in (first, second, answer):
            value = row.get(field)
            if value is None or not str(value).strip():
                raise DataError(path, line, field, "missing or empty")
            values[field] = str(value).strip()
        obj_a, obj_b = values[first], values[second]
        a_larger = _first_is_larger(row[answer], obj_a, obj_b, labels, path, line, answer)
        instances.append(Instance(
            id=f"{task}-{len(instances):04d}", task=task, obj_a=obj_a, obj_b=obj_b,
            label=labels[0] if a_larger else labels[1],
            text=capitalize_first(f"{with_article(obj_a)} and {with_article(obj_b)}."),
            fold_keys=(obj_a, obj_b)))
    if not instances:
        raise DataError(path, None, None, "file has no rows")
    inst = tuple(instances)
    return Dataset(name=name or path.name, version=content_version(path.stem, inst), task=task,
                   labels=labels, instances=inst)
