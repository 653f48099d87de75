"""SpatialScore (Wu et al.), the published **version_0**: 11 older spatial benchmarks merged into
one JSON (``SpatialScore.json``; ``SpatialScore-Hard.json``: 1,400 of them), multiple-choice,
yes/no and numeric questions about one image, several images or 8 video frames.

The CVPR 2026 version ("v2") is **not** published (haoningwu3639/SpatialScore @1995c4f holds only
``version_0``); this module reads version_0's layout and scores it with version_0's scripts.

Files: ``SpatialScore.json`` or ``SpatialScore-Hard.json`` (HF ``haoningwu/SpatialScore``,
``SpatialScore.zip`` unpacked into ``dataset/``): one list of records ``question_type``
(``multi-choice``, ``judgment``, ``open-ended``), ``question`` (options written in it),
``answer`` (``B``, ``(b)``, ``Yes``, ``3``, ``1.80 meters``), ``img_paths`` (``./dataset/...``,
relative to the folder that holds ``dataset/``), ``category``, ``subcategory``, ``source`` (the
source dataset) with ``index_origin`` and ``category_origin`` (its id and label there), all kept in
each row. ``--data`` the JSON or the folder holding ``dataset/SpatialScore.json``; ``--images``
the folder ``./dataset/...`` is relative to (default: the one above ``dataset/``); ``--subset``
keeps one source dataset (their ``--dataset_name``).

Wording: the scripts' instruction for the item's source (``version_0/test_qwen.py``
``process_model_input`` l. 29-55, sent there as an assistant turn before the question, here at
the head of the user's turn) and the question as written, its images shown together. Multiple
choice: labels the letters (the option texts read from the question where they can be, else the
letters themselves); yes/no: ``Yes``/``No``; open-ended: no options (a number is read).
Official metric, the reply read by the registered reader ``spatialscore``
(:mod:`spatialprobe.readers.spatialscore`: the scripts' extractor for the item's question type, on
the reply stripped as their ``generate_response`` strips it): ``accuracy`` = the mean of their
per-item score of the reading (0/1, MRA for VSI-Bench_8's numbers), per source, category,
subcategory and question type. Beside it, the numeric items' ``mra`` and ``within_tolerance`` of
the number read (in meters where the gold has a unit; an item whose gold is no number or 0 has
none). Each again under ``strict`` (``strict_accuracy``, ``strict_mra``, ...: the reply exactly a
letter, ``Yes``/``No``, or a number - in the gold's unit where it has one).
Resampled by the image set (VSI-Bench_8: its scene's frames).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, given, recorded
from spatialprobe.benchmarks.local_copy import Records, image_file, letters, read_records
from spatialprobe.benchmarks.numeric_answers import NUMERIC_FIELDS, NUMERIC_OFFICIAL, number_of, numeric_fields
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.readers.numeric import LENGTH_METERS, read_number
from spatialprobe.readers.spatialscore import (
    CENTIMETRES,
    extract_option,
    extract_yes_no,
    is_numeric_with_unit,
    number_and_unit,
    score_of,
)
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {}
GROUPS = ("source", "category", "subcategory", "question_type")
OFFICIAL = (Official({"accuracy": "share"}, GROUPS, pred="official_score"), *NUMERIC_OFFICIAL)
_PARENS = "**Please select the most appropriate answer from options (A), (B), (C), (D), (E), or (F).**\n" \
          "**Respond ONLY with the letter and its parentheses, for example: (A)**\n\nQuestion: "
_CONCISE = "**Answer concisely with a single word, number, or option (e.g., yes, no, 5, 2.2, A).**\n\nQuestion: "
_MEASURE = ("You will be provided with a question and a 2D image. The question involves measuring the precise "
            "distance in 3D space through a 2D image. You will answer the question by providing a numeric answer "
            "consisting of a scalar and a distance unit in the format of **\\scalar{scalar} \\distance_unit{distance "
            "unit}** at the end of your response.\nLet's think step by step and start by finding good reference "
            "objects or object parts in the image.\n\nQuestion:")
INSTRUCTIONS = {**dict.fromkeys(("cvbench", "MMIU", "BLINK", "3DSRBench", "MMVP"), _PARENS),
                **dict.fromkeys(("spatialbench", "VSR-ZeroShot", "VSR-Random", "SpatialSense", "VSI-Bench_8",
                                 "RealWorldQA"), _CONCISE),
                **dict.fromkeys(("QSpatialBench-Plus", "QSpatialBench-ScanNet"), _MEASURE)}
"""``process_model_input`` l. 31-55, by source (VGBench: the measuring one for open-ended items, else concise)."""
_MARK = re.compile(r"\(([A-Fa-f])\)\s*|(?:^|(?<=[\s,]))([A-F])[.:]\s")
KINDS = ("multi-choice", "judgment", "open-ended")


def instruction(source: str, kind: str) -> str:
    if source == "VGBench":
        return _MEASURE if kind == "open-ended" else _CONCISE
    return INSTRUCTIONS[source]


def choices_in(question: str) -> tuple[str, ...]:
    """The option texts written in a question from its last ``(A)``/``A.``/``A:`` mark on, in turn; ``()`` if none."""
    marks = list(_MARK.finditer(question))
    letter_of = [(m.group(1) or m.group(2)).upper() for m in marks]
    starts = [n for n, letter in enumerate(letter_of) if letter == "A"]
    if not starts:
        return ()
    run = [starts[-1]]
    for n in range(starts[-1] + 1, len(marks)):
        if letter_of[n] == letters(len(run) + 1)[-1]:
            run.append(n)
    ends = [marks[n].start() for n in run[1:]] + [len(question)]
    texts = tuple(question[marks[n].end():end].strip().rstrip(",").strip() for n, end in zip(run, ends, strict=True))
    return texts if len(texts) >= 2 else ()


def _options(records: Records, n: int, kind: str, answer: str) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """(option texts, labels, gold label) of row ``n`` by its question type."""
    if kind == "judgment":
        gold = extract_yes_no(answer)
        if gold not in ("Yes", "No"):
            raise records.error(n, "answer", f"{answer!r:.60} is neither yes nor no")
        return ("Yes", "No"), ("Yes", "No"), gold
    if kind == "open-ended":
        number = read_number(answer, LENGTH_METERS if is_numeric_with_unit(answer) else None).value
        return (), (), answer if number is None else repr(number)
    gold = extract_option(answer)
    texts = choices_in(str(records.rows[n]["question"]))
    if gold not in letters(6):
        raise records.error(n, "answer", f"{answer!r:.60} is no option letter A-F")
    if letters(6).index(gold) >= len(texts):  # the options could not be read: the letters themselves
        texts = letters(max(letters(6).index(gold) + 1, 2))
    return texts, letters(len(texts)), gold


def _item(records: Records, n: int, folders: list[Path]) -> SourceItem:
    row = records.rows[n]
    kind = str(records.require(n, "question_type")).lower()
    if kind not in KINDS:
        raise records.error(n, "question_type", f"{kind!r:.60} is none of {', '.join(KINDS)}")
    source, answer = str(records.require(n, "source")), str(records.require(n, "answer"))
    if source not in INSTRUCTIONS and source != "VGBench":
        raise records.error(n, "source", f"{source!r:.60} is none of the scripts' sources")
    options, labels, gold = _options(records, n, kind, answer)
    paths = [str(p) for p in records.listed(n, "img_paths")]
    shown = [image_file(p, folders=folders, what=records.place(n, "img_paths")) for p in paths]
    unit = str(Path(paths[0]).parent) if source == "VSI-Bench_8" else "|".join(paths)
    fields = {k: str(row.get(k) if row.get(k) is not None else "") for k in
              ("category", "subcategory", "source", "index_origin", "category_origin", "input_modality")}
    return SourceItem(str(row.get("id", n)), instruction(source, kind) + str(records.require(n, "question")),
                      options, labels, gold, shown[0], (),
                      {**fields, "question_type": kind, "answer": answer,
                       "unit": hashlib.sha256(unit.encode()).hexdigest()[:12]}, views=tuple(shown[1:]))


def matching(item: SourceItem, output: str | None, label: str | None) -> dict[str, Any]:
    """The scripts' score of a reading (:func:`~spatialprobe.readers.spatialscore.score_of`), and
    the number it is where the gold is a number other than 0 (in meters)."""
    score = score_of(item.fields, label)
    if item.options or not number_of(item.gold):  # RealWorldQA's words, a gold of 0: no MRA
        return {"official_score": score, **dict.fromkeys(NUMERIC_FIELDS)}
    return {"official_score": score, **numeric_fields(item, meters(item, label))}


def meters(item: SourceItem, label: str | None) -> float | None:
    """The number a numeric item's reading is, in meters where its gold has a unit (converted as
    the scripts convert it to centimetres)."""
    answer = str(item.fields["answer"])
    if label is None or not is_numeric_with_unit(answer):
        return number_of(label)
    value, unit = number_and_unit(label, answer)
    return None if value is None else value * CENTIMETRES.get(unit, 1) / 100


def _located(data: str, images: str | None) -> tuple[str, list[Path]]:
    root = Path(data)
    for candidate in (root / "dataset" / "SpatialScore.json", root / "SpatialScore.json"):
        if root.is_dir() and candidate.is_file():
            data = str(candidate)
            break
    file = Path(data)
    if images:
        return data, [Path(images)]
    return data, [file.parent.parent, file.parent] if file.parent.name == "dataset" else [file.parent]


@component("source", "spatialscore",
           "SpatialScore version_0: multiple choice, yes/no and numeric items of 11 sources, scored by its scripts")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """SpatialScore version_0's questions from the user's copy (``seed`` unused)."""
    found = given(settings)
    if found["data"] is None:
        raise UsageError("spatialscore needs --data: SpatialScore.json or SpatialScore-Hard.json (version_0)")
    data, folders = _located(found["data"], found["images"])
    records = read_records(data)
    items = [_item(records, n, folders) for n, row in enumerate(records.rows)
             if found["subset"] in (None, row.get("source"))][:found["limit"]]
    if not items:
        raise UsageError(f"{found['data']}: no SpatialScore questions" +
                         (f" of source {found['subset']!r}" if found["subset"] else ""))
    labels = tuple(dict.fromkeys(label for item in items for label in item.labels))
    spec = Resampling(labels, ("unit",), key=("instance_id",), pooled=True, unit="image sets")
    return Source("spatialscore", "spatialscore", f"spatialscore@{records.version}", labels, tuple(items), spec,
                  official=OFFICIAL, matching=matching, reader="spatialscore",
                  settings=recorded("spatialscore", found, found["data"], records.version),
                  details={"total": len(records.rows), "what": "questions", "version": "version_0 (v2 is unpublished)"})


def write_copy(folder: Path, seed: int = 0, n: int = 48) -> tuple[Path, list[dict[str, Any]]]:
    """SpatialScore version_0: ``dataset/SpatialScore.json`` and its images under ``dataset/<source>/``."""
    from spatialprobe.benchmarks import demo_copy as d

    rng = random.Random(seed)
    shapes = [("multi-choice", "cvbench"), ("multi-choice", "3DSRBench"), ("multi-choice", "VSI-Bench_8"),
              ("judgment", "SpatialSense"), ("open-ended", "VGBench"), ("open-ended", "VSI-Bench_8"),
              ("open-ended", "RealWorldQA"), ("multi-choice", "MMIU")]
    records = []
    for k in range(n):
        kind, source = shapes[k % len(shapes)]
        count = 8 if source == "VSI-Bench_8" else 1 + (source == "MMIU")
        base = f"./dataset/VSI-Bench/8_frames/scannet/scene{k % 3}" if source == "VSI-Bench_8" else \
            f"./dataset/{source}/{k}"
        paths = [f"{base}/frame_{j:02d}.jpg" for j in range(count)]
        for path in paths:
            if not (folder / path).is_file():
                d.solid(folder / path, d.colour(rng))
        question, answer = _copy_question(rng, kind, source, k)
        records.append({"index": 1000 + k, "category": ["Depth and Distance", "Counting", "Others"][k % 3],
                        "subcategory": ["Absolute", "Relative"][k % 2], "question_type": kind,
                        "input_modality": "video" if count == 8 else "single-image", "question": question,
                        "answer": answer, "img_paths": paths, "source": source, "index_origin": k,
                        "category_origin": f"{source.lower()}_{kind}"})
    target = folder / "dataset" / "SpatialScore.json"
    target.write_text(json.dumps(records, indent=1), encoding="utf-8")
    return target, records


def _copy_question(rng: random.Random, kind: str, source: str, k: int) -> tuple[str, str]:
    if kind == "judgment":
        return f"Is this statement true based on the image {k}: 'The cup is left of the plate.'? Answer with Yes " \
               "or No.", rng.choice(["Yes", "No"])
    if kind == "open-ended":
        if source == "VGBench":
            return f"How far is the chair from the door {k}?", f"{rng.uniform(0.2, 4):.2f} meters"
        if source == "RealWorldQA":
            return f"Is there a stop sign {k}?\nPlease answer directly with a single word or number.", \
                rng.choice(["Yes", "No", "3"])
        return f"How many chairs are in this room {k}?", str(rng.randint(1, 9))
    from spatialprobe.benchmarks import demo_copy as d

    options, gold = d.directions(rng, 4)
    if source in ("cvbench", "3DSRBench"):
        written = "\n".join(f"({'ABCD'[j]}) {o}" for j, o in enumerate(options))
        return f"Which is closer {k}? Select from the following choices.\n{written}", \
            f"({'ABCD'[gold]})" if source == "cvbench" else "ABCD"[gold]
    if source == "MMIU":
        written = "\n".join(f"{'ABCD'[j]}: {o}" for j, o in enumerate(options))
        return f"Which point corresponds {k}?\n{written}", "ABCD"[gold]
    written = ", ".join(f"{'ABCD'[j]}. {o}" for j, o in enumerate(options))
    return f"Where is the sofa {k}? Options: {written}", "ABCD"[gold]


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in its real layout (:func:`write_copy`, 8 items; images drawn with Pillow),
    asked of several images a question: the tiny SmolVLM (:mod:`spatialprobe.benchmarks.demo_copy`)."""
    from spatialprobe.benchmarks import demo_copy as d

    data, _ = write_copy(folder, seed, n=8)
    return d.Demo(data, model="smolvlm")
