"""``plain``: the per-item predictions a paper publishes, as JSON, JSON lines or CSV, read by a
field map: ``--id``, ``--prediction``, ``--gold`` (and ``--records KEY`` for a list under a key of a
JSON object, ``--cluster FIELD``, ``--model``, ``--benchmark``; ``--reply``, ``--question`` and
``--options`` name the fields of the generated text, the question and the list of option texts,
which the audits read). An item is correct where its prediction equals its gold, compared as text
with surrounding spaces and case ignored; or, with ``--metric FIELD``, where the file holds the
verdict its harness gave (a 0/1 or true/false per item, or a score in [0, 1]), that verdict.
``--cluster`` takes one field, or two (``a,b``: a row of two objects)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.interop import base
from spatialprobe.interop.base import Instance, Log, field_of, jsonl, option_texts, options_of, text, unique
from spatialprobe.interop.clusters import cluster_fields, cluster_log, clustered

OPTIONS = ("id", "prediction", "gold", "records", "cluster", "model", "benchmark", "reply", "question", "options",
           "metric")


def records(path: Path, key: str | None) -> Iterator[tuple[int | None, Mapping[str, Any]]]:
    """(line or None, record) of a .jsonl, .json (a list, or a list under ``key``) or .csv file."""
    from spatialprobe.interop.base import decoded, loads

    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        yield from jsonl(path)
    elif suffix == ".csv":
        yield from base.csv_rows(path)
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
    for needed in ("id", "gold") if given.get("metric") else ("id", "prediction", "gold"):
        if needed not in given:
            raise UsageError(f"the plain format needs --{needed} FIELD (the field map: --id, --prediction, --gold; "
                             "--metric FIELD where the file holds each item's verdict).")
    if len(paths) > 1 and given.get("model"):
        raise UsageError("--model names the model of one file; give one file per import, or no --model "
                         "(each file's name is then its model).")
    clusters = cluster_fields(given.get("cluster"))
    logs = []
    for path in paths:
        instances = [_instance(record, path, line, given, clusters)
                     for line, record in records(path, given.get("records"))]
        verdict = f"{given['metric']} (the file's verdict per item)" if given.get("metric") else \
            "exact match (case and spaces ignored)"
        log = Log("plain", given.get("model") or path.stem, given.get("benchmark") or "plain", verdict,
                  unique(instances, path), {"harness": "plain", "field_map": {
                      k: given[k] for k in ("id", "prediction", "gold", "metric") if k in given}}, None, None, [path])
        logs.append(cluster_log(log, clusters))
    return logs


def _instance(record: Mapping[str, Any], path: Path, line: int | None, given: Mapping[str, Any],
              clusters: tuple[str, ...]) -> Instance:
    ident = text(field_of(record, given["id"], path, line))
    gold = base.gold_of(field_of(record, given["gold"], path, line), path, line, given["gold"])
    pred = field_of(record, given["prediction"], path, line) if given.get("prediction") else None
    if given.get("metric"):
        score = base.score_of(field_of(record, given["metric"], path, line), path, line, given["metric"])
    else:
        score = float(same(pred, gold))
    cluster, fields = clustered({c: field_of(record, c, path, line) for c in clusters})
    more = {name: field_of(record, given[name], path, line) for name in ("reply", "question", "options")
            if given.get(name)}
    listed = more.get("options")
    if isinstance(listed, str) and listed.lstrip().startswith("["):
        with contextlib.suppress(json.JSONDecodeError, RecursionError):
            listed = json.loads(listed)  # a CSV cell holding a JSON list
    if "options" in more and option_texts(listed) is None:
        raise DataError(path, line, given["options"], "must be a list of at least two option texts")
    return Instance(str(ident), text(gold), text(pred), score == 1.0, score, cluster, None, text(more.get("question")),
                    text(more.get("reply")), option_texts(listed), fields)
