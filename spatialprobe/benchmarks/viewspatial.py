"""ViewSpatial-Bench (Li et al. 2025): direction and orientation questions from the camera's and
from a person's perspective, five question types, 5,712 lettered questions on ScanNet frames and
COCO images.

Files: the authors' checkout (ZJU-REAL/ViewSpatial-Bench): ``eval/ViewSpatial-Bench.json``, one
list of records ``question_type, image_path`` (a list of 1-32 paths that start with
``ViewSpatial-Bench/``, relative to the checkout), ``question``, ``answer`` (``"C. left"``) and
``choices`` (``"A. front\\nB. back"``); the images from the Hugging Face copy unpacked under the
checkout (``ViewSpatial-Bench/scannetv2_val/<scene>/original_images/``, ``ViewSpatial-Bench/val2017/``).
``--data`` the checkout or the JSON file; ``--images`` the checkout (default: the folder above
``eval/``, or the JSON's folder). A Parquet copy with the images embedded in ``images`` (lmms-eval's
re-host) is read too. ``--subset`` keeps one question type or one perspective (``Camera
perspective``, ``Person perspective``).

Wording: the authors' (``evaluate.py`` l. 336): ``question + choices + "\\nReply only to the
corresponding option.\\nAnswer:"``, every image of a record shown together; labels the letters.
Official metric: accuracy, per question type and perspective, the reply read as the authors' scorer
reads it (the registered reader ``viewspatial``, :mod:`spatialprobe.readers.viewspatial`: the last
line, the first whole letter A-D in any case - the article "a" is option A), and under ``strict``
beside it (``strict_accuracy``). Resampled by the ScanNet scene (questions
of one scene share its frames) or the COCO image.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, given, recorded
from spatialprobe.benchmarks.local_copy import Records, image_file, letters, option_letters, read_records
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.readers.viewspatial import PROMPT_FORMAT, extract_option
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {}
FILE = "ViewSpatial-Bench.json"
OFFICIAL = (Official({"accuracy": "accuracy"}, ("question_type", "perspective")),)


def _located(data: str) -> tuple[str, list[Path]]:
    """The file to read and the folders its image paths are relative to (the checkout first)."""
    root = Path(data)
    for candidate in (root / "eval" / FILE, root / FILE):
        if root.is_dir() and candidate.is_file():
            return str(candidate), [root, candidate.parent]
    if root.suffix == ".json":
        return data, [root.parent.parent, root.parent] if root.parent.name == "eval" else [root.parent]
    return data, [root if root.is_dir() else root.parent]


def choices_of(records: Records, n: int) -> tuple[str, ...]:
    """The option texts of row ``n``'s ``choices`` (``"A. front\\nB. back"``, lettered from A in turn)."""
    written = str(records.require(n, "choices")).split("\n")
    marks = [f"{letter}. " for letter in letters(len(written))]
    if len(written) < 2 or any(not line.startswith(mark) for mark, line in zip(marks, written, strict=True)):
        raise records.error(n, "choices", "expected lines 'A. text', 'B. text', ... in turn")
    return tuple(line[3:] for line in written)


def unit_of(path: str) -> str:
    """The cluster of a record by its first image: the ScanNet scene, else the image itself."""
    parts = path.split("/")
    return f"scannet/{parts[2]}" if len(parts) > 2 and parts[1].startswith("scannet") else path


def _item(records: Records, n: int, folders: list[Path]) -> SourceItem:
    row = records.rows[n]
    options = choices_of(records, n)
    gold = extract_option(str(records.require(n, "answer")))
    if gold not in letters(len(options)):
        raise records.error(n, "answer", f"{str(row['answer'])!r:.60} names none of the {len(options)} choices")
    field = "image_path" if row.get("image_path") is not None else "images"
    paths = records.listed(n, field) if field == "image_path" else list(records.require(n, field))
    shown = [image_file(p, folders=folders, what=records.place(n, field)) for p in paths]
    first = paths[0] if isinstance(paths[0], str) else Path(shown[0]).name
    kind = str(records.require(n, "question_type"))
    question = str(records.require(n, "question")) + str(row["choices"]) + PROMPT_FORMAT
    return SourceItem(str(n), question, options, letters(len(options)), gold, shown[0], (),
                      {"question_type": kind, "perspective": kind.split(" - ")[0],
                       "unit": hashlib.sha256(unit_of(first).encode()).hexdigest()[:12], "first_image": first},
                      views=tuple(shown[1:]))


