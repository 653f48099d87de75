"""VSR with CLIP and negated-relation prompting: the caption wins if it outscores its negation.

For each (image, caption) the model scores the caption and the caption with its relation
replaced by the relation's negation or antonym (``spatialprobe/data/vsr_relations.tsv``);
the prediction is *true* when the caption scores strictly higher. Accuracy is reported overall,
per relation and per the 7 relation categories, with a plot.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..datasets import vsr
from ..store import RunDir
from .vl_runs import done_results, pct, save_results, write_summary


def grouped_accuracy(rows: Sequence[dict[str, Any]], key: str) -> dict[str, dict[str, float]]:
    groups: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        groups[row[key]].append(row["pred"] == row["label"])
    return {g: {"accuracy": pct(sum(v) / len(v)), "n": len(v)} for g, v in sorted(groups.items())}


def vsr_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy and macro-F1 (percent) overall, plus accuracy per relation and per category."""
    from sklearn.metrics import accuracy_score, f1_score

    gold = [r["label"] for r in rows]
    pred = [r["pred"] for r in rows]
    return {
        "accuracy": pct(accuracy_score(gold, pred)) if rows else None,
        "macro_f1": pct(f1_score(gold, pred, average="macro", labels=[0, 1], zero_division=0))
        if rows else None,
        "n": len(rows),
        "per_relation": grouped_accuracy(rows, "relation"),
        "per_category": grouped_accuracy(rows, "category"),
    }


def predict_rows(examples: Sequence[vsr.VSRExample], images: dict[str, Path], clip,
                 batch_size: int = 16, on_batch: Callable[[list[dict]], None] | None = None
                 ) -> list[dict[str, Any]]:
    """One result row per example that has an image."""
    table = vsr.relations()
    rows: list[dict[str, Any]] = []
    todo = [e for e in examples if e.id in images]
    for start in range(0, len(todo), batch_size):
        batch = todo[start:start + batch_size]
        items = [(images[e.id], (e.caption, vsr.negate_caption(e.caption, e.relation))) for e in batch]
        scores = clip.batch_scores(items)
        new = []
        for example, (_, texts), (s_caption, s_negation) in zip(batch, items, scores, strict=True):
            new.append({"id": example.id, "image": example.image, "caption": example.caption,
                        "negation": texts[1], "relation": example.relation,
                        "category": table[example.relation].category, "label": example.label,
                        "pred": int(s_caption > s_negation), "score_caption": s_caption,
                        "score_negation": s_negation})
        rows.extend(new)
        if on_batch is not None:
            on_batch(new)
    return rows


def _check_negations(examples: Sequence[vsr.VSRExample], path: Path) -> None:
    """Every example's relation is in the table and its caption negates: checked before any model runs."""
    table = vsr.relations()
    for example in examples:
        if example.relation not in table:
            raise ValueError(f"{path}: example {example.id} has relation {example.relation!r}, which "
                             "is not among the 71 of spatialprobe/data/vsr_relations.tsv")
        vsr.negate_caption(example.caption, example.relation)  # ValueError names the caption


def run_vsr_clip(model: str, data_dir: str | Path, images_dir: str | Path, out: str | Path, *,
                 split: str = "random", part: str = "test", device: str = "auto",
                 batch_size: int = 16, limit: int | None = None, clip=None,
                 progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Evaluate one CLIP checkpoint on a VSR split; writes and returns the run's summary."""
    from .clip_scoring import ClipSimilarity

    path = vsr.split_file(data_dir, split, part)
    examples = vsr.load_vsr_file(path, split=split, part=part)[:limit]
    _check_negations(examples, path)
    images, missing = vsr.find_images(examples, images_dir)
    if not images:
        raise ValueError(f"none of the {len(examples)} images were found under {images_dir}: "
                         "--images should be the COCO 2017 folder (flat, or with train2017/, val2017/)")
    dataset = f"vsr-{split}-{part}@{vsr.file_version(path)}"
    run = RunDir(out)
    config = {"kind": "vsr", "method": "clip-negated-relation", "model": str(model),
              "dataset": dataset, "data_file": str(path), "images": str(images_dir),
              "split": split, "part": part, "limit": limit, "batch_size": batch_size, "seed": None,
              "prompt": "caption vs. caption with the relation negated (vsr_relations.tsv)"}
    run.start(config, resume_keys=("model", "dataset", "limit"))
    clip = clip or ClipSimilarity(model, device=device)
    done = done_results(run)
    todo = [e for e in examples if e.id not in done]

    def commit(rows):
        save_results(run, rows)
        if progress is not None:
            progress(len(rows))

    predict_rows(todo, images, clip, batch_size=batch_size, on_batch=commit)
    done = done_results(run)
    rows = [done[e.id] for e in examples if e.id in done]
    metrics = vsr_metrics(rows)
    summary = {"kind": "vsr", "task": f"vsr-{split}", "model": str(model), "dataset": dataset,
               "accuracy": {"mean": metrics["accuracy"], "std": None},
               "macro_f1": {"mean": metrics["macro_f1"], "std": None},
               "n_examples": len(examples), "n_scored": len(rows), "n_missing_images": len(missing),
               "missing_images": sorted({e.image for e in examples if e.id in set(missing)})[:50],
               "per_category": metrics["per_category"], "per_relation": metrics["per_relation"],
               "model_info": clip.describe()}
    if rows:
        from ..reports.vl_plots import accuracy_bars

        accuracy_bars({"per category": metrics["per_category"],
                       "per relation": metrics["per_relation"]},
                      run.file("accuracy.png"), f"VSR {split}/{part}: {model}")
    table = [("overall", str(metrics["accuracy"]), str(metrics["n"]))]
    table += [(c, str(v["accuracy"]), str(v["n"])) for c, v in metrics["per_category"].items()]
    write_summary(run, summary, rows, table, ("group", "accuracy (%)", "n"))
    return summary
