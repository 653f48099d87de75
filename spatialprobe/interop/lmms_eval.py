"""``lmms-eval``: lmms-eval ``--log_samples`` files, ``DATE_samples_TASK.jsonl``, with the run's
``DATE_results.json`` beside them, in both layouts (EvolvingLMMs-Lab/lmms-eval
``lmms_eval/loggers/evaluation_tracker.py`` ``save_results_samples``): 0.6 (@c7eaef37) writes
``resps``/``filtered_resps`` as nested lists, ``[["text"]]``; 0.7 (@75571cf,
``docs/releases/lmms-eval-0.7.md`` §12) unwraps a single instance, ``["text"]`` and ``"text"``,
and keeps one list per option for log-likelihood tasks. Both drop ``doc`` and ``arguments``
and keep ``input``; ``resps`` is left out where it equals ``filtered_resps``.

Fields read per line: ``doc_id``, ``target``, ``filtered_resps`` (the prediction, either layout),
``input`` (the question), ``resps`` (the reply as generated; else ``filtered_resps``) and the item's
score: the value under ``--metric NAME`` (a number, or an object's ``score``/``acc``/``accuracy``/
``correct``/``exact_match``/``is_correct``: CV-Bench's and EmbSpatial's metric objects), or the only
metric field the line has beside those above; every line must be scored by the same field (a
file mixing them is refused naming the line). ``--cluster FIELD`` reads a field of the line or of
the metric's object (``a,b``: two fields, a row of two objects). From ``DATE_results.json``
(the same keys as lm-eval's): ``results[TASK]["METRIC,none"]``, ``configs[TASK].output_type``,
``versions``, ``task_hashes``, ``lmms_eval_version``, ``git_hash``, ``model_name``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError
from spatialprobe.interop.base import Instance, Log, field_of, gold_of, jsonl, options_of, score_of, text, unique
from spatialprobe.interop.clusters import cluster_fields, cluster_log, clustered
from spatialprobe.interop.lm_eval import generated, load_results, predicted

SAMPLES = re.compile(r"^(?P<date>.+?)_samples_(?P<task>.+)\.jsonl$")
KNOWN = {"doc_id", "target", "resps", "filtered_resps", "input", "doc_hash", "prompt_hash", "target_hash",
         "token_counts", "input_media", "filter", "metrics"}
SCORE_KEYS = ("score", "acc", "accuracy", "correct", "exact_match", "is_correct")
"""The keys of a metric object that hold the item's verdict (CV-Bench's and EmbSpatial's
``{"id": ..., "pred": ..., "is_correct": true}``), the first present read."""


def _metric(record: Mapping[str, Any], wanted: str | None, path: Path, line: int) -> tuple[str, Any]:
    if wanted:
        return wanted, field_of(record, wanted, path, line)
    numeric = [k for k, v in record.items() if k not in KNOWN and isinstance(v, (int, float, bool, dict))]
    if len(numeric) != 1:
        listed = (", ".join(numeric) or "none")[:120]
        raise DataError(path, line, None, f"holds {len(numeric)} metric fields ({listed}); "
                        "name the item's score with --metric NAME")
    return numeric[0], record[numeric[0]]


def _score(value: Any, path: Path, line: int, name: str) -> float:
    if isinstance(value, Mapping):
        key = next((k for k in SCORE_KEYS if k in value), None)
        if key is None:
            raise DataError(path, line, name, f"is an object without any of {', '.join(SCORE_KEYS)}")
        return score_of(value[key], path, line, f"{name}.{key}")
    return score_of(value, path, line, name)


def read(paths: list[Path], options: Mapping[str, Any]) -> list[Log]:
    """One log per samples file (a task)."""
    from spatialprobe.interop.lm_eval import provenance_of

    given = options_of(options, ("cluster", "model", "metric"), "lmms-eval")
    logs = []
    for path in paths:
        match = SAMPLES.match(path.name)
        task = match["task"] if match else path.stem
        beside = path.parent / f"{match['date']}_results.json" if match else None
        results_file = beside if beside is not None and beside.is_file() else None
        results = load_results(results_file) if results_file is not None else {}
        output_type = ((results.get("configs") or {}).get(task) or {}).get("output_type")
        model = given.get("model") or results.get("model_name")
        if not model:
            raise DataError(path, None, "model_name", "no *_results.json beside it names the model; give --model NAME")
        clusters = cluster_fields(given.get("cluster"))
        found, metric = [], ""
        for line, record in jsonl(path):
            name, value = _metric(record, given.get("metric"), path, line)
            if metric and name != metric:
                raise DataError(path, line, name, f"scores this line where the lines before are scored by "
                                f"{metric!r}: one file, one metric (name it with --metric)")
            metric = name
            score = _score(value, path, line, metric)
            cluster, fields = clustered({c: field_of(value if isinstance(value, Mapping) and c in value else record,
                                                     c, path, line) for c in clusters})
            found.append(Instance(str(field_of(record, "doc_id", path, line)),
                                  text(gold_of(field_of(record, "target", path, line), path, line, "target")),
                                  predicted(field_of(record, "filtered_resps", path, line), output_type),
                                  score == 1.0, score, cluster, output_type, text(record.get("input")),
                                  generated(record, output_type), None, fields))
        reported = ((results.get("results") or {}).get(task) or {}).get(f"{metric},none")
        provenance = {**provenance_of(results, task), "harness": "lmms-eval",
                      "harness_version": results.get("lmms_eval_version")}
        log = Log("lmms-eval", str(model), task, metric, unique(found, path), provenance,
                  100 * float(reported) if isinstance(reported, (int, float)) and math.isfinite(reported) else None,
                  None, [path, *([results_file] if results_file else [])])
        logs.append(cluster_log(log, clusters))
    return logs
