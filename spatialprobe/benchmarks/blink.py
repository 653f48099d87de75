"""BLINK (Fu et al. 2024), its spatial subtasks: Spatial Relation, Relative Depth and Multi-view
Reasoning (``--subset`` one of them, any other BLINK subtask by its name, or ``all``: the 14),
lettered questions about one to four images asked together.

Files: the Hugging Face copy ``BLINK-Benchmark/BLINK`` - one folder of Parquet files per subtask
(``Spatial_Relation/val-*.parquet``, ...) with ``idx, question, sub_task, image_1..image_4
(embedded), choices, answer ("(A)")`` - or a ``datasets`` folder, or any one file of
:func:`spatialprobe.benchmarks.local_copy.read_records`; ``--split`` val (default; the test answers are
hidden). Where the copy holds one folder per subtask, only the chosen subtasks' folders are read.

Wording: ``question`` (the question, the lettered choices, "Answer with the option's letter."),
its images shown together (``SourceItem.views``: only a multimodal LLM that takes several images
answers it); labels the letters. Official metrics (zeyofu/BLINK_Benchmark @2d6a779
``eval/evaluate.py`` ``eval_prediction``): accuracy per subtask; ``blink_spatial`` = the mean of
the three spatial subtasks' accuracies (each subtask weighs the same, whatever its size), where
all three were asked; and ``blink`` = the mean over all 14 subtasks, the authors' ``Total``, only
where all 14 were asked (``--subset all``). Each mean is a weighted mean of the rows' correctness,
a row carrying 100 × N / (T × n_subtask) where right (``blink_value``, ``blink_spatial_value``).
Replies are read by the authors' ``analyze_answer`` (``blink``, :mod:`spatialprobe.readers.blink`:
``X``, ``(X)`` or one ``(X)`` word; their GPT-3.5 fallback is not run, so anything else counts
wrong) and by ``strict``. Resampled by item.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, given, recorded
from spatialprobe.benchmarks.copy_images import image_file
from spatialprobe.benchmarks.local_copy import Records, lettered_question, letters, read_records
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {}
SPATIAL = ("Spatial_Relation", "Relative_Depth", "Multi-view_Reasoning")
"""The spatial subtasks asked by default."""
ALL = ("Visual_Similarity", "Counting", "Relative_Depth", "Jigsaw", "Art_Style", "Functional_Correspondence",
       "Semantic_Correspondence", "Spatial_Relation", "Object_Localization", "Visual_Correspondence",
       "Multi-view_Reasoning", "Relative_Reflectance", "Forensic_Detection", "IQ_Test")
"""The 14 subtasks the authors' ``Total`` averages (``eval/evaluate.py`` l. 81-83)."""
ACCURACY = Official({"accuracy": "accuracy"}, ("sub_task",))
SPATIAL_MEAN = Official({"blink_spatial": "mean"}, pred="blink_spatial_value", only="spatial")
TOTAL = Official({"blink": "mean"}, pred="blink_value")


def task_of(idx: str, split: str) -> str:
    """The subtask of an ``idx`` as ``eval_prediction`` reads it (``val_Spatial_Relation_1`` ->
    ``Spatial_Relation``)."""
    return "_".join(idx.split(split)[1][1:].split("_")[:-1])


def matching(item: SourceItem, output: str | None, label: str | None) -> dict[str, Any]:
    """The row's share of each mean over subtasks: its weight where right, else 0."""
    right = label == item.gold
    return {"blink_value": item.fields["weight"] if right else 0.0,
            "blink_spatial_value": item.fields["spatial_weight"] if right else 0.0}


def _read(data: str, tasks: tuple[str, ...], split: str) -> list[Records]:
    """The chosen subtasks' folders where the copy has one per subtask, else the whole copy."""
    root = Path(data)
    if root.is_dir() and all((root / task).is_dir() for task in tasks):
        return [read_records(root / task, split=split) for task in tasks]
    return [read_records(data, split=split)]


