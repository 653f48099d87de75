"""ISM (Box): judge the images of an image store with a detector, a depth model and a rule.

The spine, in one screen (:func:`judge_run`): read the store's images for the task -> detect
both objects (highest-confidence box each) -> depth inside each box (size, height) -> apply the
rule -> write each judgement as it is made (resumable) -> give unrecognized images a seeded
random guess -> accuracy and macro-F1 on the recognized subset and the whole set -> summary,
predictions, table, index entry.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..extras import require
from ..imagestore import ImageRecord, ImageStore
from ..records import HEIGHT_LABELS, POSREL_LABELS, SIZE_LABELS
from ..registry import Spec, build, lookup
from ..store import RunDir, atomic_write_text, read_json, register_run, write_json, write_jsonl
from . import rules
from .base import best_per_object

TASK_LABELS = {"size": SIZE_LABELS, "height": HEIGHT_LABELS, "posrel": POSREL_LABELS}
_TABLE = ("CREATE TABLE IF NOT EXISTS judgements (prompt_id TEXT NOT NULL, image_index INTEGER "
          "NOT NULL, record TEXT NOT NULL, PRIMARY KEY (prompt_id, image_index))")


@dataclass(frozen=True)
class JudgeConfig:
    """What judges a run: the components as specs, so the config dumps to JSON as it is."""

    task: str
    """``size``, ``height`` or ``posrel``."""
    detector: Spec
    """Registered detector and its arguments."""
    depth: Spec | None = None
    """Registered depth estimator (size and height only)."""
    rule: str = "vdg"
    """posrel: a registered ``position-judge``; size/height use area*depth^2 / height*depth."""
    rule_args: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the rule (thresholds)."""
    seed: int = 0
    """Seed of the random guesses given to unrecognized images."""
    batch_size: int = 8
    """Images per detector / depth batch."""
    device: str = "auto"
    """auto, cpu or cuda; not part of a run's identity (a run may resume on another device)."""
    skip_missing: bool = False
    """Judge the images that remain when some files of the run are gone (else refuse)."""

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "detector": self.detector.to_dict(),
                "depth": self.depth.to_dict() if self.depth else None, "rule": self.rule,
                "rule_args": dict(self.rule_args), "seed": self.seed, "batch_size": self.batch_size,
                "device": self.device, "skip_missing": self.skip_missing}


def task_images(store: ImageStore, task: str, missing: bool = False) -> list[ImageRecord]:
    """Images whose prompt carries an instance of ``task`` with both objects and a label
    (``missing=True``: those whose file is recorded but gone)."""
    keep = []
    for rec in (store.missing_images() if missing else store.images()):
        meta = rec.meta
        if meta.get("task", task) == task and {"obj_a", "obj_b", "label"} <= set(meta):
            keep.append(rec)
    return keep


def judge_image(cfg: JudgeConfig, detections, depth_map, meta: dict[str, Any]) -> dict[str, Any]:
    """One judgement: boxes, depths, the rule's answer and explanation (pred None if unrecognized)."""
    a, b = meta["obj_a"], meta["obj_b"]
    best = best_per_object(detections, [a, b])
    det_a, det_b = best[a], best[b]
    row: dict[str, Any] = {"found_a": det_a is not None, "found_b": det_b is not None,
                           "box_a": list(det_a.box) if det_a else None,
                           "box_b": list(det_b.box) if det_b else None,
                           "score_a": det_a.score if det_a else None,
                           "score_b": det_b.score if det_b else None, "pred": None}
    if det_a is None or det_b is None:
        missing = [n for n, d in ((a, det_a), (b, det_b)) if d is None]
        row["explanation"] = f"not recognized: no box for {', '.join(missing)}"
        return row
    labels = TASK_LABELS[cfg.task]
    if cfg.task == "posrel":
        judge = lookup("position-judge", cfg.rule)
        pred, why = rules.classify_position(judge, det_a.box, det_b.box, labels, **cfg.rule_args)
        # A rule that finds no relation cannot answer: the image counts as not recognized (it
        # gets the seeded guess on the whole set), as the released code leaves such images out,
        # rather than adding a "none" class to the task's labels and to macro-F1.
        row["pred"] = None if pred == "none" else pred
        row["explanation"] = f"not recognized: {why}" if pred == "none" else why
        return row
    row["depth_a"] = rules.mean_depth(depth_map, det_a.box)
    row["depth_b"] = rules.mean_depth(depth_map, det_b.box)
    rule = rules.size_rule if cfg.task == "size" else rules.height_rule
    row["pred"], row["explanation"] = rule(det_a.box, row["depth_a"], det_b.box, row["depth_b"],
                                           labels=labels)
    return row


