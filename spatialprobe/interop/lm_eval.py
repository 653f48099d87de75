"""``lm-eval``: lm-evaluation-harness 0.4 ``--log_samples`` files, ``samples_TASK_DATE.jsonl``,
with the run's ``results_DATE.json`` beside them (EleutherAI/lm-evaluation-harness @4e7e0d4
``lm_eval/loggers/evaluation_tracker.py``: ``save_results_samples`` writes one line per document
and filter).

Fields read per line: ``doc_id`` (the item), ``target`` (gold), ``filtered_resps`` (the prediction:
for log-likelihood tasks the index of the option of highest log-likelihood, else the first
response), ``resps`` (the reply as generated, before the filters), ``doc.choices`` (or
``doc.options``, else the continuations scored, ``arguments``: the option texts), ``filter``,
``metrics`` (the first one named is the item's score, or ``--metric NAME`` among those named:
``acc_norm``), and the value under that metric's name; ``--cluster FIELD`` reads ``doc.FIELD``
(``a,b``: two fields, a row of two objects). A task the toolkit exported
(``spatialprobe datasets export --format lm-eval``: its name starts ``spatialprobe_``, its docs
carry ``id``, ``obj_a`` and ``obj_b``) is recognised: its items keep the toolkit's ids and both
objects are their clusters, as in a native run, without ``--cluster``. From
``results_DATE.json``: ``results[TASK]["METRIC,FILTER"]`` (the accuracy the harness printed),
``configs[TASK].output_type``, ``versions[TASK]``, ``task_hashes[TASK]`` (the dataset revision),
``lm_eval_version``, ``git_hash``, ``transformers_version``, ``model_name`` and
``config.model_revision``. One log per task and filter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError
from spatialprobe.interop import base
from spatialprobe.interop.base import Instance, Log, field_of, jsonl, option_texts, options_of, text, unique
from spatialprobe.interop.clusters import cluster_fields, cluster_log, clustered

SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.jsonl$")


def results_beside(path: Path, date: str | None) -> tuple[Path | None, dict[str, Any]]:
    """The run's ``results_DATE.json`` beside a samples file (the same date), or (None, {})."""
    candidates = [path.parent / f"results_{date}.json"] if date else []
    candidates += sorted(path.parent.glob("results_*.json"))
    for candidate in candidates:
        if candidate.is_file():
            return candidate, load_results(candidate)
    return None, {}


def load_results(path: Path) -> dict[str, Any]:
    """A harness's aggregated results file as an object."""
    from spatialprobe.interop.base import decoded, loads

    data = loads(decoded(path.read_bytes(), path), path)
    if not isinstance(data, dict):
        raise DataError(path, None, None, "is not a JSON object")
    for key in ("results", "configs", "versions", "task_hashes", "config"):  # the objects read by task
        if not isinstance(data.get(key) or {}, dict):
            raise DataError(path, None, key, "is not a JSON object")
    for key in ("results", "configs"):
        for task, value in (data.get(key) or {}).items():
            if not isinstance(value or {}, dict):
                raise DataError(path, None, f"{key}.{task}", "is not a JSON object")
    return data


def likelihoods(resps: Any, output_type: str | None) -> bool:
    """Whether ``filtered_resps`` holds one (log-likelihood, is-greedy) pair per option."""
    return output_type in ("multiple_choice", "loglikelihood", None) and isinstance(resps, list) and len(resps) > 1 \
        and all(isinstance(r, list) and len(r) == 2 and _number(r[0]) for r in resps)  # None: no results file said


def generated(record: Mapping[str, Any], output_type: str | None) -> str | None:
    """The model's first generated text, before the harness's filters (``resps``, else
    ``filtered_resps`` where the log left ``resps`` out as equal); None for log-likelihood tasks."""
    if likelihoods(record.get("filtered_resps"), output_type) or output_type in ("multiple_choice", "loglikelihood"):
        return None
    resps = record.get("resps", record.get("filtered_resps"))
    while isinstance(resps, list) and resps:
        resps = resps[0]
    return resps if isinstance(resps, str) else None