def _item(records: Records, n: int, split: str) -> SourceItem:
    row = records.rows[n]
    idx = str(records.require(n, "idx"))
    choices = records.options(n, "choices")
    gold = records.gold_letter(n, "answer", len(choices), "choices", strip="()")
    shown = [image_file(row[f"image_{k}"], what=records.place(n, f"image_{k}")) for k in range(1, 5)
             if row.get(f"image_{k}")]
    if not shown:
        raise records.error(n, "image_1", "no image")
    task = task_of(idx, split) if split in idx else str(row.get("sub_task", "")).replace(" ", "_")
    question = lettered_question(records.require(n, "question"), choices)
    return SourceItem(idx, question, choices, letters(len(choices)), gold, shown[0], (),
                      {"sub_task": task, "item": hashlib.sha256(idx.encode()).hexdigest()[:12]},
                      views=tuple(shown[1:]))


@component("source", "blink",
           "BLINK spatial subtasks (several images asked together): accuracy per subtask, mean over subtasks")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """BLINK's chosen subtasks from the user's copy (``seed`` unused)."""
    found = given(settings, needs="blink needs --data: the BLINK-Benchmark/BLINK folder (Parquet per subtask) or "
                                  "hf:NAME")
    split = found["split"] or "val"
    tasks = ALL if found["subset"] == "all" else (found["subset"],) if found["subset"] else SPATIAL
    parts = _read(found["data"], tasks, split)
    items = [_item(records, n, split) for records in parts for n in range(len(records.rows))]
    items = [i for i in items if i.fields["sub_task"] in tasks][:found["limit"]]
    if not items:
        raise UsageError(f"{found['data']}: no {split} questions of {', '.join(tasks)}")
    counts = Counter(i.fields["sub_task"] for i in items)
    weight = {t: 100.0 * len(items) / (len(counts) * c) for t, c in counts.items()}
    spatial = sum(counts[t] for t in SPATIAL)
    spatial_weight = {t: 100.0 * spatial / (len(SPATIAL) * counts[t]) for t in SPATIAL if counts[t]}
    items = [SourceItem(i.key, i.question, i.options, i.labels, i.gold, i.image, i.objects,
                        {**i.fields, "weight": weight[i.fields["sub_task"]],
                         "spatial": i.fields["sub_task"] in SPATIAL,
                         "spatial_weight": spatial_weight.get(i.fields["sub_task"], 0.0)}, views=i.views)
             for i in items]
    official = (ACCURACY, *((SPATIAL_MEAN,) if set(SPATIAL) <= set(counts) else ()),
                *((TOTAL,) if set(ALL) <= set(counts) else ()))
    version = parts[0].version if len(parts) == 1 else \
        hashlib.sha256("\n".join(p.version for p in parts).encode()).hexdigest()[:12]
    labels = letters(max(len(i.options) for i in items))
    spec = Resampling(labels, ("item",), key=("instance_id",), pooled=True, unit="questions")
    return Source("blink", "blink", f"blink-{split}@{version}", labels, tuple(items), spec,
                  official=official, matching=matching, reader="blink",
                  settings=recorded("blink", {**found, "split": split}, found["data"], version),
                  details={"total": len(items), "what": "questions", "sub_tasks": dict(counts)})


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in BLINK's Hugging Face layout (:mod:`spatialprobe.benchmarks.demo_copy`): a
    folder of Parquet per spatial subtask, images embedded, Multi-view questions with two images."""
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng = random.Random(seed)
    for task in SPATIAL:
        rows = []
        for k in range(4):
            scene, question, choices, gold = d.lettered(rng, 2)
            images = [d.embedded(d.draw(scene), f"{task}_{k}.png")]
            if task == "Multi-view_Reasoning":
                images.append(d.embedded(d.draw(d.Pair(scene.a, scene.b, d.OPPOSITE[scene.relation])), f"{k}b.png"))
            rows.append({"idx": f"val_{task}_{k + 1}", "question": question, "sub_task": task.replace("_", " "),
                         **{f"image_{j + 1}": images[j] if j < len(images) else None for j in range(4)},
                         "choices": choices, "answer": f"({letters(len(choices))[gold]})"})
        d.write_parquet(folder / task / "val-00000-of-00001.parquet", rows)
    return d.Demo(folder, images=None)
