"""Where a dataset came from, as data: so a run's config can load it again (``spatialprobe run``).

A source is ``{"source": "builtin", "name": "size"}``, ``{"source": "release", "path": ...}`` or
``{"source": "pairs", "path": ..., "first": ..., "second": ..., "answer": ..., "delimiter": ...}``.
Paths are recorded absolute. The dataset's content version is recorded beside the source by the
run, and a replay whose file no longer has that version is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import UsageError
from spatialprobe.records import Dataset


def builtin_source(name: str) -> dict[str, Any]:
    return {"source": "builtin", "name": name}


def release_source(path: str | Path) -> dict[str, Any]:
    return {"source": "release", "path": str(Path(path).resolve())}


def pairs_source(path: str | Path, first: str, second: str, answer: str,
                 delimiter: str | None, allow_duplicates: bool = False) -> dict[str, Any]:
    source: dict[str, Any] = {"source": "pairs", "path": str(Path(path).resolve()), "first": first, "second": second,
              "answer": answer, "delimiter": delimiter}
    if allow_duplicates:  # recorded only when given, so runs made before the option keep their identity
        source["allow_duplicates"] = True
    return source


def load_source(source: Mapping[str, Any], task: str) -> Dataset:
    """Load the dataset a source names; refuse one whose content changed since it was recorded."""
    from spatialprobe.tasks.data import load, load_pairs, load_release

    kind = source.get("source")
    if kind == "builtin":
        dataset = load(str(source["name"]))
    elif kind == "release":
        dataset = load_release(source["path"], task=task)
    elif kind == "pairs":
        dataset = load_pairs(source["path"], task, first=source["first"], second=source["second"],
                             answer=source["answer"], delimiter=source.get("delimiter"),
                             allow_duplicates=bool(source.get("allow_duplicates")))
    else:
        raise UsageError(f"this run's dataset was given in Python ({source.get('name')!r}), not by a "
                         "built-in name or a file, so it cannot be loaded again from its config.")
    recorded = source.get("version")
    if recorded is not None and recorded != dataset.version:
        raise UsageError(f"{source.get('path') or source.get('name')} has changed since the run was "
                         f"made (version {dataset.version}, the run has {recorded}).")
    return dataset
