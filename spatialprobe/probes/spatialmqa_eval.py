"""SpatialMQA evaluation: strict and the benchmark's lenient matching; P/R/F1 and accuracy.

Matching a model's output to the gold answer (output lower-cased, stripped, a trailing period
removed; an empty output becomes ``--``):

* **strict** - the output equals the gold option.
* **lenient** - the benchmark's own rule: correct if the output is a substring of the answer
  or the answer a substring of the output; for ``on/above`` also whenever the output contains
  ``on`` or ``above`` (as plain substrings, so ``in front of`` counts too - the benchmark's
  quirk, reproduced so numbers compare with published ones).

For precision/recall/F1 each output is mapped to a label: strict - the option it equals, else
``--``; lenient - the gold answer when leniently correct, else the first relation (in the
order on/above, below, left of, right of, in front of, behind) that contains the output as a
substring, else ``--`` (the benchmark's P/R/F1 script does the same). Precision and recall
are scikit-learn's macro averages over the relations present in the gold answers; ``f1`` is
the benchmark's F1, the harmonic mean of macro precision and macro recall
(``Code/eval/calculate_prf1.py``), which is what published tables report; ``macro_f1`` is
the mean of the per-relation F1 scores (scikit-learn's macro F1). The two differ in general.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..datasets.vsr import find_images

RELATIONS = ("left of", "right of", "in front of", "behind", "on/above", "below")
_LABEL_ORDER = ("on/above", "below", "left of", "right of", "in front of", "behind")


def normalize(output: str) -> str:
    text = output.strip().lower().rstrip(".").strip().strip("\"'").strip()
    return text or "--"


def strict_label(output: str, options: Sequence[str]) -> str:
    text = normalize(output)
    return next((o for o in options if o.lower() == text), "--")


def lenient_correct(output: str, answer: str) -> bool:
    text, gold = normalize(output), answer.lower()
    if text in gold or gold in text:
        return True
    return gold == "on/above" and ("on" in text or "above" in text)


def lenient_label(output: str, answer: str) -> str:
    if lenient_correct(output, answer):
        return answer
    text = normalize(output)
    return next((label for label in _LABEL_ORDER if text in label), "--")


def classification_metrics(gold: Sequence[str], pred: Sequence[str]) -> dict[str, Any]:
    """Accuracy, macro precision/recall, the benchmark's F1 and macro-F1 (percent)."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    if not gold:
        return {"accuracy": None, "precision": None, "recall": None, "f1": None, "macro_f1": None,
                "n": 0}
    labels = [r for r in RELATIONS if r in set(gold)] or sorted(set(gold))
    p, r, f, _ = precision_recall_fscore_support(gold, pred, labels=labels, average="macro",
                                                 zero_division=0)
    benchmark_f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"accuracy": round(100 * accuracy_score(gold, pred), 2), "precision": round(100 * p, 2),
            "recall": round(100 * r, 2), "f1": round(100 * benchmark_f1, 2),
            "macro_f1": round(100 * f, 2), "n": len(gold)}


