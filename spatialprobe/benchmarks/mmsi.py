"""MMSI-Bench (Yang, Xu et al. 2025): lettered questions about two or more images of one scene
(camera, object and region relations, measurement, motion, multi-step reasoning), all the
images asked together.

Files: the Hugging Face copy ``RunsenXu/MMSI-Bench`` (Parquet / ``datasets`` / ``hf:NAME``:
``id, images`` - a list of embedded images -, ``question`` - its options written in it, "Options:
A: ..., B: ..." -, ``answer`` (a letter), ``question_type``) or a TSV of the same fields whose
``image`` is a JSON list of paths (under ``--images``) or base64 images. ``--subset`` keeps one
question type.

Wording: ``question`` (the question as written, its options read from it, "Answer with the
option's letter."); labels the letters; the option texts are the text after each ``X:`` up to the
next option (a question whose options cannot be read is refused naming its row).
``--wording official``: the authors' prompt (``MMSIBenchDataset.build_prompt``,
OpenRobotLab/MMSI-Bench @4e28bff ``vlmeval/dataset/mmsi_bench.py`` l. 100-129): the question as
written, then "Answer with the option's letter from the given choices directly. Enclose the
option's letter within ``." on its own line. Official metric: accuracy, per question type, under
the authors' reader (``mmsi``, :mod:`spatialprobe.readers.mmsi`: the letter within backticks or
braces, else the first lone A-D not followed by a word) and under ``strict``. Resampled by item.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, copy_source, given
from spatialprobe.benchmarks.copy_images import image_file
from spatialprobe.benchmarks.local_copy import Records, image_folders, letters, option_letters, read_copy
from spatialprobe.errors import UsageError
from spatialprobe.files import parse_json
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.readers.mmsi import POST_PROMPT
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {}
WORDINGS = {"official": "the authors' prompt: the question, then their instruction to enclose the letter in ``"}
OFFICIAL = (Official({"accuracy": "accuracy"}, ("question_type",)),)
OPTION = re.compile(r"(?:^|[\s,;(])([A-F])[:.)]\s*")


def options_in(question: str) -> tuple[str, ...]:
    """The options written after the question's last ``Options:`` (``A: x, B: y`` or one a
    line), in letter order from A; ``()`` where they are not A, B, ... in turn."""
    _, found, tail = question.rpartition("Options:")
    if not found:
        return ()
    marks = list(OPTION.finditer(tail))
    if [m.group(1) for m in marks] != list(letters(len(marks))) or len(marks) < 2:
        return ()
    ends = [m.start() for m in marks[1:]] + [len(tail)]
    return tuple(tail[m.end():end].strip().rstrip(",;").strip() for m, end in zip(marks, ends, strict=True))


def _images(records: Records, n: int, folders: list[Path]) -> list[str]:
    """Row ``n``'s images, in order: embedded, paths, or base64 (a JSON list in a TSV)."""
    row, where = records.rows[n], records.where[n][0]
    value: Any = row.get("images") if row.get("images") is not None else records.require(n, "image")
    if isinstance(value, str):
        value = parse_json(value, where, records.where[n][1]) if value.lstrip().startswith("[") else [value]
    shown = []
    for one in value if isinstance(value, list) else [value]:
        if isinstance(one, str) and not one.lower().endswith((".png", ".jpg", ".jpeg", ".webp", ".bmp")):
            try:
                one = base64.b64decode(one, validate=True)
            except ValueError:  # binascii.Error, or characters base64 never holds
                raise records.error(n, "image", "neither base64 nor an image path") from None
        shown.append(image_file(one, folders=folders, what=records.place(n, "images")))
    if not shown:
        raise records.error(n, "images", "no image")
    return shown


@component("source", "mmsi",
           "MMSI-Bench multi-image lettered questions (all images asked together): accuracy per question type")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """MMSI-Bench's questions from the user's copy (``seed`` unused)."""
    found = given(settings)
    if found["wording"] not in (None, *WORDINGS):
        raise UsageError(f"mmsi's wording is official or the toolkit's, not {found['wording']!r}")
    records = read_copy(found, "mmsi needs --data: RunsenXu/MMSI-Bench (Parquet, datasets folder, hf:NAME) or its TSV")
    folders = image_folders(found["images"], records)
    items = []
    for n, row in enumerate(records.rows):
        kind = str(row.get("question_type") or row.get("category") or "")
        if found["subset"] and kind != found["subset"]:
            continue
        question = str(records.require(n, "question"))
        options = options_in(question)
        if not options:
            raise records.error(n, "question", "its options (Options: A: ..., B: ...) cannot be read")
        gold = records.gold_letter(n, "answer", len(options))
        shown = _images(records, n, folders)
        key = str(row.get("id", row.get("index", n)))
        prompt = (f"{question}\n{POST_PROMPT}" if found["wording"] == "official"
                  else f"{question}\nAnswer with the option's letter.")
        items.append(SourceItem(key, prompt, options,
                                letters(len(options)), gold, shown[0], (),
                                {"question_type": kind, "item": hashlib.sha256(key.encode()).hexdigest()[:12]},
                                views=tuple(shown[1:])))
    items = items[:found["limit"]]
    labels = option_letters(items, found, "MMSI-Bench questions", "type")
    spec = Resampling(labels, ("item",), key=("instance_id",), pooled=True, unit="questions")
    return copy_source("mmsi", found, records, items, labels, spec, official=OFFICIAL, reader="mmsi")


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in MMSI-Bench's Hugging Face layout (:mod:`spatialprobe.benchmarks.demo_copy`):
    Parquet with two embedded images per question and its options written in the question."""
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng, rows = random.Random(seed), []
    for k in range(10):
        scene, question, choices, gold = d.lettered(rng, 4)
        other = d.Pair(scene.b, scene.a, d.OPPOSITE[scene.relation])
        written = ", ".join(f"{letter}: {text}" for letter, text in zip(letters(4), choices, strict=True))
        images = [d.embedded(d.draw(scene), f"{k}a.png"), d.embedded(d.draw(other), f"{k}b.png")]
        rows.append({"id": k, "images": images,
                     "question": f"{question} Options: {written}", "answer": letters(4)[gold],
                     "question_type": ("Positional Relationship (Cam.-Obj.)", "Motion (Obj.)")[k % 2]})
    return d.Demo(d.write_parquet(folder / "MMSI_Bench.parquet", rows))
