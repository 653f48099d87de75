"""Human evaluation (ISM (Human)): a self-contained annotation page, and scoring its answers.

:func:`export_page` writes one HTML file holding every image (as a data URI), the question for
it and the answer options; the annotator answers with the keyboard and saves a JSON file that
they send back. :func:`import_answers` scores one or more such files against gold: accuracy and
macro-F1 per annotator (whole set, with unanswered or "can't tell" items given a seeded random
guess, and on the answered subset), Cohen's kappa between annotators, and the mean over
annotators, as the paper reports ISM (Human).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import random
from collections.abc import Sequence
from importlib import resources
from itertools import combinations
from pathlib import Path
from typing import Any

from ..datasets.release import DataError, read_json_file
from ..extras import require
from ..imagestore import ImageStore
from ..records import HEIGHT_LABELS, POSREL_LABELS, SIZE_LABELS

CANT_TELL = "cannot tell"
TASK_LABELS = {"size": SIZE_LABELS, "height": HEIGHT_LABELS, "posrel": POSREL_LABELS}
FORMAT = "spatialprobe-annotations"


def question(task: str, a: str, b: str) -> str:
    if task == "size":
        return f"In this image, is the {a} larger or smaller than the {b}?"
    if task == "height":
        return f"In this image, is the {a} taller or shorter than the {b}?"
    return f"In this image, where is the {a} relative to the {b}?"


def annotation_items(run: str | Path, task: str | None = None) -> tuple[str, list[dict[str, Any]]]:
    """(task, items) for the run's images of one task, in store order, with gold kept aside."""
    store = ImageStore(run)
    records = [r for r in store.images() if r.meta.get("task") in TASK_LABELS
               and {"obj_a", "obj_b", "label"} <= set(r.meta)]
    tasks = sorted({r.meta["task"] for r in records})
    if task is None:
        if len(tasks) != 1:
            raise ValueError(f"{run} holds images of tasks {tasks or 'none'}; choose one with --task.")
        task = tasks[0]
    items = []
    for r in records:
        if r.meta["task"] != task:
            continue
        items.append({"id": f"{r.prompt_id}#{r.image_index}", "path": r.path, "obj_a": r.meta["obj_a"],
                      "obj_b": r.meta["obj_b"], "gold": r.meta["label"], "prompt": r.prompt,
                      "question": question(task, r.meta["obj_a"], r.meta["obj_b"])})
    if not items:
        raise ValueError(f"{run} holds no finished images of {task} instances.")
    return task, items


def page_id(run: str | Path, task: str, items: Sequence[dict[str, Any]]) -> str:
    """Names the page by its task and items (not the run's path, so a moved run still imports)."""
    digest = hashlib.sha256(json.dumps([task] + [[i["id"], i["prompt"]] for i in items])
                            .encode()).hexdigest()
    return f"{task}-{digest[:12]}"


def image_data_uri(path: Path, max_side: int = 768, quality: int = 90) -> str:
    """The image as a JPEG data URI (a page of 500 PNGs at 512 px would weigh ~200 MB)."""
    import io

    Image = require("PIL.Image", "judge", "The annotation page (spatialprobe annotate)")
    image = Image.open(path).convert("RGB")
    if max(image.size) > max_side:
        image.thumbnail((max_side, max_side))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode()


