"""CV-Bench (Tong et al. 2024, Cambrian-1): 2-D (count, spatial relation; ADE20K and COCO images)
and 3-D (depth order, relative distance; Omni3D images) lettered questions.

Files: ``test.jsonl`` with its ``img/`` folder (``image`` a path relative to the file), or the
Parquet files ``test_2d`` / ``test_3d`` (or the whole ``test``) with embedded images, or a
``datasets`` folder; fields ``idx, type, task, image, question, choices, answer ("(B)"), source``.

Wording: ``question`` (the question, its lettered choices, "Answer with the option's letter.");
labels the letters. Official metrics (EvolvingLMMs-Lab/lmms-eval @75571cf
``lmms_eval/tasks/cv_bench/utils.py`` l. 67-79, ``cv_bench_default_aggregate_results``):
accuracy per source, type and task, and the combination ``cv_bench`` =
1/2 ((ADE20K + COCO)/2 + Omni3D). The combination is a weighted mean of the rows' correctness -
a row of source ``s`` weighs 1/4 (ADE20K, COCO) or 1/2 (Omni3D) divided by the number of items
of ``s`` - so each row carries ``cv_bench`` = its correctness × 100 × N × its weight and the
metric is their mean (with its interval). It needs all three sources (not reported otherwise); the
weights are those of the items read (a ``--items`` subset keeps the full copy's weights).
Official reader: lmms-eval's ``_extract_answer_letter`` (``lmms-first-letter``,
:mod:`spatialprobe.readers.lmms`: the reply's first letter, so "The answer is B" counts as ``T``);
every metric again under ``strict`` (``strict_accuracy``, ``strict_cv_bench``).
Resampled by image.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, given, recorded
from spatialprobe.benchmarks.copy_images import image_file
from spatialprobe.benchmarks.local_copy import image_folders, lettered_question, letters, option_letters, read_copy
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {}
SHARES = {"ADE20K": 0.25, "COCO": 0.25, "Omni3D": 0.5}
"""Each source's share of the official combination."""
OFFICIAL = (Official({"accuracy": "accuracy"}, ("source", "type", "task")),
            Official({"cv_bench": "mean"}, pred="cv_bench_value"))


def weights(sources: Sequence[str]) -> dict[str, float]:
    """100 × N × share / n_source for each source: the row value whose mean is the combination."""
    counts = Counter(sources)
    return {s: 100.0 * len(sources) * SHARES[s] / counts[s] for s in counts}


def matching(item: SourceItem, output: str | None, label: str | None) -> dict[str, Any]:
    """The row's share of the official combination: its weight where right, else 0."""
    return {"cv_bench_value": item.fields["weight"] if label == item.gold else 0.0}


@component("source", "cv-bench",
           "CV-Bench 2-D/3-D lettered questions: accuracy per source/type/task, official 1/2((ADE20K+COCO)/2+Omni3D)")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """CV-Bench's questions from the user's copy (``seed`` unused)."""
    found = given(settings)
    records = read_copy(found, "cv-bench needs --data: test.jsonl, a test_2d/test_3d Parquet file or a datasets folder")
    rows = records.rows[:found["limit"]]
    if found["subset"] not in (None, "2D", "3D"):
        raise UsageError(f"--subset {found['subset']}: CV-Bench's subsets are 2D and 3D")
    folders = image_folders(found["images"], records)
    items, seen = [], set()
    for n, row in enumerate(rows):
        if found["subset"] and row.get("type") != found["subset"]:
            continue
        key = str(records.require(n, "idx"))
        if key in seen:
            raise records.error(n, "idx", f"{key!r:.60} repeats an earlier question's idx")
        seen.add(key)
        choices = records.options(n, "choices")
        gold = records.gold_letter(n, "answer", len(choices), "choices", strip="()")
        source = str(records.require(n, "source"))
        if source not in SHARES:
            raise records.error(n, "source", f"{source!r:.60} is none of {', '.join(SHARES)}")
        image = image_file(records.require(n, "image"), folders=folders, what=records.place(n, "image"))
        name = row.get("filename") or (row["image"] if isinstance(row["image"], str) else image)
        items.append(SourceItem(key, lettered_question(records.require(n, "question"), choices),
                                choices, letters(len(choices)), gold, image, (),
                                {"image": str(name), "source": source, "type": str(row.get("type", "")),
                                 "task": str(row.get("task", ""))}))
    complete = set(SHARES) <= {i.fields["source"] for i in items}  # the combination needs all three
    share = weights([i.fields["source"] for i in items])
    items = [SourceItem(i.key, i.question, i.options, i.labels, i.gold, i.image, i.objects,
                        {**i.fields, "weight": share[i.fields["source"]]}) for i in items]
    labels = option_letters(items, found, "CV-Bench questions", "type")
    spec = Resampling(labels, ("image",), key=("instance_id",), pooled=True, unit="images")
    return Source("cv-bench", "cv-bench", f"cv-bench@{records.version}", labels, tuple(items), spec,
                  official=OFFICIAL if complete else OFFICIAL[:1], matching=matching, reader="lmms-first-letter",
                  settings=recorded("cv-bench", found, found["data"], records.version),
                  details={"total": len(rows), "what": "questions",
                           **({} if complete else {"cv_bench": "not computed: it needs ADE20K, COCO and Omni3D "
                                                               "questions (read test_2d and test_3d together)"})})


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in CV-Bench's layout (:mod:`spatialprobe.benchmarks.demo_copy`): ``test.jsonl``
    and its ``img/`` folder, twelve 2-D and 3-D questions of the three sources."""
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng, rows = random.Random(seed), []
    for k in range(12):
        scene, question, choices, gold = d.lettered(rng, 2 + k % 3)
        source = ("ADE20K", "COCO", "Omni3D")[k % 3]
        kind = "3D" if source == "Omni3D" else "2D"
        name = d.save(d.draw(scene), folder / "img" / kind / f"{source.lower()}_{k}.png")
        rows.append({"idx": k, "type": kind, "task": "Depth" if kind == "3D" else "Relation", "source": source,
                     "image": str(Path(name).relative_to(folder)), "question": question, "choices": choices,
                     "answer": f"({letters(len(choices))[gold]})"})
    return d.Demo(d.write_jsonl(folder / "test.jsonl", rows))
