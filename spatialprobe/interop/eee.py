"""Every Eval Ever (schema 0.3, evaleval/every_eval_ever @9bce413
``every_eval_ever/schemas/instance_level_eval.schema.json`` and ``eval.schema.json``): import its
instance-level JSON lines, and export any spatialprobe run as an aggregate JSON plus its
``*_samples.jsonl``, laid out as that repository lays them out:
``OUT/data/spatialprobe/<developer>/<model>/<uuid>.json`` and ``<uuid>_samples.jsonl``.

Fields read on import: ``schema_version`` (0.3.x), ``evaluation_id``, ``model_id``,
``evaluation_name``, ``sample_id``, ``input.raw``, ``input.reference``, ``input.choices``, ``output.raw[0]``
(the reply),
``answer_attribution[-1].extracted_value`` (else ``output.raw[0]``), ``evaluation.score`` and
``evaluation.is_correct`` (the verdict; ``--metric score`` reads the score instead, a number in
[0, 1]; a non-finite one is refused); from ``metadata`` the clusters a spatialprobe export wrote
(``spatialprobe.clusters``, ``spatialprobe.group`` and the fields they name), else ``--cluster
FIELD`` (a metadata key; ``a,b``: two). One log per (``model_id``, ``evaluation_name``); an id
repeated within it (within one fold, where the export declares folds) is refused.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.interop import base
from spatialprobe.interop.base import Instance, Log, field_of, jsonl, option_texts, options_of, unique
from spatialprobe.interop.clusters import cluster_fields, cluster_log, clustered

SCHEMA_VERSION = "0.3.0"
REQUIRED = ("schema_version", "evaluation_id", "model_id", "evaluation_name", "sample_id", "interaction_type",
            "input", "answer_attribution", "evaluation")
"""The instance schema's required fields (checked here whether or not ``jsonschema`` is installed)."""


def _instance(record: Mapping[str, Any], path: Path, line: int, clusters: tuple[str, ...], metric: str) -> Instance:
    for name in REQUIRED:
        field_of(record, name, path, line)
    if not str(record["schema_version"]).startswith("0.3"):
        raise DataError(path, line, "schema_version", f"is {record['schema_version']!r}; this reads 0.3")
    evaluation = record["evaluation"]
    for name in ("score", "is_correct"):
        field_of(record, f"evaluation.{name}", path, line)
    if not isinstance(evaluation["is_correct"], bool):
        raise DataError(path, line, "evaluation.is_correct", f"must be true or false, not {evaluation['is_correct']!r}")
    if isinstance(evaluation["score"], bool) or not isinstance(evaluation["score"], (int, float)):
        raise DataError(path, line, "evaluation.score", f"must be a number, not {evaluation['score']!r:.40}")
    score = base.score_of(evaluation["score"], path, line, "evaluation.score")
    reference = field_of(record, "input.reference", path, line)
    if not isinstance(reference, list) or not reference:
        raise DataError(path, line, "input.reference", "must be a list of the gold answers (it is empty or "
                        "not a list: the item cannot be scored)")
    for answer in reference:
        base.gold_of(answer, path, line, "input.reference")
    if not isinstance(record["answer_attribution"] or [], list) or \
            not all(isinstance(a, dict) for a in record["answer_attribution"] or []):
        raise DataError(path, line, "answer_attribution", "must be a list of objects")
    for name in ("output", "metadata"):
        if not isinstance(record.get(name) or {}, dict):
            raise DataError(path, line, name, "must be an object")
    if not isinstance((record.get("output") or {}).get("raw") or [], list):
        raise DataError(path, line, "output.raw", "must be a list")
    attribution = record["answer_attribution"] or []
    output = (record.get("output") or {}).get("raw") or [None]
    pred = attribution[-1].get("extracted_value") if attribution else output[0]
    meta = record.get("metadata") or {}
    fields = {k.removeprefix("row."): v for k, v in meta.items() if k.startswith("row.")}
    group = meta.get("spatialprobe.group")
    if group and isinstance(fields.get(group), str) and fields[group].lstrip("-").isdigit():
        fields[group] = int(fields[group])  # a fold number, as the native run's rows hold it
    for name in clusters:
        if name not in meta:
            raise DataError(path, line, f"metadata.{name}", "is missing (--cluster names a metadata key)")
    cluster, named = clustered({c: meta[c] for c in clusters})
    fields.update(named)
    if cluster is not None:
        fields["cluster"] = cluster
    value = score if metric == "score" else float(evaluation["is_correct"])
    return Instance(str(record["sample_id"]), reference[0] if len(reference) == 1 else reference, pred,
                    value == 1.0, value, fields.pop("cluster", None),
                    meta.get("spatialprobe.protocol"), str(field_of(record, "input.raw", path, line)),
                    output[0] if isinstance(output[0], str) else None,
                    option_texts(record["input"].get("choices")), fields)


