"""The one schema of ``summary.json``, for every run kind.

```
{
  "schema": "spatialprobe.summary/1",
  "kind": "probe",                 # the run kind
  "task": "size",                  # task or benchmark
  "model": "roberta-large",        # what was measured (model, or backend:model for images)
  "dataset": "size@1a2b3c4d",      # name@version of the items
  "seed": 0,                       # the seed that decides the numbers, or null if none does
  "untrained": false,              # true for the smoke components (dummy scorer, ...)
  "metrics": {                     # every metric in one shape
    "accuracy": {"mean": 54.1, "std": 3.9, "n": 1600, "ci": [50.2, 58.3],
                 "breakdown": {"fold 0": {"mean": 51.2, "std": null, "n": 320, "ci": [...]}, ...}},
    "macro_f1": {...}, ...
  },
  "accuracy": {...}, "macro_f1": {...},   # the headline metrics (same objects), for report/index
  "intervals": {"method": "cluster bootstrap over objects", "resamples": 1000, "level": 0.95,
                "seed": 0, ...},   # how every "ci" was computed (only where the kind has rows)
  "statistics": {"accuracy": {"statistic": "accuracy", "header": "accuracy", "higher_is_better": true},
                 ...},             # each resampled metric's registered statistic (metrics/statistics.py)
  "details": {...},                # what only this kind has (chosen prompts, kappa, ...)
  "identity": "...",               # the run's identity (hash of its settings)
  "provenance": {...}              # toolkit and library versions, host, time
}
```

``std`` is a measured spread (over folds, annotators, ...) or ``null`` where none was measured;
never ``0.0`` standing in for "not measured". ``ci`` (a 95 % bootstrap interval) is present
where the kind's Evaluation says how its rows are resampled, described once in ``intervals``;
it is ``null`` where it could not be measured (fewer than two units to resample).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spatialprobe.metrics.metric import STD_DDOF, Metric, over_parts, single
from spatialprobe.metrics.statistics import REGISTRY, Statistic, get

__all__ = ["HEADLINE", "SCHEMA", "STD_DDOF", "Metric", "build_summary", "check_summary", "declared",
           "display_name", "headline", "over_parts", "reported", "single", "statistic_of"]

SCHEMA = "spatialprobe.summary/1"
HEADLINE = ("accuracy", "macro_f1")


def build_summary(*, kind: str, task: str | None, model: str | None, dataset: str | None,
                  seed: int | None, metrics: Mapping[str, Metric], details: Mapping[str, Any],
                  identity: str, provenance: Mapping[str, Any], untrained: bool = False,
                  intervals: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The summary dict in the declared schema."""
    flat = {name: m.to_dict() for name, m in metrics.items()}
    summary: dict[str, Any] = {
        "schema": SCHEMA, "kind": kind, "task": task, "model": model, "dataset": dataset,
        "seed": seed, "untrained": bool(untrained), "metrics": flat,
    }
    for name in HEADLINE:
        summary[name] = flat.get(name, Metric(None).to_dict())
    if intervals is not None:
        summary["intervals"] = dict(intervals)
        summary["statistics"] = {name: get(stat).to_dict() for name, stat in declared(intervals).items()}
    summary.update({"details": dict(details), "identity": identity, "provenance": dict(provenance)})
    check_summary(summary)
    return summary


REQUIRED = ("schema", "kind", "task", "model", "dataset", "seed", "untrained", "metrics", "accuracy",
            "macro_f1", "details", "identity", "provenance")


def check_summary(summary: Mapping[str, Any]) -> None:
    """Raise ValueError if ``summary`` does not follow the schema (every writer calls this)."""
    missing = [k for k in REQUIRED if k not in summary]
    if missing:
        raise ValueError(f"summary lacks {missing}")
    if not isinstance(summary["metrics"], Mapping):
        raise ValueError(f"its metrics are not an object: {summary['metrics']!r:.60}")
    for name, metric in summary["metrics"].items():
        _check_metric(name, metric)
    for key in ("details", "provenance"):  # what report reads besides the metrics
        if not isinstance(summary[key], Mapping):
            raise ValueError(f"its {key} are not an object: {summary[key]!r:.60}")
    for name in HEADLINE:
        _check_metric(name, summary[name])


