"""Run folders as ``report`` and ``runs`` read them: loaded or named as damaged, labelled by what
differs between them, and described by their settings and coverage.

A folder is read from its own files (``config.json``, ``summary.json``), never from the index; a
folder whose files are missing, truncated or of the wrong shape is one warning naming the file,
and the other runs are still reported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spatialprobe.errors import UsageError
from spatialprobe.runner.summary import check_summary

LABEL_VALUE = 40
"""Characters of a setting's value a label or a settings list shows (longer ones are cut)."""


@dataclass(frozen=True)
class Run:
    """A finished run folder: its path, summary and config."""

    path: Path
    summary: Mapping[str, Any]
    config: Mapping[str, Any]

    @property
    def group(self) -> tuple[str, str]:
        """Runs that share columns: the same kind and task."""
        return str(self.summary.get("kind")), str(self.summary.get("task") or "")


def _read_object(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; ValueError with one sentence where it is not one."""
    if not path.is_file():
        raise UsageError(f"{path} is missing")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise UsageError(f"{path} is not readable JSON ({str(err).splitlines()[0][:80]})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} holds a JSON {type(data).__name__}, not an object")
    return data


def load_run(path: str | Path) -> Run:
    """The run at ``path``; ValueError with one sentence naming the damaged file."""
    path = Path(path)
    if not (path / "summary.json").exists():
        raise UsageError(f"{path} has no summary.json: not a finished run")
    summary = _read_object(path / "summary.json")
    try:
        check_summary(summary)
    except (ValueError, TypeError, AttributeError) as err:
        raise UsageError(f"{path / 'summary.json'} is not a spatialprobe summary ({err})") from None
    config = _read_object(path / "config.json")
    if not isinstance(config.get("settings", {}), dict):
        raise UsageError(f"{path / 'config.json'} has settings that are not an object")
    return Run(path, summary, config)


def load_runs(paths: Iterable[str | Path]) -> tuple[list[Run], list[str]]:
    """(the runs that could be read, one sentence per folder skipped)."""
    runs: list[Run] = []
    skipped: list[str] = []
    for path in paths:
        run = _try_load(path, skipped)
        if run is not None:
            runs.append(run)
    return runs, skipped


def _try_load(path: str | Path, skipped: list[str]) -> Run | None:
    try:
        return load_run(path)
    except (ValueError, OSError) as err:
        skipped.append(f"{err}; skipped.")
        return None


def flat(value: Any, prefix: str = "") -> dict[str, str]:
    """A config's settings as ``dotted.key -> compact JSON text`` (the leaves compared)."""
    if isinstance(value, Mapping) and value:
        out: dict[str, str] = {}
        for key in sorted(value, key=str):
            out.update(flat(value[key], f"{prefix}{key}."))
        return out
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return {prefix.rstrip("."): text}


def facets(run: Run) -> dict[str, str]:
    """What can tell runs of one kind and task apart: model, dataset and every setting, the model
    adapter's own among them (an ask run's ``backend`` and options, e.g. ``normalize``); a change of
    data file, version or path shows as the dataset its summary names."""
    out = {"model": str(run.summary.get("model")), "dataset": str(run.summary.get("dataset"))}
    for key, value in flat(run.config.get("settings") or {}).items():
        top = key.split(".")[0]
        if top == "source":  # an ask run's source: its own settings (limit, part), not where its files are
            key = key.removeprefix("source.")
            top = key.split(".")[0]
            if top in ("name", "file", "version") or key in out:
                continue
        if top == "model" and key.startswith(("model.name", "model.args.")) and key != "model.args.model":
            option = "backend" if key == "model.name" else key.removeprefix("model.args.")  # the adapter's
            out[option if option not in out else key] = value
        elif top not in ("task", "model", "dataset", "data", "source", "questions", "images", "prompt_set"):
            out[key] = value
    return out


def differing(runs: Sequence[Run]) -> list[str]:
    """Facet keys whose values differ between ``runs``, shallow ones first, each adding something:
    a key whose values follow run by run from the keys already chosen (the dummy scorer's seed and
    the run's seed) is left out."""
    table = [facets(r) for r in runs]
    keys = sorted({k for t in table for k in t},  # the adapter asked through before its options
                  key=lambda k: (k not in ("model", "dataset", "backend"), k.count("."), k))
    chosen: list[str] = []
    for key in keys:
        values = [t.get(key, "–") for t in table]
        if len(set(values)) < 2:
            continue
        known = [tuple(t.get(k, "–") for k in chosen) for t in table]
        if len(set(zip(known, values, strict=True))) == len(set(known)):
            continue  # nothing new: the chosen keys already decide this one
        chosen.append(key)
    return chosen


def _cut(text: str) -> str:
    return text if len(text) <= LABEL_VALUE else text[:LABEL_VALUE - 1] + "…"


def labels(runs: Sequence[Run], prefixes: Sequence[str] | None = None) -> list[str]:
    """One label per run: its model, then what differs from the other runs of its kind and task
    (``seed=1``); runs that differ in nothing shown are told apart by their folder."""
    keys: dict[tuple[str, str], list[str]] = {}
    for group in {r.group for r in runs}:
        keys[group] = differing([r for r in runs if r.group == group])
    out = []
    for n, run in enumerate(runs):
        shown = facets(run)
        parts = [str(run.summary.get("model"))] + [f"{k}={_cut(shown.get(k, '–'))}"
                                                   for k in keys[run.group] if k != "model"]
        label = " · ".join(parts) + (" [untrained]" if run.summary.get("untrained") else "")
        out.append(label if prefixes is None else f"{prefixes[n]}: {label}")
    named = list(zip(out, (r.group for r in runs), strict=True))  # rows of one group share columns
    return [f"{label} · {run.path}" if named.count((label, run.group)) > 1 else label
            for label, run in zip(out, runs, strict=True)]


def backend(run: Run) -> str:
    """The model adapter a run asked through (``hf-mllm``, ``openai-api``, ...), with a server's
    endpoint; ``–`` for a run that names none (an imported run, a judge)."""
    settings = run.config.get("settings") or {}
    component = settings.get("model") if isinstance(settings.get("model"), Mapping) else settings.get("scorer")
    if not isinstance(component, Mapping) or not component.get("name"):
        return "–"
    served = (run.config.get("inputs") or {}).get("model") or {}
    where = served.get("endpoint") if isinstance(served, Mapping) else None
    return f"{component['name']} at {where}" if where else str(component["name"])


def settings_text(run: Run) -> str:
    """The run's scalar settings (``folds=5 seed=0``): what ``runs`` lists beside each run."""
    settings = run.config.get("settings") or {}
    return " ".join(f"{k}={_cut(flat(v)[''])}" for k, v in sorted(settings.items())
                    if k not in ("task", "model", "dataset") and not isinstance(v, (dict, list)))


def coverage(summary: Mapping[str, Any]) -> str:
    """How much of its input a run scored: ``59 of 2195 examples``, ``8 of 10 images``, ``40 scored``."""
    details = summary.get("details") or {}
    if isinstance(details.get("n_examples"), int) and isinstance(details.get("n_missing_images"), int):
        n = details["n_examples"]
        return f"{n - details['n_missing_images']} of {n} examples"
    missing = details.get("missing_images")
    n = (summary.get("accuracy") or {}).get("n")
    if isinstance(missing, Mapping) and isinstance(missing.get("n"), int) and isinstance(n, int):
        return f"{n} of {n + missing['n']} images"
    if isinstance(details.get("images_total"), int):
        return f"{details.get('images_finished')} of {details['images_total']} images"
    return f"{n} scored" if isinstance(n, int) and n else "–"