def read(paths: list[Path], options: Mapping[str, Any]) -> list[Log]:
    """One log per (model, evaluation) of the instance-level JSON lines in ``paths``."""
    given = options_of(options, ("cluster", "metric"), "eee")
    metric = given.get("metric") or "is_correct"
    if metric not in ("is_correct", "score"):
        raise UsageError(f"--metric {metric}: an Every Eval Ever record holds evaluation.is_correct (the default) "
                         "and evaluation.score.")
    clusters = cluster_fields(given.get("cluster"))
    logs: dict[tuple[str, str], Log] = {}
    for path in paths:
        for line, record in jsonl(path):
            inst = _instance(record, path, line, clusters, metric)
            key = (str(record["model_id"]), str(record["evaluation_name"]))
            if key not in logs:
                meta = record.get("metadata") or {}
                exported = () if clusters else tuple(c for c in str(meta.get("spatialprobe.clusters", "")).split(",")
                                                     if c)
                logs[key] = Log("eee", key[0], key[1], f"evaluation.{metric}", [],
                                {"harness": "every_eval_ever", "schema_version": record["schema_version"],
                                 "evaluation_id": record["evaluation_id"],
                                 "dataset_revision": meta.get("spatialprobe.dataset", "").partition("@")[2] or None},
                                None, None, [], tuple(c for c in exported), meta.get("spatialprobe.group") or None,
                                meta.get("spatialprobe.reader") or None)
                cluster_log(logs[key], clusters)
            log = logs[key]
            log.instances.append(inst)
            if path not in log.files:
                log.files.append(path)
    for log in logs.values():
        unique(log.instances, log.files[0], log.group)
        if log.reader:
            log.unreadable = sum(1 for i in log.instances if i.pred in (None, ""))
    return list(logs.values())


def _uuid(identity: str) -> str:
    """A version-4-shaped UUID derived from the run's identity (the same run, the same file names)."""
    return str(uuid.UUID(bytes=hashlib.sha256(identity.encode()).digest()[:16], version=4))


def _strings(values: Mapping[str, Any]) -> dict[str, str]:
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items() if v is not None}


def instance_records(path: Path, evaluation_id: str) -> list[dict[str, Any]]:
    """The run at ``path``'s rows as Every Eval Ever instance records."""
    from spatialprobe.files import read_jsonl
    from spatialprobe.interop.export import run_rows, spec_of

    run, table = run_rows(path)
    rows = read_jsonl(path / "predictions.jsonl")
    spec = spec_of(run.summary, rows)
    clusters = ",".join(spec.clusters)
    reader = (run.summary.get("details") or {}).get("reader")
    out = []
    for row, item in zip(rows, table, strict=True):
        meta = {"spatialprobe.clusters": clusters, "spatialprobe.group": spec.group,
                "spatialprobe.protocol": item["protocol"], "spatialprobe.dataset": run.summary.get("dataset"),
                **{f"row.{c}": row.get(c) for c in spec.clusters}}
        if spec.group:
            meta[f"row.{spec.group}"] = row.get(spec.group)
        if item["condition"] is not None:
            meta["spatialprobe.condition"] = item["condition"]
        if reader:  # the verdict is an import's reading of predictions, not a harness's: say whose
            meta["spatialprobe.reader"] = reader
        question = row.get("question")
        out.append({"schema_version": SCHEMA_VERSION, "evaluation_id": evaluation_id,
                    "model_id": str(run.summary.get("model")), "evaluation_name": str(run.summary.get("task")),
                    "evaluation_result_id": f"{run.summary.get('task')}/accuracy", "sample_id": item["item"],
                    "interaction_type": "single_turn",
                    "input": {"raw": "" if question is None else str(question), "reference": [str(item["gold"])],
                              **({"choices": [str(o) for o in row["options"]]} if row.get("options") else {})},
                    "output": {"raw": [row["reply"]] if row.get("reply") is not None  # the generated text
                               else [] if item["prediction"] is None else [item["prediction"]]},
                    "answer_attribution": [{"turn_idx": 0, "source": "output.raw",
                                            "extracted_value": "" if item["prediction"] is None else item["prediction"],
                                            "extraction_method": f"spatialprobe:{item['protocol'] or 'unknown'}",
                                            "is_terminal": True}],
                    "evaluation": {"score": item["score"], "is_correct": bool(item["correct"])},
                    "metadata": _strings(meta)})
    return out


