"""A subset of a source's items, kept in a content-hashed file (``--items FILE``): the keys to
ask, the dataset they come from, and how they were chosen (``spatialprobe audit blind --debias``
records its pruning there). A run restricted to a subset records the file and its hash in its
source settings, so the subset is part of the run's identity, and a replay applies it again
(:func:`spatialprobe.engine.rebuild.restrict`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError

KIND = "spatialprobe item subset"


def content_hash(record: Mapping[str, Any]) -> str:
    """sha256 of the record's canonical JSON, its own ``sha256`` left out."""
    body = {k: v for k, v in record.items() if k != "sha256"}
    return "sha256:" + hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def write_subset(record: Mapping[str, Any], path: Path) -> Path:
    """Write ``record`` (``dataset``, ``keys``, anything else) with its hash; ``path`` a folder
    (made where it does not exist): ``subset-<hash>.json`` inside it; a ``.json`` path: that file.
    Returns the file written."""
    if path.suffix.lower() != ".json":
        path.mkdir(parents=True, exist_ok=True)
    full = {"kind": KIND, **record}
    full["sha256"] = content_hash(full)
    target = path / f"subset-{full['sha256'][7:19]}.json" if path.is_dir() else path
    target.write_text(json.dumps(full, indent=1) + "\n", encoding="utf-8")
    return target


def read_subset(path: Path) -> dict[str, Any]:
    """The subset file's record, its hash checked."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise DataError(path, None, None, f"is not a readable subset file ({str(err).splitlines()[0][:80]})") from None
    if not isinstance(record, dict) or record.get("kind") != KIND or not isinstance(record.get("keys"), list):
        raise DataError(path, None, "kind", f"is not a {KIND} file (spatialprobe audit blind --debias writes one)")
    if record.get("sha256") != content_hash(record):
        raise DataError(path, None, "sha256", "does not match the file's content: it was edited after it was written")
    return record