def _check_metric(name: str, metric: Any) -> None:
    if not isinstance(metric, Mapping) or not {"mean", "std", "n"} <= set(metric):
        raise ValueError(f"metric {name!r} is not {{mean, std, n}}: {metric!r}")
    ci = metric.get("ci")
    if ci is not None and not (isinstance(ci, list | tuple) and len(ci) == 2 and ci[0] <= ci[1]):
        raise ValueError(f"metric {name!r} has an interval that is not [low, high]: {ci!r}")
    for part, sub in (metric.get("breakdown") or {}).items():
        _check_metric(f"{name}.{part}", sub)


def headline(summary: Mapping[str, Any], name: str) -> float | None:
    value = (summary.get(name) or {}).get("mean")
    return None if value is None else float(value)


def fold_values(metric: Mapping[str, Any]) -> Sequence[float]:
    return [p["mean"] for p in (metric.get("breakdown") or {}).values() if p.get("mean") is not None]


def declared(intervals: Mapping[str, Any] | None) -> dict[str, str]:
    """Metric -> registered statistic, as a summary's ``intervals`` describe them (first and ``also``)."""
    if not intervals:
        return {}
    found = dict(intervals.get("statistics") or {})
    for other in intervals.get("also") or ():
        found.update({k: v for k, v in (other.get("statistics") or {}).items() if k not in found})
    return found


def statistic_of(summary: Mapping[str, Any], metric: str) -> Statistic | None:
    """The registered statistic a summary's ``metric`` was measured with (for its header and
    direction): as its ``intervals`` declare, else the statistic of that name, else None."""
    name = declared(summary.get("intervals")).get(metric, metric)
    try:
        return get(name)
    except ValueError:
        return None


def _declared_by_benchmark(summary: Mapping[str, Any]) -> dict[str, str]:
    """Metric -> statistic of the registered benchmark the summary's task names (its module's
    ``OFFICIAL``), for a summary that does not record its official list (a retired kind's run)."""
    import importlib

    from spatialprobe import registry
    from spatialprobe.errors import UnknownComponent

    try:
        module = importlib.import_module(registry.lookup("source", str(summary.get("task"))).__module__)
    except (UnknownComponent, ImportError):
        return {}
    return {name: stat for declared in getattr(module, "OFFICIAL", ()) for name, stat in declared.metrics.items()}


def reported(summary: Mapping[str, Any], strict: bool = False) -> list[tuple[str, str]]:
    """(metric, registered statistic) of what a run reports, in order: its benchmark's official
    list (``details.official``, as the run recorded it; for a run that recorded none, the list its
    benchmark module declares), else the headline (accuracy, macro-F1). The one list the run's
    table, ``report``'s columns, the paired test of ``report A B`` and ``compare`` read.
    ``strict``: with the ``strict_`` twins (each metric under the strict reader); else without."""
    recorded = list((summary.get("details") or {}).get("official") or [])
    by_module = {} if recorded else _declared_by_benchmark(summary)
    names = recorded or list(by_module) or list(HEADLINE)
    out = []
    for name in names:
        if name.startswith("strict_") and not strict and name.removeprefix("strict_") in names:
            continue
        stat = declared(summary.get("intervals")).get(name) or by_module.get(name)
        if stat is None:
            found = statistic_of(summary, name)
            stat = found.name if found else None
        if stat is not None:
            out.append((name, stat))
    return out


def display_name(metric: str, stat: str) -> str:
    """How tables head a metric: its registered statistic's short header, one per statistic
    (``acc``, ``macro-F1``, ``F1``, ``P``, ``R``; a metric named after a statistic - VISOR's
    ``accuracy``, a share - by that statistic's); the metric's own name where the statistic is a
    plain mean or share of a row value (``cv_bench``, ``chance_adjusted_accuracy``)."""
    if metric in REGISTRY:
        return REGISTRY[metric].column
    statistic = get(stat)
    return metric if statistic.numeric else statistic.column
