"""EmbSpatial-Bench (Du et al. 2024): lettered questions on six spatial relations in embodied
scenes from three sources (AI2-THOR, Matterport3D, ScanNet).

Files: the authors' JSON (one list of records, ``question_id, data_source, image`` - base64 -,
``question, answer_options, answer`` - the right option's index -, ``relation, objects``) or its
Hugging Face copy (Parquet / ``datasets`` / ``hf:NAME``, images embedded); ``--subset`` keeps
one source.

Wording: ``question`` (the question, its lettered options, "Answer with the option's letter.");
labels the letters. Official metrics (EvolvingLMMs-Lab/lmms-eval
``lmms_eval/tasks/embspatial/utils.py`` ``embspatial_aggregate_results``): accuracy, with its
per-relation breakdown (which lmms-eval logs) and per source, under lmms-eval's reader
(``lmms-first-letter``: the reply's first letter, "The answer is B" reads ``T``) and under
``strict``. Resampled by image. An item states
its fact where its right option is a sentence relating two objects ("The lamp is above the bed" ->
``(lamp, above, bed)``, :mod:`spatialprobe.benchmarks.sentence_facts`); an option naming one object (which is
closest, which is left of X) states none.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, copy_source, given
from spatialprobe.benchmarks.copy_images import image_file
from spatialprobe.benchmarks.local_copy import Records, lettered_question, letters, option_letters, read_copy
from spatialprobe.benchmarks.sentence_facts import stated_fact
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {}
OFFICIAL = (Official({"accuracy": "accuracy"}, ("data_source", "relation")),)


def _image(records: Records, n: int, folders: list[Path]) -> str:
    """Row ``n``'s image: base64 text (the authors' JSON), embedded bytes or a path (an image file name)."""
    value = records.require(n, "image")
    if isinstance(value, str) and not value.lower().endswith((".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif")):
        try:
            return image_file(base64.b64decode(value, validate=True), what=records.place(n, "image"))
        except ValueError:  # binascii.Error, or characters base64 never holds
            raise records.error(n, "image", "neither base64 nor a path") from None
    return image_file(value, folders=folders, what=records.place(n, "image"))


@component("source", "embspatial",
           "EmbSpatial-Bench lettered questions: accuracy per source (AI2-THOR, MP3D, ScanNet) and relation")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """EmbSpatial-Bench's questions from the user's copy (``seed`` unused)."""
    found = given(settings)
    records = read_copy(found, "embspatial needs --data: embspatial_bench.json or its Hugging Face copy")
    folders = [Path(found["images"])] if found["images"] else [records.path.parent]
    items = []
    for n, row in enumerate(records.rows):
        if found["subset"] and row.get("data_source") != found["subset"]:
            continue
        options = records.options(n, "answer_options")
        answer = records.require(n, "answer")
        if not (isinstance(answer, int) and 0 <= answer < len(options)):
            raise records.error(n, "answer", f"{answer!r:.60} is no index of the {len(options)} options")
        image = _image(records, n, folders)
        key = str(row.get("question_id", n))
        question = lettered_question(records.require(n, "question"), options)
        items.append(SourceItem(key, question, options, letters(len(options)), letters(len(options))[answer], image,
                                tuple(str(o) for o in (records.listed(n, "objects") if row.get("objects") else ())),
                                {"data_source": str(row.get("data_source", "")),
                                 "relation": str(row.get("relation", "")),
                                 "image": hashlib.sha256(Path(image).name.encode()).hexdigest()[:12]},
                                fact=stated_fact(options[answer])))
    items = items[:found["limit"]]
    labels = option_letters(items, found, "EmbSpatial questions", "source")
    spec = Resampling(labels, ("image",), key=("instance_id",), pooled=True, unit="images")
    return copy_source("embspatial", found, records, items, labels, spec, official=OFFICIAL, reader="lmms-first-letter")


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in EmbSpatial-Bench's layout (:mod:`spatialprobe.benchmarks.demo_copy`): the
    authors' JSON list, images as base64, options that are sentences relating two objects."""
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng, rows = random.Random(seed), []
    for k in range(12):
        scene, _, relations, gold = d.lettered(rng, 4)
        options = [d.Pair(scene.a, scene.b, r).sentence.rstrip(".") for r in relations]
        rows.append({"question_id": f"demo_{k}", "data_source": ("ai2thor", "mp3d", "scannet")[k % 3],
                     "image": d.b64(d.draw(scene)), "question": "Which sentence describes the image?",
                     "answer_options": options, "answer": gold, "relation": scene.relation,
                     "objects": [scene.a, scene.b]})
    return d.Demo(d.write_json(folder / "embspatial_bench.json", rows))