def aggregate(summary: Mapping[str, Any], evaluation_id: str, samples: str, checksum: str, rows: int
              ) -> dict[str, Any]:
    """The aggregate evaluation record of a run's summary (its accuracy, interval and n)."""
    from spatialprobe import __version__

    acc = summary.get("accuracy") or {}
    uncertainty: dict[str, Any] = {"num_samples": int(acc.get("n") or rows)}
    if acc.get("ci"):
        uncertainty["confidence_interval"] = {"lower": acc["ci"][0], "upper": acc["ci"][1], "confidence_level": 0.95,
                                              "method": str((summary.get("intervals") or {}).get("method"))}
    model = str(summary.get("model"))
    return {"schema_version": SCHEMA_VERSION, "evaluation_id": evaluation_id,
            "retrieved_timestamp": str(int(time.time())),
            "source_metadata": {"source_name": "spatialprobe", "source_type": "evaluation_run",
                                "source_organization_name": "spatialprobe", "evaluator_relationship": "third_party"},
            "eval_library": {"name": "spatialprobe", "version": __version__,
                             "additional_details": _strings({"kind": summary.get("kind"),
                                                             "identity": summary.get("identity")})},
            "model_info": {"name": model, "id": model, "additional_details": {"deployment_type": "unknown",
                                                                               "model_availability": "unknown"}},
            "evaluation_results": [{"evaluation_result_id": f"{summary.get('task')}/accuracy",
                                    "evaluation_name": str(summary.get("task")),
                                    "source_data": {"dataset_name": str(summary.get("dataset")),
                                                    "source_type": "other"},
                                    "metric_config": {"metric_id": "accuracy", "metric_name": "Accuracy",
                                                      "metric_unit": "percent", "lower_is_better": False,
                                                      "score_type": "continuous", "min_score": 0, "max_score": 100},
                                    "score_details": {"score": acc.get("mean"), "uncertainty": uncertainty}}],
            "detailed_evaluation_results": {"format": "jsonl", "file_path": samples, "hash_algorithm": "sha256",
                                            "checksum": checksum, "total_rows": rows}}


def export_eee(paths: Sequence[Path], out: Path) -> list[Path]:
    """Each run as ``out/data/spatialprobe/<developer>/<model>/<uuid>.json`` + ``_samples.jsonl``."""
    from spatialprobe.files import write_json
    from spatialprobe.interop.imported_run import folder_name
    from spatialprobe.reports.runs import load_run

    written = []
    for path in paths:
        summary = load_run(Path(path)).summary
        model = str(summary.get("model"))
        developer, _, name = model.rpartition("/")
        folder = Path("data") / "spatialprobe" / folder_name(developer or "local") / folder_name(name)
        eid = _uuid(str(summary.get("identity")))
        evaluation_id = f"spatialprobe/{folder_name(model)}/{summary.get('task')}/{eid}"
        records = instance_records(Path(path), evaluation_id)
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        samples = folder / f"{eid}_samples.jsonl"
        (out / folder).mkdir(parents=True, exist_ok=True)
        (out / samples).write_text(text, encoding="utf-8")
        write_json(out / folder / f"{eid}.json", aggregate(summary, evaluation_id, samples.as_posix(),
                                                           hashlib.sha256(text.encode()).hexdigest(), len(records)))
        written += [out / folder / f"{eid}.json", out / samples]
    return written
