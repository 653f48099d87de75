"""Datasets: built-in sets, loaders for the field's file formats, and object-disjoint folds.

``load(name_or_path)`` is the single entry point the probes, the synthesizer and the judge use:
a built-in name (``size``, ``height``, ``posrel``) or a path to a release-format JSON lines file.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from ..records import Dataset
from .folds import make_folds
from .pairs import load_pairs
from .release import DataError, load_release, to_release_records
from .scale import build_scale

BUILTIN = ("size", "height", "posrel")

__all__ = [
    "BUILTIN",
    "DataError",
    "Dataset",
    "build_scale",
    "builtin_posrel",
    "load",
    "load_pairs",
    "load_release",
    "make_folds",
    "to_release_records",
]


@cache
def builtin_posrel() -> Dataset:
    """Our own positional-relationship set (``spatialprobe/data/posrel.jsonl``).

    16 objects, each with two actions that put the person in different relations to it,
    4 persons (man, woman, boy, girl), simple present and progressive: 256 instances.
    """
    import dataclasses

    with resources.as_file(resources.files("spatialprobe") / "data" / "posrel.jsonl") as path:
        loaded = load_release(path, task="posrel")
    return dataclasses.replace(loaded, name="posrel")


def load(name_or_path: str, task: str | None = None) -> Dataset:
    """A built-in dataset by name, or a release-format file by path."""
    if name_or_path in ("size", "height"):
        return build_scale(name_or_path)
    if name_or_path == "posrel":
        return builtin_posrel()
    path = Path(name_or_path)
    if path.exists():
        return load_release(path, task=task)
    raise ValueError(
        f"Unknown dataset {name_or_path!r}: not a built-in ({', '.join(BUILTIN)}) and no such file."
    )
