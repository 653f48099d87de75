"""The probing spine: dataset -> candidates -> scores -> per-fold selection -> metrics -> run files.

``run_probe`` is what ``spatialprobe probe`` calls; it reads as one screen:
get instances, score every candidate once (cached, resumable), choose per fold on dev,
measure on test, write ``config.json``, ``predictions.jsonl``, ``summary.json``, ``table.md``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import registry
from ..datasets import make_folds
from ..metrics.classification import STD_DDOF, accuracy_f1, confusion, mean_std
from ..prompts.templates import Candidates, check_labels
from ..records import Dataset, Prediction
from ..reports.tables import probe_table
from ..store import RunDir, atomic_write_text, register_run, write_json, write_jsonl
from .scores import compute_scores
from .selection import choose, predictions


@dataclass(frozen=True)
class ProbeSettings:
    """Everything that decides a probe's numbers; dumped into ``config.json``."""

    model: str
    """Model name or path (``dummy`` for the untrained smoke scorer)."""
    folds: int = 5
    """Number of object-disjoint folds."""
    seed: int = 0
    """Seed of the fold assignment."""
    device: str = "auto"
    """``auto``, ``cpu`` or ``cuda``."""
    batch_size: int = 64
    """Sequences per forward pass."""
    scorer: str = "auto"
    """Registered scorer: ``auto`` picks ``dummy`` for the dummy model, ``vilt`` for a ViLT model
    (``model_type`` in a local directory's config.json, else "vilt" in the model id), else
    ``hf-mlm`` (any masked LM, converted VinVL included)."""
    image: str = "blank"
    """Vision-language scorers: ``blank`` (a neutral gray image) or a synthesis run directory."""


def scorer_spec(settings: ProbeSettings) -> registry.Spec:
    name = settings.scorer
    if name == "auto":
        name = ("dummy" if settings.model == "dummy"
                else "vilt" if _model_type(settings.model) == "vilt" else "hf-mlm")
    if name == "dummy":
        return registry.Spec("dummy", {"seed": settings.seed})
    args = {"model": settings.model, "device": settings.device, "batch_size": settings.batch_size}
    if name == "vilt":
        args["image"] = settings.image
    return registry.Spec(name, args)


def _model_type(model: str) -> str:
    config = Path(model) / "config.json"
    if config.is_file():
        try:
            return str(json.loads(config.read_text(encoding="utf-8")).get("model_type", ""))
        except (OSError, ValueError):
            return ""
    return "vilt" if "vilt" in model.lower() else ""


def build_scorer(settings: ProbeSettings):
    return registry.build("scorer", scorer_spec(settings))