def mqa_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Strict and lenient metrics overall, per perspective and per axis."""
    out: dict[str, Any] = {}
    for mode in ("strict", "lenient"):
        key = f"{mode}_label"
        result = {"overall": classification_metrics([r["answer"] for r in rows], [r[key] for r in rows])}
        for field in ("perspective", "axis"):
            groups = defaultdict(list)
            for row in rows:
                groups[row[field]].append(row)
            result[f"per_{field}"] = {
                g: classification_metrics([r["answer"] for r in members], [r[key] for r in members])
                for g, members in sorted(groups.items())}
        out[mode] = result
    return out


def result_row(example, answer: dict[str, Any]) -> dict[str, Any]:
    output = answer["output"]
    row = {"id": example.id, "content_hash": example.content_hash, "image": example.image,
           "question": example.question, "options": list(example.options), "answer": example.answer,
           "perspective": example.perspective, "axis": example.axis, "output": output,
           "strict_label": strict_label(output, example.options),
           "lenient_label": lenient_label(output, example.answer),
           "lenient_correct": lenient_correct(output, example.answer)}
    if "scores" in answer:
        row["scores"] = answer["scores"]
    return row


def build_answerer(model: str, method: str = "auto", device: str = "auto"):
    """``clip`` (option scoring), ``generate`` (image-text-to-text) or ``auto`` (from the config)."""
    from .mqa_models import ClipOptionScorer, GenerativeAnswerer, is_clip_like

    if method == "auto":
        method = "clip" if is_clip_like(model) else "generate"
    if method == "clip":
        return ClipOptionScorer(model, device=device)
    if method == "generate":
        return GenerativeAnswerer(model, device=device)
    raise ValueError(f"method must be auto, clip or generate; got {method!r}")


def run_spatialmqa(model: str, data_dir, images_dir, out, *, part: str = "test",
                   method: str = "auto", device: str = "auto", batch_size: int = 8,
                   limit: int | None = None, answerer=None, progress=None) -> dict[str, Any]:
    """Evaluate one model on a SpatialMQA split; writes and returns the run's summary."""
    from pathlib import Path

    from ..datasets import spatialmqa
    from ..datasets.vsr import file_version
    from ..store import RunDir
    from .vl_runs import done_results, save_results, write_summary

    path = Path(data_dir) / f"{part}.jsonl"
    examples = spatialmqa.load_spatialmqa(data_dir, part)[:limit]
    images, missing = find_images(examples, images_dir, ("", "test2017", "images"))
    if not images:
        raise ValueError(f"none of the {len(examples)} images were found under {images_dir}: "
                         "--images should be the COCO test2017 folder")
    dataset = f"spatialmqa-{part}@{file_version(path)}"
    run = RunDir(out)
    run.start({"kind": "qa", "benchmark": "spatialmqa", "model": str(model), "method": method,
               "dataset": dataset, "data_file": str(path), "images": str(images_dir),
               "limit": limit, "seed": None}, resume_keys=("model", "method", "dataset", "limit"))
    answerer = answerer or build_answerer(model, method, device)
    done = done_results(run)
    todo = [e for e in examples if e.id in images and e.id not in done]
    for start in range(0, len(todo), batch_size):
        batch = todo[start:start + batch_size]
        answers = answerer.answer_batch([(images[e.id], e.question, e.options) for e in batch])
        save_results(run, [result_row(e, a) for e, a in zip(batch, answers, strict=True)])
        if progress is not None:
            progress(len(batch))
    done = done_results(run)
    rows = [done[e.id] for e in examples if e.id in done]
    metrics = mqa_metrics(rows)
    lenient, strict = metrics["lenient"]["overall"], metrics["strict"]["overall"]
    summary = {"kind": "qa", "task": "spatialmqa", "model": str(model), "dataset": dataset,
               "matching": "lenient (benchmark rule); strict in 'strict'",
               "accuracy": {"mean": lenient["accuracy"], "std": None},
               "macro_f1": {"mean": lenient["macro_f1"], "std": None},
               "f1_benchmark": lenient["f1"],
               "strict": metrics["strict"], "lenient": metrics["lenient"],
               "n_examples": len(examples), "n_scored": len(rows), "n_missing_images": len(missing),
               "missing_images": sorted({e.image for e in examples if e.id in set(missing)})[:50],
               "extra_keys": spatialmqa.extra_key_report(examples),
               "model_info": answerer.describe()}
    table = []
    for name, block in (("overall", {"all": (strict, lenient)}),
                        ("perspective", _pairs(metrics, "per_perspective")),
                        ("axis", _pairs(metrics, "per_axis"))):
        for group, (s, lax) in block.items():  # s: strict, lax: lenient figures of the group
            table.append((f"{name}: {group}", str(s["n"]), str(s["accuracy"]), str(s["f1"]),
                          str(lax["accuracy"]), str(lax["precision"]), str(lax["recall"]), str(lax["f1"])))
    write_summary(run, summary, rows, table, ("group", "n", "strict acc", "strict F1", "lenient acc",
                                              "lenient P", "lenient R", "lenient F1 (2PR/(P+R))"))
    return summary


def _pairs(metrics, key):
    return {g: (metrics["strict"][key][g], metrics["lenient"][key][g]) for g in metrics["strict"][key]}