def export_page(run: str | Path, out: str | Path, task: str | None = None) -> Path:
    """Write the annotation page for the run's images of ``task``; returns its path."""
    from ..store import atomic_write_text

    task, items = annotation_items(run, task)
    options = [*TASK_LABELS[task], CANT_TELL]
    payload = {
        "page_id": page_id(run, task, items), "run": str(Path(run).resolve()), "task": task,
        "options": options,
        "items": [{"id": i["id"], "question": i["question"],
                   "image": image_data_uri(i["path"])}
                  for i in items],
    }
    template = (resources.files("spatialprobe") / "data" / "annotate.html").read_text("utf-8")
    # Inside <script>, HTML reads "</script" as its end and "<!--<script>" as a switch to a state in
    # which "</script>" no longer ends it; JSON's \u escapes of <, > and & leave no markup at all.
    data = json.dumps(payload).translate({ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"})
    page = template.replace("__TITLE__", html.escape(f"spatialprobe annotation: {task}"))
    page = page.replace("__DATA__", data)
    out = Path(out)
    atomic_write_text(out, page)
    return out


def _load(path: Path) -> dict[str, Any]:
    data = read_json_file(path)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DataError(path, None, "format", f"not a {FORMAT} file")
    return data


def page_items(path: str | Path, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items of the page an answers file came from: those it lists (pages save their item
    ids, so images added to the run after the export do not orphan the answers), else all."""
    path = Path(path)
    listed = _load(path).get("items")
    if listed is None:
        return list(items)
    if not isinstance(listed, list):
        raise DataError(path, None, "items", "expected a list of item ids")
    by_id = {i["id"]: i for i in items}
    missing = [i for i in listed if i not in by_id]
    if missing:
        raise DataError(path, None, "items", f"item {missing[0]!r} is not an image of this run "
                        "(answers exported from another run?)")
    return [by_id[i] for i in listed]


def read_answers(path: str | Path, expected_page: str) -> dict[str, Any]:
    path = Path(path)
    data = _load(path)
    if data.get("page_id") != expected_page:
        raise DataError(path, None, "page_id", f"answers are for page {data.get('page_id')!r}, "
                        f"but this run's page is {expected_page!r} (exported from another run?)")
    if not isinstance(data.get("answers"), dict):
        raise DataError(path, None, "answers", "expected an object item id -> answer")
    return data


def usable_answers(answers: dict[str, Any], items: Sequence[dict[str, Any]]
                   ) -> tuple[dict[str, str], dict[str, Any]]:
    """The answers to this page's items that are strings, and what was left out of them:
    counts and the first ids of answers to unknown items and of non-string answers."""
    known = {i["id"] for i in items}
    unknown = [k for k in answers if k not in known]
    not_text = [k for k, v in answers.items() if k in known and not isinstance(v, str)]
    kept = {k: v for k, v in answers.items() if k in known and isinstance(v, str)}
    ignored = {"unknown_ids": len(unknown), "first_unknown_ids": unknown[:3],
               "non_string": len(not_text), "first_non_string_ids": not_text[:3]}
    return kept, ignored


def score_annotator(items: Sequence[dict[str, Any]], answers: dict[str, str], labels: Sequence[str],
                    seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from ..detectors.judge import scores

    rng = random.Random(seed)
    rows = []
    for item in items:
        given = answers.get(item["id"])
        answered = given in labels
        rows.append({"item": item["id"], "obj_a": item["obj_a"], "obj_b": item["obj_b"],
                     "gold": item["gold"], "answer": given, "recognized": answered,
                     "pred": given if answered else rng.choice(list(labels))})
    whole = scores(rows)
    subset = scores([r for r in rows if r["recognized"]])
    return {"whole_set": whole, "recognized_subset": subset,
            "recognized_ratio": 100.0 * subset["n"] / max(whole["n"], 1)}, rows


def import_answers(run: str | Path, answer_files: Sequence[str | Path], out: str | Path,
                   task: str | None = None, seed: int = 0) -> dict[str, Any]:
    """Score annotators' answer files; write a run (summary.json, predictions.jsonl, table.md)."""
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    from ..detectors.judge import source_dataset
    from ..store import RunDir, atomic_write_text, register_run, write_json, write_jsonl

    task, items = annotation_items(run, task)
    if answer_files:
        items = page_items(answer_files[0], items)
    labels = TASK_LABELS[task]
    expected = page_id(run, task, items)
    per_annotator, all_rows, answers_by, ignored_by = {}, [], {}, {}
    for number, path in enumerate(answer_files):
        data = read_answers(path, expected)
        name = str(data.get("annotator") or Path(path).stem)
        if name in per_annotator:
            name = f"{name}-{number}"
        answers, ignored = usable_answers(data["answers"], items)
        if ignored["unknown_ids"] or ignored["non_string"]:
            ignored_by[name] = {"file": str(path), **ignored}
        per_annotator[name], rows = score_annotator(items, answers, labels, seed + number)
        answers_by[name] = answers
        all_rows += [{"annotator": name, **r} for r in rows]
    kappa = {}
    for x, y in combinations(per_annotator, 2):
        shared = [i["id"] for i in items if i["id"] in answers_by[x] and i["id"] in answers_by[y]]
        if shared:
            value = cohen_kappa_score([answers_by[x][i] for i in shared], [answers_by[y][i] for i in shared])
            kappa[f"{x} | {y}"] = {"kappa": float(np.nan_to_num(value, nan=1.0)), "items": len(shared)}
    accs = [a["whole_set"]["accuracy"] for a in per_annotator.values()]
    f1s = [a["whole_set"]["macro_f1"] for a in per_annotator.values()]
    source = ImageStore(run)
    models = sorted({f"{r.backend}:{r.model}" for r in source.images()})
    summary: dict[str, Any] = {
        "kind": "human", "method": "ISM (Human)", "task": task, "model": " | ".join(models),
        "dataset": source_dataset(source) or task,
        "accuracy": {"mean": float(np.mean(accs)), "std": float(np.std(accs))},
        "macro_f1": {"mean": float(np.mean(f1s)), "std": float(np.std(f1s))},
        "annotators": per_annotator, "kappa": kappa,
        "mean_kappa": float(np.mean([k["kappa"] for k in kappa.values()])) if kappa else None,
        "items": len(items), "seed": seed,
        "ignored_answers": ignored_by,  # per annotator: answers to unknown ids, non-string answers
    }
    rundir = RunDir(out)
    rundir.start({"kind": "human", "source": str(Path(run).resolve()), "task": task, "seed": seed,
                  "answer_files": [str(Path(p).resolve()) for p in answer_files]})
    write_jsonl(rundir.file("predictions.jsonl"), all_rows)
    write_json(rundir.file("summary.json"), summary)
    atomic_write_text(rundir.file("table.md"), table_markdown(summary))
    register_run(rundir.path, kind="human", task=task, model=summary["model"],
                 dataset=summary["dataset"], accuracy=summary["accuracy"]["mean"],
                 macro_f1=summary["macro_f1"]["mean"])
    return summary


def table_markdown(summary: dict[str, Any]) -> str:
    lines = [f"# ISM (Human): {summary['task']}\n",
             "| annotator | accuracy (%) | macro-F1 (%) | answered (%) | answered-subset accuracy (%) |",
             "|---|---:|---:|---:|---:|"]
    for name, a in summary["annotators"].items():
        lines.append(f"| {name} | {a['whole_set']['accuracy']:.1f} | {a['whole_set']['macro_f1']:.1f} | "
                     f"{a['recognized_ratio']:.1f} | {a['recognized_subset']['accuracy']:.1f} |")
    lines.append(f"| mean | {summary['accuracy']['mean']:.1f} ± {summary['accuracy']['std']:.1f} | "
                 f"{summary['macro_f1']['mean']:.1f} ± {summary['macro_f1']['std']:.1f} | | |")
    if summary["kappa"]:
        lines.append("\nCohen's kappa: " + ", ".join(f"{k} = {v['kappa']:.3f} ({v['items']} items)"
                                                    for k, v in summary["kappa"].items()))
    return "\n".join(lines) + "\n"
