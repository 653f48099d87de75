"""``plain``: the per-item predictions a paper publishes, as JSON, JSON lines or CSV, read by a
field map: ``--id``, ``--prediction``, ``--gold`` (and ``--records KEY`` for a list under a key of a
JSON object, ``--cluster FIELD``, ``--model``, ``--benchmark``; ``--reply``, ``--question`` and
``--options`` name the fields of the generated text, the question and the list of option texts,
which the audits read). An item is correct where its
prediction equals its gold, compared as text with surrounding spaces and case ignored."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.interop.base import Instance, Log, field_of, jsonl, option_texts, options_of, text, unique

OPTIONS = ("id", "prediction", "gold", "records", "cluster", "model", "benchmark", "reply", "question", "options")


def records(path: Path, key: str | None) -> Iterator[tuple[int | None, Mapping[str, Any]]]:
    """(line or None, record) of a .jsonl, .json (a list, or a list under ``key``) or .csv file."""
    from spatialprobe.interop.base import decoded, loads

    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        yield from jsonl(path)
    elif suffix == ".csv":
        yield from enumerate(csv.DictReader(io.StringIO(decoded(path.read_bytes(), path), newline="")), 2)
    elif suffix == ".json":
        data = loads(decoded(path.read_bytes(), path), path)
        if key is not None:
            data = field_of(data, key, path, None)
        if not isinstance(data, list):
            raise DataError(path, None, key, "must be a list of records (give --records KEY for a list under a key)")
        for n, record in enumerate(data):
            if not isinstance(record, dict):
                raise DataError(path, None, f"{key or ''}[{n}]", "is not an object")
            yield None, record
    else:
        raise UsageError(f"{path}: the plain format reads .json, .jsonl or .csv, not {suffix or 'no suffix'}.")


def same(pred: Any, gold: Any) -> bool:
    return pred is not None and str(pred).strip().casefold() == str(gold).strip().casefold()


def read(paths: list[Path], options: Mapping[str, Any]) -> list[Log]:
    """One log per file: its records' id, prediction and gold by the field map."""
    given = options_of(options, OPTIONS, "plain")
    for needed in ("id", "prediction", "gold"):
        if needed not in given:
            raise UsageError(f"the plain format needs --{needed} FIELD (the field map: --id, --prediction, --gold).")
    if len(paths) > 1 and given.get("model"):
        raise UsageError("--model names the model of one file; give one file per import, or no --model "
                         "(each file's name is then its model).")
    logs = []
    for path in paths:
        instances = []
        for line, record in records(path, given.get("records")):
            ident = text(field_of(record, given["id"], path, line))
            pred = field_of(record, given["prediction"], path, line)
            gold = field_of(record, given["gold"], path, line)
            cluster = text(field_of(record, given["cluster"], path, line)) if given.get("cluster") else None
            more = {name: field_of(record, given[name], path, line) for name in ("reply", "question", "options")
                    if given.get(name)}
            listed = more.get("options")
            if isinstance(listed, str) and listed.lstrip().startswith("["):
                with contextlib.suppress(json.JSONDecodeError, RecursionError):
                    listed = json.loads(listed)  # a CSV cell holding a JSON list
            if "options" in more and option_texts(listed) is None:
                raise DataError(path, line, given["options"], "must be a list of at least two option texts")
            instances.append(Instance(str(ident), text(gold), text(pred), same(pred, gold),
                                      float(same(pred, gold)), cluster, None, text(more.get("question")),
                                      text(more.get("reply")), option_texts(listed)))
        logs.append(Log("plain", given.get("model") or path.stem, given.get("benchmark") or "plain",
                        "exact match (case and spaces ignored)", unique(instances, path),
                        {"harness": "plain", "field_map": {k: given[k] for k in ("id", "prediction", "gold")}},
                        None, given.get("cluster"), [path]))
    return logs
