"""``inspect``: Inspect (UK AISI) eval logs, ``.eval`` (zip) or ``.json``, read with Inspect's
own reader, ``inspect_ai.log.read_eval_log`` (the optional extra ``interop``).

Read per sample: ``id`` (with ``epoch`` where a log has several), ``input`` (the question, where it
is text), ``target`` (gold), ``choices`` (the option texts, where the task has them),
``output.completion`` (else the score's ``answer``) and ``scores[SCORER].value`` as Inspect's
``value_to_float`` reads it (``C`` 1, ``I`` 0, ``P`` 0.5, numbers as they are; the first scorer, or
``--metric SCORER``); ``--cluster FIELD`` reads ``metadata.FIELD``. From the log: ``eval.model``,
``eval.task``, ``eval.task_version``, ``eval.revision`` (its git commit), ``eval.packages``,
``eval.dataset`` (name, location) and ``results.scores[SCORER].metrics.accuracy`` (what Inspect
printed).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError
from spatialprobe.interop.base import Instance, Log, option_texts, options_of, text, unique


def _sample(sample: Any, scorer: str | None, path: Path, to_float: Any, epochs: bool, cluster: str | None
            ) -> tuple[str, Instance]:
    scores = sample.scores or {}
    name = scorer or next(iter(scores), None)
    if name is None or name not in scores:
        raise DataError(path, None, f"samples[{sample.id}].scores", f"has no score{f' {scorer!r}' if scorer else ''}")
    score = float(to_float(scores[name].value))
    completion = sample.output.completion if sample.output is not None else None
    group = None
    if cluster:
        if cluster not in (sample.metadata or {}):
            raise DataError(path, None, f"samples[{sample.id}].metadata.{cluster}", "is missing")
        group = text(sample.metadata[cluster])
    ident = f"{sample.id}#{sample.epoch}" if epochs else str(sample.id)
    question = sample.input if isinstance(sample.input, str) else None
    return name, Instance(ident, text(sample.target), completion or text(scores[name].answer), score == 1.0, score,
                          group, "generate", question, completion, option_texts(sample.choices))


def read(paths: list[Path], options: Mapping[str, Any]) -> list[Log]:
    """One log per eval log file."""
    from spatialprobe.extras import require

    given = options_of(options, ("cluster", "metric"), "inspect")
    log_module = require("inspect_ai.log", "interop", "Reading Inspect logs (spatialprobe import inspect)")
    to_float = require("inspect_ai.scorer", "interop").value_to_float()
    logs = []
    for path in paths:
        try:
            log = log_module.read_eval_log(str(path))
        except Exception as err:
            raise DataError(path, None, None, f"is not an Inspect log ({str(err).splitlines()[0][:100]})") from None
        samples = log.samples or []
        epochs = len({s.epoch for s in samples}) > 1
        found = [_sample(s, given.get("metric"), path, to_float, epochs, given.get("cluster")) for s in samples]
        scorer = found[0][0] if found else None
        reported = None
        for result in (log.results.scores if log.results else []):
            if result.name == scorer and "accuracy" in result.metrics:
                reported = 100 * float(result.metrics["accuracy"].value)
        e = log.eval
        provenance = {"harness": "inspect_ai", "harness_version": (e.packages or {}).get("inspect_ai"),
                      "harness_commit": e.revision.commit if e.revision else None, "task_version": e.task_version,
                      "model_revision": None, "dataset_revision": e.dataset.location if e.dataset else None,
                      "dataset": e.dataset.name if e.dataset else None}
        logs.append(Log("inspect", str(e.model), str(e.task), f"scores.{scorer}", unique([i for _, i in found], path),
                        provenance, reported, given.get("cluster"), [path]))
    return logs
