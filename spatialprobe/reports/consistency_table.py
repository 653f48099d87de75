"""Consistency of a probe run: ``RUN/consistency.json`` and ``RUN/consistency_objects.png``.

Symmetry and transitivity come with 95 % intervals (``symmetry_ci``, ``transitivity_ci``) from the
cluster bootstrap over objects, seeded with the run's seed (described under ``intervals``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spatialprobe import tasks
from spatialprobe.errors import DataError, UsageError
from spatialprobe.files import read_json, read_jsonl, write_json
from spatialprobe.metrics.consistency import consistency, consistency_intervals, object_bias
from spatialprobe.reports.tables import provenance_line


def consistency_report(run: Path, plot: bool = True) -> dict[str, Any]:
    run = Path(run)
    summary_path, predictions_path = run / "summary.json", run / "predictions.jsonl"
    for path in (summary_path, predictions_path):
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: {run} is not a finished probe run.")
    summary = read_json(summary_path)
    task = summary.get("task")
    if task not in tasks.comparisons():
        raise UsageError(f"Consistency is defined for comparison tasks ({', '.join(tasks.comparisons())}), "
                         f"not {task!r}.")
    if summary.get("kind") == "synthesize":
        raise UsageError(f"{run} is an image run (spatialprobe synthesize): it holds images, not "
                         f"answers; judge it first (spatialprobe judge {task} {run}) and give the judge "
                         "run's directory.")
    rows = read_jsonl(predictions_path)
    for line, row in enumerate(rows, 1):  # answers of another kind of run: named, not a KeyError
        lacking = [k for k in ("obj_a", "obj_b", "pred") if not isinstance(row, dict) or k not in row]
        if lacking:
            raise DataError(predictions_path, line, lacking[0], "missing: consistency reads the answers "
                            "of a probe or judge run (obj_a, obj_b, pred per line)")
    first = tasks.labels_of(task)[0]  # "A is X-er than B"
    result = consistency(rows, first)
    seed = summary.get("seed")
    result.update(consistency_intervals(rows, first, seed=0 if seed is None else int(seed)))
    result.update({
        "task": task, "model": summary.get("model"), "dataset": summary.get("dataset"),
        "definition": "symmetry: A>B iff B<A over pairs predicted in both orders; transitivity: share of "
                      "triples with (A,B),(B,C) agreeing in direction whose (A,C) agrees; within each fold, pooled",
        "objects": object_bias(rows, first),
        "provenance": summary.get("provenance"),
    })
    if plot:
        from spatialprobe.reports.plots import object_bias_chart

        order = _level_order(summary, result["objects"])
        result["chart"] = object_bias_chart(result["objects"], order, run / "consistency_objects.png",
                                            title=f"{task} · {summary.get('model')}", first_label=first,
                                            caption=provenance_line(summary))
    write_json(run / "consistency.json", result)
    return result


def _level_order(summary: dict, objects: dict) -> list[str]:
    """Objects in the dataset's level order where it is a built-in set, else alphabetical."""
    from spatialprobe.tasks.data import builtin_names, load

    name = str(summary.get("dataset") or "").split("@")[0]  # "name@version"
    if name in builtin_names():
        levels = dict(load(name).object_levels)
        return sorted(objects, key=lambda o: (levels.get(o, 99), o))
    return sorted(objects)
