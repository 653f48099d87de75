"""SITE (Wang et al. 2025): lettered spatial questions about one or several images, drawn from
many datasets, with a chance-adjusted accuracy.

Files: the authors' / lmms-eval copy (HF ``franky-veteran/SITE-Bench``): records ``id``,
``question``, ``options`` (a list), ``answer`` (a letter), ``category``, ``dataset``, ``visual``
(a list of image paths under ``--images``, or embedded images); any layout of
:func:`spatialprobe.benchmarks.local_copy.read_records`. ``--subset`` keeps one category.

Wording: ``question`` (the question, its lettered options, "Answer with the option's letter."),
every image shown together before the text (an ``<image>`` placed inside a question is not
interleaved: the placeholders are removed and the images come first); labels the letters.
Official metrics (SITE's ``eval_scripts/sitebench/utils.py`` as lmms-eval carries it,
EvolvingLMMs-Lab/lmms-eval ``lmms_eval/tasks/sitebench/utils.py`` and ``site_image.yaml``):
accuracy (per category and per source dataset) and the chance-adjusted accuracy
Σ(right − 1/k) / Σ(1 − 1/k) over the items (k options each), a weighted mean of the rows'
``site_value``, each under SITE's reader (``site``, :mod:`spatialprobe.readers.site`: a lone
capital anywhere, the last of several, a seeded random letter where none) and under ``strict``.
Resampled by item.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, copy_source, given
from spatialprobe.benchmarks.local_copy import image_folders, lettered_question, letters, option_letters, read_copy
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {}
OFFICIAL = (Official({"accuracy": "accuracy"}, ("category", "dataset")),
            Official({"chance_adjusted_accuracy": "mean"}, pred="site_value"))


def matching(item: SourceItem, output: str | None, label: str | None) -> dict[str, Any]:
    """The row's term of the chance-adjusted accuracy, scaled so that their mean is it."""
    k = len(item.options)
    return {"site_value": item.fields["scale"] * ((label == item.gold) - 1.0 / k)}


@component("source", "site",
           "SITE lettered questions (one or several images): accuracy per category/dataset, chance-adjusted accuracy")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """SITE's questions from the user's copy (``seed`` unused)."""
    found = given(settings)
    records = read_copy(found, "site needs --data: SITE's records (JSON/JSONL/Parquet/datasets folder or hf:NAME)")
    folders = image_folders(found["images"], records)
    items = []
    for n, row in enumerate(records.rows):
        if found["subset"] and row.get("category") != found["subset"]:
            continue
        options = records.options(n, "options")
        gold = str(records.require(n, "answer")).strip().strip("()")
        if gold not in letters(len(options)):
            raise records.error(n, "answer", f"{gold!r:.60} is none of the {len(options)} options' letters")
        shown = records.images(n, "visual", folders)
        key = str(row.get("id", n))
        question = lettered_question(str(records.require(n, "question")).replace("<image>", "").strip(), options)
        items.append(SourceItem(key, question, options, letters(len(options)), gold, shown[0], (),
                                {"category": str(row.get("category", "")), "dataset": str(row.get("dataset", "")),
                                 "item": hashlib.sha256(key.encode()).hexdigest()[:12]}, views=tuple(shown[1:])))
    items = items[:found["limit"]]
    labels = option_letters(items, found, "SITE questions", "category")
    scale = 100.0 * len(items) / sum(1 - 1 / len(i.options) for i in items)
    items = [SourceItem(i.key, i.question, i.options, i.labels, i.gold, i.image, i.objects,
                        {**i.fields, "scale": scale}, views=i.views) for i in items]
    spec = Resampling(labels, ("item",), key=("instance_id",), pooled=True, unit="questions")
    return copy_source("site", found, records, items, labels, spec, official=OFFICIAL, matching=matching, reader="site")


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in SITE's layout (:mod:`spatialprobe.benchmarks.demo_copy`): JSON lines whose
    ``visual`` lists image files, one or two images per question."""
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng, rows = random.Random(seed), []
    for k in range(10):
        scene, question, choices, gold = d.lettered(rng, 2 + k % 3)
        visual = [d.save(d.draw(scene), folder / "images" / f"site_{k}.png")]
        if k % 2:
            visual.append(d.save(d.draw(scene), folder / "images" / f"site_{k}_b.png"))
        rows.append({"id": f"demo-{k}", "question": f"<image> {question}", "options": choices,
                     "answer": letters(len(choices))[gold], "category": ("spatial relationship reasoning",
                     "counting & existence")[k % 2], "dataset": "demo",
                     "visual": [str(Path(v).relative_to(folder)) for v in visual]})
    return d.Demo(d.write_jsonl(folder / "site.jsonl", rows))