@component("source", "viewspatial",
           "ViewSpatial-Bench camera/person-perspective questions: accuracy per type, the authors' last-line reader")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """ViewSpatial-Bench's questions from the user's copy (``seed`` unused)."""
    found = given(settings)
    if found["data"] is None:
        raise UsageError("viewspatial needs --data: the ViewSpatial-Bench checkout or its eval/ViewSpatial-Bench.json")
    data, folders = _located(found["data"])
    records = read_records(data, split=found["split"])
    folders = [Path(found["images"])] if found["images"] else folders
    subset = found["subset"]
    items = [_item(records, n, folders) for n, row in enumerate(records.rows)
             if not subset or subset in (row.get("question_type"), str(row.get("question_type")).split(" - ")[0])]
    items = items[:found["limit"]]
    labels = option_letters(items, found, "ViewSpatial-Bench questions", "question type")
    spec = Resampling(labels, ("unit",), key=("instance_id",), pooled=True, unit="ScanNet scenes and COCO images")
    return Source("viewspatial", "viewspatial", f"viewspatial@{records.version}", labels, tuple(items), spec,
                  official=OFFICIAL, reader="viewspatial",
                  settings=recorded("viewspatial", found, found["data"], records.version),
                  details={"total": len(records.rows), "what": "questions"})


def write_copy(folder: Path, seed: int = 0, n: int = 40) -> tuple[Path, list[dict[str, Any]]]:
    """A ViewSpatial-Bench checkout: ``eval/ViewSpatial-Bench.json`` and its ScanNet and COCO images."""
    from spatialprobe.benchmarks import demo_copy as d

    rng = random.Random(seed)
    types = ["Camera perspective - Relative Direction", "Person perspective - Scene Simulation Relative Direction",
             "Camera perspective - Object View Orientation", "Person perspective - Object View Orientation",
             "Person perspective - Relative Direction"]
    records = []
    for k in range(n):
        kind = types[k % 5]
        if "Relative Direction" in kind and kind.startswith(("Camera", "Person perspective - Scene")):
            scene = f"scene{k % 4:04d}_00"
            frames = [f"ViewSpatial-Bench/scannetv2_val/{scene}/original_images/{20 * j}.jpg"
                      for j in range(1 if kind.startswith("Camera") else 3)]
        else:
            frames = [f"ViewSpatial-Bench/val2017/{100000 + k % 7:012d}.jpg"]
        for path in frames:
            if not (folder / path).is_file():
                d.solid(folder / path, d.colour(rng))
        options, gold = d.directions(rng, 2 if k % 9 == 0 else 4)
        choices = "\n".join(f"{'ABCD'[j]}. {o}" for j, o in enumerate(options))
        records.append({"question_type": kind, "image_path": frames,
                        "question": f"Question {k}: where is the lamp relative to the bed?",
                        "answer": f"{'ABCD'[gold]}. {options[gold]}", "choices": choices})
    target = folder / "eval" / "ViewSpatial-Bench.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(records, indent=1), encoding="utf-8")
    return folder, records


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in its real layout (:func:`write_copy`, 10 items; images drawn with Pillow),
    asked of several images a question: the tiny SmolVLM (:mod:`spatialprobe.benchmarks.demo_copy`)."""
    from spatialprobe.benchmarks import demo_copy as d

    data, _ = write_copy(folder, seed, n=10)
    return d.Demo(data, model="smolvlm")
