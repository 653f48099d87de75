"""``inspect``: Inspect (UK AISI) eval logs, ``.eval`` (zip) or ``.json``, read with Inspect's
own reader, ``inspect_ai.log.read_eval_log`` (the optional extra ``interop``).

Read per sample: ``id``, ``epoch``, ``input`` (the question, where it is text), ``target`` (gold),
``choices`` (the option texts, where the task has them), ``output.completion`` (else the score's
``answer``) and ``scores[SCORER].value`` as Inspect's ``value_to_float`` reads it (``C`` 1, ``I``
0, ``P`` 0.5, numbers as they are; the first scorer, or ``--metric SCORER``); ``--cluster FIELD``
reads ``metadata.FIELD`` (``a,b``: two fields). A log run with several epochs holds each sample
once per epoch: the epochs are one item, their scores reduced by the reducer the log names
(``eval.config.epochs_reducer``, its first; Inspect's default ``mean``) with Inspect's own reducer
(``inspect_ai.scorer``'s registry), as Inspect reduces them before its metrics, so the item is
the unit and ``n`` the samples. From the log: ``eval.model``, ``eval.task``,
``eval.task_version``, ``eval.revision`` (its git commit), ``eval.packages``, ``eval.dataset``
(name, location) and ``results.scores[SCORER, REDUCER].metrics.accuracy`` (what Inspect printed).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError
from spatialprobe.interop.base import Instance, Log, option_texts, options_of, score_of, text, unique
from spatialprobe.interop.clusters import cluster_fields, cluster_log, clustered


def _scorer(sample: Any, wanted: str | None, path: Path) -> str:
    scores = sample.scores or {}
    name = wanted or next(iter(scores), None)
    if name is None or name not in scores:
        raise DataError(path, None, f"samples[{sample.id}].scores", f"has no score{f' {wanted!r}' if wanted else ''}")
    return str(name)


def _item(epochs: list[Any], scorer: str, value: float, path: Path, clusters: tuple[str, ...]) -> Instance:
    """One sample (its epochs, the first first) as an item scored ``value``."""
    first = epochs[0]
    metadata = first.metadata or {}
    for name in clusters:
        if name not in metadata:
            raise DataError(path, None, f"samples[{first.id}].metadata.{name}", "is missing")
    cluster, fields = clustered({c: metadata[c] for c in clusters})
    if len(epochs) > 1:
        fields["epochs"] = [score_of(_float(e.scores[scorer].value), path, None, f"samples[{e.id}].scores")
                            for e in epochs]
    completion = first.output.completion if first.output is not None else None
    question = first.input if isinstance(first.input, str) else None
    return Instance(str(first.id), text(first.target), completion or text(first.scores[scorer].answer), value == 1.0,
                    value, cluster, "generate", question, completion, option_texts(first.choices), fields)


def _float(value: Any) -> float:
    from inspect_ai.scorer import value_to_float

    return float(value_to_float()(value))


def reduced(epochs: list[Any], scorer: str, reducer: Any, path: Path) -> float:
    """The sample's score over its epochs, reduced by Inspect's ``reducer`` (its value as a float)."""
    score = reducer([e.scores[scorer] for e in epochs]) if len(epochs) > 1 else epochs[0].scores[scorer]
    return score_of(_float(score.value), path, None, f"samples[{epochs[0].id}].scores.{scorer}")


def read(paths: list[Path], options: Mapping[str, Any]) -> list[Log]:
    """One log per eval log file."""
    from spatialprobe.extras import require

    given = options_of(options, ("cluster", "metric"), "inspect")
    log_module = require("inspect_ai.log", "interop", "Reading Inspect logs (spatialprobe import inspect)")
    clusters = cluster_fields(given.get("cluster"))
    logs = []
    for path in paths:
        try:
            log = log_module.read_eval_log(str(path))
        except Exception as err:
            raise DataError(path, None, None, f"is not an Inspect log ({str(err).splitlines()[0][:100]})") from None
        by_sample: dict[str, list[Any]] = {}
        for sample in sorted(log.samples or [], key=lambda s: s.epoch):
            by_sample.setdefault(str(sample.id), []).append(sample)
        scorer = _scorer(next(iter(by_sample.values()))[0], given.get("metric"), path) if by_sample else None
        names = list(getattr(log.eval.config, "epochs_reducer", None) or ["mean"])
        repeated = any(len(e) > 1 for e in by_sample.values())
        reducer = _reducer(names[0], path) if repeated else None
        found = []
        for epochs in by_sample.values():
            name = _scorer(epochs[0], scorer, path)
            found.append(_item(epochs, name, reduced(epochs, name, reducer, path), path, clusters))
        e = log.eval
        provenance = {"harness": "inspect_ai", "harness_version": (e.packages or {}).get("inspect_ai"),
                      "harness_commit": e.revision.commit if e.revision else None, "task_version": e.task_version,
                      "model_revision": None, "dataset_revision": e.dataset.location if e.dataset else None,
                      "dataset": e.dataset.name if e.dataset else None,
                      "epochs": max((len(v) for v in by_sample.values()), default=0),
                      "epochs_reducer": names[0] if repeated else None}
        result = Log("inspect", str(e.model), str(e.task), f"scores.{scorer}", unique(found, path), provenance,
                     printed(log, scorer, names[0] if repeated else None), None, [path])
        if repeated:
            result.note = (f"{len(found)} samples x {provenance['epochs']} epochs, each sample one item, its epochs "
                           f"reduced by {names[0]} as Inspect reduces them")
        logs.append(cluster_log(result, clusters))
    return logs


def _reducer(name: str, path: Path) -> Any:
    """Inspect's own reducer of that name (``mean``, ``mode``, ``at_least_2``, ``pass_at_3`` ...)."""
    try:
        from inspect_ai.scorer._reducer import create_reducers  # Inspect's lookup by the name its log records
    except ImportError:  # pragma: no cover - a future Inspect that moved it
        raise DataError(path, None, "eval.config.epochs_reducer", "names a reducer this Inspect cannot look "
                        "up; import a log of one epoch") from None
    try:
        return create_reducers([name])[0]
    except Exception:
        raise DataError(path, None, "eval.config.epochs_reducer", f"names {name!r}, a reducer Inspect does not "
                        "know here (a custom one: install the package that registers it)") from None


def printed(log: Any, scorer: str | None, reducer: str | None) -> float | None:
    """The accuracy Inspect printed for ``scorer`` (with ``reducer`` where epochs were reduced)."""
    for result in (log.results.scores if log.results else []):
        if result.name == scorer and (reducer is None or result.reducer in (None, reducer)) \
                and "accuracy" in result.metrics:
            return 100 * float(result.metrics["accuracy"].value)
    return None