def _batches(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _on_device(spec: Spec, device: str) -> Spec:
    return Spec(spec.name, {**spec.args, "device": device})


def judge_run(source: str, out: str, cfg: JudgeConfig,
              progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Judge every image of ``cfg.task`` in the image store ``source``; write the run at ``out``."""
    require("PIL.Image", "judge")  # before any work: a missing extra is named, not a traceback later

    if cfg.task not in TASK_LABELS:
        raise ValueError(f"Unknown task {cfg.task!r}; choose from {sorted(TASK_LABELS)}.")
    store = ImageStore(source)
    images = task_images(store, cfg.task)
    missing = task_images(store, cfg.task, missing=True)
    if missing and not cfg.skip_missing:
        raise ValueError(f"{source}: {missing_note(missing, len(images))}; restore them, or pass "
                         "--skip-missing to judge the rest (recorded in the judge run).")
    if not images:
        raise ValueError(f"{source} holds no finished images of {cfg.task} instances "
                         "(prompt meta needs task, obj_a, obj_b and label).")
    run = RunDir(out)
    detector = build("detector", _on_device(cfg.detector, cfg.device))
    depth = build("depth", _on_device(cfg.depth, cfg.device)) if cfg.depth and cfg.task != "posrel" else None
    config = {"kind": "judge", "source": str(store.path.resolve()), **cfg.to_dict(),
              "detector_resolved": detector.describe(),
              "depth_resolved": depth.describe() if depth else None}
    run.start(config, resume_keys=("source", "task", "detector", "depth", "rule", "rule_args"))
    with run.db() as conn:
        conn.execute(_TABLE)
        done = {(p, i) for p, i in conn.execute("SELECT prompt_id, image_index FROM judgements")}
    todo = [r for r in images if (r.prompt_id, r.image_index) not in done]
    for batch in _batches(todo, cfg.batch_size):
        pil = [open_image(r.path) for r in batch]
        found = detector.detect(pil, [[r.meta["obj_a"], r.meta["obj_b"]] for r in batch])
        depths = depth.estimate(pil) if depth else [None] * len(batch)
        rows = [judge_image(cfg, f, d, r.meta) for r, f, d in zip(batch, found, depths, strict=True)]
        with run.db() as conn:  # committed per batch: an interrupted run resumes here
            conn.executemany("INSERT OR REPLACE INTO judgements VALUES (?, ?, ?)",
                             [(r.prompt_id, r.image_index, json.dumps(row))
                              for r, row in zip(batch, rows, strict=True)])
        if progress:
            progress(len(batch))
    with run.db() as conn:
        stored = {(p, i): json.loads(t) for p, i, t in
                  conn.execute("SELECT prompt_id, image_index, record FROM judgements")}
    predictions = finish_predictions(images, stored, store, TASK_LABELS[cfg.task], cfg.seed)
    summary = summarize(predictions, cfg, source_info(store, images))
    if missing:  # only reached with skip_missing: the numbers cover fewer images than the run made
        summary["missing_images"] = {"n": len(missing), "note": missing_note(missing, len(images)),
                                     "files": [str(r.path.relative_to(store.path)) for r in missing]}
    write_jsonl(run.file("predictions.jsonl"), predictions)
    write_json(run.file("summary.json"), summary)
    atomic_write_text(run.file("table.md"), table_markdown(summary))
    register_run(run.path, kind="judge", task=cfg.task, model=summary["model"],
                 dataset=summary["dataset"], accuracy=summary["accuracy"]["mean"],
                 macro_f1=summary["macro_f1"]["mean"])
    return summary


def missing_note(missing: Sequence[ImageRecord], present: int) -> str:
    """How many image files are gone, of how many, and the first three paths."""
    first = ", ".join(str(r.path) for r in missing[:3]) + (", ..." if len(missing) > 3 else "")
    return f"{len(missing)} of {len(missing) + present} image files are missing ({first})"


def open_image(path):
    """An image as RGB; a damaged file is a DataError naming it, not a PIL traceback."""
    from PIL import Image

    from ..datasets.release import DataError

    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except (OSError, SyntaxError) as err:  # PIL raises SyntaxError for some broken PNG chunks
        raise DataError(path, None, None, f"not a readable image ({err})") from None


def finish_predictions(images: Sequence[ImageRecord], stored: dict, store: ImageStore,
                       labels: Sequence[str], seed: int) -> list[dict[str, Any]]:
    """Rows in image order; unrecognized images get a random label from ``random.Random(seed)``."""
    rng = random.Random(seed)
    rows = []
    for rec in images:
        row = dict(stored[(rec.prompt_id, rec.image_index)])
        recognized = row["pred"] is not None
        row.update({"instance_id": rec.prompt_id, "image_index": rec.image_index,
                    "image": str(rec.path.relative_to(store.path)), "obj_a": rec.meta["obj_a"],
                    "obj_b": rec.meta["obj_b"], "gold": rec.meta["label"], "recognized": recognized,
                    "pred": row["pred"] if recognized else rng.choice(list(labels))})
        rows.append(row)
    return rows


def source_dataset(store: ImageStore) -> str | None:
    """The image run's dataset as ``name@version`` (or the prompt file), from its config.

    ``spatialprobe synthesize`` records it as ``prompts``; ``dataset`` is read too.
    """
    config = store.run.config() or {}
    dataset = config.get("dataset") or config.get("prompts")
    if isinstance(dataset, dict):
        dataset = f"{dataset.get('name')}@{dataset.get('version')}"
    return str(dataset) if dataset else None


def source_info(store: ImageStore, images: Sequence[ImageRecord]) -> dict[str, str]:
    models = sorted({f"{r.backend}:{r.model}" for r in images})
    return {"model": " | ".join(models),
            "dataset": source_dataset(store) or str(images[0].meta.get("task"))}


def scores(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Accuracy and macro-F1 (percent); zeros for an empty set.

    Macro-F1 averages over the labels that occur in gold or predictions (scikit-learn's
    default), so a small subset is not charged for labels it never contains.
    """
    from sklearn.metrics import accuracy_score, f1_score

    if not rows:
        return {"accuracy": 0.0, "macro_f1": 0.0, "n": 0}
    gold = [r["gold"] for r in rows]
    pred = [r["pred"] for r in rows]
    return {"accuracy": 100.0 * accuracy_score(gold, pred),
            "macro_f1": 100.0 * f1_score(gold, pred, average="macro", zero_division=0),
            "n": len(rows)}


def per_object(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """For each object: images it appears in, accuracy there, and how often it was detected."""
    stats: dict[str, list[tuple[bool, bool]]] = {}
    for r in rows:
        for obj, found in ((r["obj_a"], r["found_a"]), (r["obj_b"], r["found_b"])):
            stats.setdefault(obj, []).append((r["pred"] == r["gold"], found))
    return {obj: {"n": len(v), "accuracy": 100.0 * sum(c for c, _ in v) / len(v),
                  "detected": 100.0 * sum(f for _, f in v) / len(v)}
            for obj, v in sorted(stats.items())}


def summarize(rows: Sequence[dict[str, Any]], cfg: JudgeConfig, info: dict[str, str]) -> dict[str, Any]:
    whole = scores(rows)
    recognized = scores([r for r in rows if r["recognized"]])
    return {
        "kind": "judge", "method": "ISM (Box)", "task": cfg.task, "model": info["model"],
        "dataset": info["dataset"], "judge": cfg.to_dict(),
        "accuracy": {"mean": whole["accuracy"], "std": None},
        "macro_f1": {"mean": whole["macro_f1"], "std": None},
        "whole_set": whole, "recognized_subset": recognized,
        "recognized_ratio": 100.0 * recognized["n"] / max(whole["n"], 1),
        "n_images": whole["n"], "per_object": per_object(rows),
    }


def table_markdown(summary: dict[str, Any]) -> str:
    whole, rec = summary["whole_set"], summary["recognized_subset"]
    return (f"# ISM (Box): {summary['task']} - {summary['model']}\n\n"
            "| subset | images | accuracy (%) | macro-F1 (%) |\n|---|---:|---:|---:|\n"
            f"| whole set (unrecognized: random guess) | {whole['n']} | {whole['accuracy']:.1f} | "
            f"{whole['macro_f1']:.1f} |\n"
            f"| recognized subset | {rec['n']} | {rec['accuracy']:.1f} | {rec['macro_f1']:.1f} |\n\n"
            f"Recognized ratio: {summary['recognized_ratio']:.1f}%\n\n"
            "| object | images | accuracy (%) | detected (%) |\n|---|---:|---:|---:|\n"
            + "".join(f"| {obj} | {v['n']} | {v['accuracy']:.1f} | {v['detected']:.1f} |\n"
                      for obj, v in summary["per_object"].items()))


def load_summary(run: str) -> dict[str, Any]:
    return read_json(RunDir(run).file("summary.json"))