def choices(record: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The item's option texts: the document's ``choices`` or ``options``, else the continuations
    a multiple-choice task scored (``arguments``: ``arg_1`` of each request, in order)."""
    doc = record["doc"] if isinstance(record.get("doc"), Mapping) else {}
    found = option_texts(doc.get("choices")) or option_texts(doc.get("options"))
    arguments = record.get("arguments")
    if found is None and isinstance(arguments, Mapping):
        found = option_texts([a.get("arg_1") for a in arguments.values() if isinstance(a, Mapping)])
    return found


def predicted(resps: Any, output_type: str | None) -> Any:
    """The prediction in ``filtered_resps``: the argmax option of log-likelihood tasks, else the text."""
    if likelihoods(resps, output_type):
        scores = [float(r[0]) for r in resps]
        return str(scores.index(max(scores)))
    while isinstance(resps, list) and len(resps) == 1:
        resps = resps[0]
    return text(resps)


def _number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, bool)


def instance(record: Mapping[str, Any], path: Path, line: int, output_type: str | None,
             clusters: tuple[str, ...], wanted: str | None, own: bool) -> tuple[str, Instance]:
    """(the metric, the item) of one samples line; ``own``: a task the toolkit exported."""
    metrics = field_of(record, "metrics", path, line)
    if not isinstance(metrics, list) or not metrics:
        raise DataError(path, line, "metrics", "must name the item's metrics")
    if wanted is not None and wanted not in metrics:
        raise DataError(path, line, "metrics", f"names {', '.join(map(str, metrics))}, not {wanted!r} (--metric)")
    metric = wanted or str(metrics[0])
    score = base.score_of(field_of(record, metric, path, line), path, line, metric)
    doc: Mapping[str, Any] = record["doc"] if isinstance(record.get("doc"), Mapping) else {}
    cluster, fields = clustered({c: field_of(record, f"doc.{c}", path, line) for c in clusters})
    question = next((str(v) for k, v in doc.items() if k in ("question", "query", "text", "prompt", "context")), None)
    ident = doc["id"] if own else field_of(record, "doc_id", path, line)
    gold = base.gold_of(field_of(record, "target", path, line), path, line, "target")
    return metric, Instance(str(ident), text(gold), predicted(field_of(record, "filtered_resps", path, line),
                                                              output_type),
                            score == 1.0, score, cluster, output_type, question, generated(record, output_type),
                            choices(record), fields)


def exported_by_us(task: str, path: Path) -> bool:
    """Whether the samples are of a task the toolkit exported (its name, and its docs' fields)."""
    if not task.startswith("spatialprobe_"):
        return False
    for _, record in jsonl(path):
        doc = record.get("doc")
        return isinstance(doc, Mapping) and all(k in doc for k in ("id", "obj_a", "obj_b"))
    return False


def provenance_of(results: Mapping[str, Any], task: str) -> dict[str, Any]:
    config = results.get("config") or {}
    args = config.get("model_args") or {}
    return {"harness": "lm-evaluation-harness", "harness_version": results.get("lm_eval_version"),
            "harness_commit": results.get("git_hash"), "transformers_version": results.get("transformers_version"),
            "task_version": (results.get("versions") or {}).get(task),
            "model_revision": config.get("model_revision") or (args.get("revision") if isinstance(args, dict)
                                                               else None),
            "dataset_revision": (results.get("task_hashes") or {}).get(task)}


def read(paths: list[Path], options: Mapping[str, Any]) -> list[Log]:
    """One log per task and filter of each samples file."""
    given = options_of(options, ("cluster", "model", "metric"), "lm-eval")
    logs: list[Log] = []
    for path in paths:
        match = SAMPLES.match(path.name)
        task = match["task"] if match else path.stem.removeprefix("samples_")
        results_file, results = results_beside(path, match["date"] if match else None)
        output_type = ((results.get("configs") or {}).get(task) or {}).get("output_type")
        args = (results.get("config") or {}).get("model_args")
        model = given.get("model") or results.get("model_name") or (args.get("pretrained") if isinstance(args, dict)
                                                                    else None)
        if not model:
            raise DataError(path, None, "model_name", "no results_*.json beside it names the model; give --model NAME")
        own = exported_by_us(task, path)
        clusters = cluster_fields(given.get("cluster")) or (("obj_a", "obj_b") if own else ())
        by_filter: dict[str, tuple[str, list[Instance]]] = {}
        for line, record in jsonl(path):
            metric, inst = instance(record, path, line, output_type, clusters, given.get("metric"), own)
            by_filter.setdefault(str(record.get("filter", "none")), (metric, []))[1].append(inst)
        for name, (metric, found) in by_filter.items():
            reported = ((results.get("results") or {}).get(task) or {}).get(f"{metric},{name}")
            log = Log("lm-eval", str(model), task if len(by_filter) == 1 else f"{task}/{name}", metric,
                      unique(found, path), {**provenance_of(results, task), "exported_by": "spatialprobe" if own
                                            else None},
                      None if reported is None else 100 * base.score_of(reported, results_file or path, None,
                                                                   f"results.{task}.{metric},{name}"),
                      None, [path, *([results_file] if results_file else [])])
            logs.append(cluster_log(log, clusters))
    return logs