def run_probe(dataset: Dataset, candidates: Candidates, settings: ProbeSettings, out: Path,
              scorer=None, on_progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    check_labels(candidates, dataset)
    scorer = scorer or build_scorer(settings)
    described = scorer.describe()
    run = RunDir(out)
    answer_sets = candidates.answer_sets(dataset.labels)
    config = run.start({
        "kind": "probe", "task": dataset.task, "model": settings.model,
        "weights_sha256": described.get("weights_sha256"), "scorer": described,
        "dataset": dataset.name, "dataset_version": dataset.version, "n_instances": len(dataset),
        "candidates": candidates.to_dict(), "settings": settings.__dict__,
    }, resume_keys=("task", "model", "weights_sha256", "dataset_version"))

    words = [w for answers in answer_sets for w in answers]
    grid = compute_scores(run, scorer, candidates.templates, dataset.instances, words,
                          on_progress=on_progress)
    pred = predictions(grid, answer_sets)
    fold_rows, rows = evaluate_folds(dataset, grid, answer_sets, pred, settings)

    whole = accuracy_f1([inst.label for inst in dataset.instances],
                        [dataset.labels[p] for p in pred[0, 0]], dataset.labels)
    summary = {
        "kind": "probe", "task": dataset.task, "model": settings.model,
        "untrained": bool(described.get("untrained", False)),
        "dataset": {"name": dataset.name, "version": dataset.version, "instances": len(dataset)},
        "candidates": {"source": candidates.source, "templates": len(candidates.templates),
                       "answer_sets": len(answer_sets)},
        "seed": settings.seed,
        "folds": fold_rows,
        "accuracy": mean_std([f["accuracy"] for f in fold_rows]),
        "macro_f1": mean_std([f["macro_f1"] for f in fold_rows]),
        "std_ddof": STD_DDOF,
        "whole_set": {"prompt": candidates.templates[0],
                      "answers": dict(zip(dataset.labels, answer_sets[0], strict=True)), **whole},
        "confusion": confusion([r["gold"] for r in rows], [r["pred"] for r in rows], dataset.labels),
        "provenance": config["provenance"],
    }
    if dataset.task == "posrel":
        summary["same_answer_both_actions"] = same_answer_share(rows, dataset)
    write_jsonl(run.file("predictions.jsonl"), rows)
    write_json(run.file("summary.json"), summary)
    atomic_write_text(run.file("table.md"), probe_table(summary))
    register_run(run.path, kind="probe", task=dataset.task, model=settings.model,
                 dataset=f"{dataset.name}@{dataset.version}",
                 accuracy=summary["accuracy"]["mean"], macro_f1=summary["macro_f1"]["mean"])
    return summary


def evaluate_folds(dataset: Dataset, grid, answer_sets, pred: np.ndarray, settings: ProbeSettings
                   ) -> tuple[list[dict], list[dict]]:
    """Per fold: choose on dev, predict and measure on test. Returns (fold rows, prediction rows)."""
    gold = np.array([dataset.labels.index(inst.label) for inst in dataset.instances])
    by_id = {inst.id: n for n, inst in enumerate(dataset.instances)}
    fold_rows, rows = [], []
    for fold in make_folds(dataset, settings.folds, settings.seed):
        choice = choose(grid, answer_sets, pred, gold, dataset.labels, fold)
        t, s = choice.template_index, choice.answer_set_index
        word_ids = [grid.word_index(w) for w in choice.config.answers]
        fold_preds = []
        for n in (by_id[i] for i in fold.test):
            inst = dataset.instances[n]
            fold_preds.append(Prediction(
                inst.id, fold.index, inst.obj_a, inst.obj_b, inst.label, dataset.labels[pred[t, s, n]],
                choice.config.template, choice.config.answers,
                tuple(round(float(grid.values[t, n, w]), 6) for w in word_ids),
            ).to_dict())
        figures = accuracy_f1([r["gold"] for r in fold_preds], [r["pred"] for r in fold_preds], dataset.labels)
        fold_rows.append({
            "fold": fold.index, "objects": list(fold.objects), "dev_size": len(fold.dev),
            "size": len(fold_preds), "prompt": choice.config.template,
            "answers": dict(zip(dataset.labels, choice.config.answers, strict=True)),
            "dev_accuracy": choice.dev_accuracy, "dev_macro_f1": choice.dev_macro_f1,
            "accuracy": figures["accuracy"], "macro_f1": figures["macro_f1"],
        })
        rows.extend(fold_preds)
    return fold_rows, rows


def same_answer_share(rows: list[dict], dataset: Dataset) -> float | None:
    """posrel: share of (person, object, verb form) groups, within a fold, where the model gives the
    same answer for both of the object's actions, although their gold relations differ."""
    actions = {inst.id: inst.action for inst in dataset.instances}
    groups: dict[tuple, dict[str, str]] = defaultdict(dict)
    for r in rows:
        action = actions.get(r["instance_id"], "")
        form = "progressive" if action.startswith(("is ", "are ")) else "simple"
        groups[(r["fold"], r["obj_a"], r["obj_b"], form)][action] = r["pred"]
    pairs = [set(g.values()) for g in groups.values() if len(g) == 2]
    return 100.0 * sum(len(p) == 1 for p in pairs) / len(pairs) if pairs else None
