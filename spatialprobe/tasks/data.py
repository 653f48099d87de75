"""Datasets: built-in sets, loaders for the field's file formats, and object-disjoint folds.

``load(name_or_path)`` is the single entry point the probes, the synthesizer and the judge use:
a built-in name (``size``, ``height``, ``posrel``) or a path to a release-format JSON lines file.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from spatialprobe import tasks
from spatialprobe.errors import UsageError
from spatialprobe.files import DataError
from spatialprobe.records import Dataset
from spatialprobe.tasks.folds import make_folds
from spatialprobe.tasks.levels import build_scale
from spatialprobe.tasks.pairs import load_pairs
from spatialprobe.tasks.release import load_release, to_release_records

__all__ = [
    "DataError",
    "Dataset",
    "build_scale",
    "builtin_data",
    "builtin_names",
    "builtin_posrel",
    "load",
    "load_pairs",
    "load_release",
    "make_folds",
    "to_release_records",
]


@cache
def builtin_data(task: str) -> Dataset:
    """The built-in dataset of a position task: its task file's release-format data file.

    posrel (``spatialprobe/tasks/posrel.jsonl``): 16 objects, each with two actions that put the
    person in different relations to it, 4 persons (man, woman, boy, girl), simple present and
    progressive: 256 instances.
    """
    import dataclasses

    ref = resources.files("spatialprobe.tasks") / str(tasks.get(task).data)
    with resources.as_file(ref) as path:
        loaded = load_release(path, task=task)
    return dataclasses.replace(loaded, name=task)


def builtin_posrel() -> Dataset:
    return builtin_data("posrel")


def builtin_names() -> list[str]:
    """Every task with built-in data (object levels or a data file), in table order."""
    return [name for name in tasks.names() if tasks.get(name).has_builtin_data]


def load(name_or_path: str, task: str | None = None) -> Dataset:
    """A built-in dataset by task name, or a release-format file by path."""
    if name_or_path in builtin_names():
        definition = tasks.get(name_or_path)
        return build_scale(name_or_path) if definition.levels else builtin_data(name_or_path)
    path = Path(name_or_path)
    if path.exists():
        return load_release(path, task=task)
    raise UsageError(
        f"Unknown dataset {name_or_path!r}: not a built-in ({', '.join(builtin_names())}) and no such file."
    )
