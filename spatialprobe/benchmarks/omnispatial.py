"""OmniSpatial (Jia et al. 2025): 1,533 lettered questions over 1,387 images in four task types
(Dynamic_Reasoning, Spatial_Interaction, Complex_Logic, Perspective_Taking) and ten sub-task types.

Files, three copies recognised by their fields (the copy read and its content hash are recorded:
the re-hosts differ in content):

* the authors' (HF ``qizekun/OmniSpatial``, ``OmniSpatial-test.zip`` unpacked): a folder with
  ``data.json`` (records ``id, question, options, answer`` - the right option's index -,
  ``task_type, sub_task_type``) and one image folder per task type, an item's image being
  ``{task_type}/{id.split('_')[0]}.png`` (``api_eval.py`` l. 39); ``--data`` the folder or ``data.json``;
* ``pangyyyyy/OmniSpatial`` (lmms-eval's ``omnispatial``): Parquet with ``gt`` (a letter) and
  ``image_path`` relative to the snapshot (``--images``; default the Parquet's folder);
* ``nv-njb/OmniSpatial-Test`` (lmms-eval's ``omni_spatial``): Parquet shards, the image embedded in
  ``image``, ``answer`` an index.

``--subset`` keeps one task type. ``--option reader=re|direct|json`` chooses the authors' reader
(``--eval_type``; default ``re``), whose format instruction ends the question.

Wording: the authors' prompt (``api_eval.py`` l. 35-37: the question, then ``A. option`` lines)
and the chosen reader's format instruction (``system_prompts.py``; their system prompt is not
sent); labels the letters. Official metric: accuracy, per task type and sub-task type, the reply
read by the authors' reader (the registered ``omnispatial-re``, ``omnispatial-direct`` or
``omnispatial-json``, :mod:`spatialprobe.readers.omnispatial`; ``re``: the last ``Answer: X``, an
unread reply reads ``A``), and under ``strict`` beside it (``strict_accuracy``). The paper's numbers average 5
sampled runs: ``--samples 5 --temperature T`` gives their mean (``Source.sampling = "mean"``) with an
interval over images and samples. Resampled by image (questions share 1,387 images).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, given, recorded
from spatialprobe.benchmarks.local_copy import Records, image_file, letters, option_letters, read_records
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.readers.omnispatial import EVAL_TYPES, FORMAT_PROMPTS, READERS
from spatialprobe.registry import component

OPTIONS = {"reader": "the authors' reader (their --eval_type): re (default: the last 'Answer: X'), direct or json"}
OFFICIAL = (Official({"accuracy": "accuracy"}, ("task_type", "sub_task_type")),)
COPIES = {"authors": "qizekun/OmniSpatial data.json (the authors' layout)",
          "pangyyyyy": "pangyyyyy/OmniSpatial (lmms-eval omnispatial: gt letter, image_path)",
          "nv-njb": "nv-njb/OmniSpatial-Test (lmms-eval omni_spatial: embedded image, answer index)"}
"""The copies told apart by their fields (FORMATS.md); each run records which one it read and its hash."""


def copy_of(row: Mapping[str, Any]) -> str:
    """Which copy a record comes from, by its fields."""
    if "gt" in row and "image_path" in row:
        return "pangyyyyy"
    return "nv-njb" if "image" in row else "authors"


def prompt(question: str, options: tuple[str, ...], eval_type: str) -> str:
    """``api_eval.py`` l. 35-37 (the question, ``A. option`` lines), then the reader's format instruction."""
    lines = "".join(f"{letter}. {text}\n" for letter, text in zip(letters(len(options)), options, strict=True))
    return f"{question}\n{lines}\n{FORMAT_PROMPTS[eval_type]}"


def _reader(found: Mapping[str, Any]) -> str:
    chosen = found["options"].get("reader", "re")
    if chosen not in EVAL_TYPES:
        raise UsageError(f"--option reader={chosen}: OmniSpatial's readers here are {', '.join(EVAL_TYPES)} "
                         "(its llm judge calls an API and is not run)")
    return str(chosen)


def _item(records: Records, n: int, folder: Path, eval_type: str) -> SourceItem:
    row = records.rows[n]
    copy = copy_of(row)
    key, task = str(records.require(n, "id")), str(records.require(n, "task_type"))
    options = records.options(n, "options")
    if copy == "pangyyyyy":
        gold = str(records.require(n, "gt")).strip()
    else:
        answer = records.require(n, "answer")
        valid = isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(options)
        gold = letters(len(options))[answer] if valid else ""
    if gold not in letters(len(options)):
        field = "gt" if copy == "pangyyyyy" else "answer"
        raise records.error(n, field, f"{row.get(field)!r:.60} names none of the {len(options)} options")
    if copy == "authors":
        named: Any = f"{task}/{key.split('_')[0]}.png"
        where = "id"
    else:
        where = "image_path" if copy == "pangyyyyy" else "image"
        named = records.require(n, where)
    image = image_file(named, folders=[folder], what=records.place(n, where))
    unit = f"{task}/{key.split('_')[0]}" if copy == "authors" else Path(image).name
    return SourceItem(f"{task}/{key}", prompt(str(records.require(n, "question")), options, eval_type), options,
                      letters(len(options)), gold, image, (),
                      {"task_type": task, "sub_task_type": str(row.get("sub_task_type") or ""),
                       "image": hashlib.sha256(unit.encode()).hexdigest()[:12]})


@component("source", "omnispatial",
           "OmniSpatial lettered questions: accuracy per task/sub-task type, mean over sampled runs, copy recorded")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """OmniSpatial's questions from the user's copy (``seed`` unused)."""
    found = given(settings)
    if found["data"] is None:
        raise UsageError("omnispatial needs --data: the unpacked OmniSpatial-test folder (data.json) or a re-host's "
                         "Parquet")
    eval_type = _reader(found)
    root = Path(found["data"])
    data = root / "data.json" if (root / "data.json").is_file() else root
    records = read_records(data, split=found["split"])
    folder = Path(found["images"]) if found["images"] else (Path(data).parent if Path(data).is_file() else root)
    items = [_item(records, n, folder, eval_type) for n, row in enumerate(records.rows)
             if found["subset"] in (None, row.get("task_type"))][:found["limit"]]
    labels = option_letters(items, found, "OmniSpatial questions", "task type")
    copies = Counter(copy_of(row) for row in records.rows)
    spec = Resampling(labels, ("image",), key=("instance_id",), pooled=True, unit="images")
    return Source("omnispatial", "omnispatial", f"omnispatial@{records.version}", labels, tuple(items), spec,
                  official=OFFICIAL, reader=READERS[eval_type].name, sampling="mean",
                  settings=recorded("omnispatial", found, found["data"], records.version),
                  details={"total": len(records.rows), "what": "questions",
                           "copy": {"read": [COPIES[c] for c in copies], "content_hash": records.version},
                           "eval_type": eval_type,
                           "licence": "CC BY-NC 4.0 (the authors' test set; re-hosts' labels differ)"})


OMNI_TASKS = {"Dynamic_Reasoning": ("Manipulation", "Motion_Analysis"),
              "Spatial_Interaction": ("Traffic_Analysis", "Localization", "Geospatial_Strategy"),
              "Complex_Logic": ("Pattern_Recognition", "Geometric_Reasoning"),
              "Perspective_Taking": ("Egocentric", "Allocentric", "Hypothetical")}


def write_copy(folder: Path, seed: int = 0, n: int = 40) -> tuple[Path, list[dict[str, Any]]]:
    """The unpacked ``OmniSpatial-test``: ``dataset/data.json`` and one PNG folder per task type."""
    from spatialprobe.benchmarks import demo_copy as d

    rng = random.Random(seed)
    root = folder / "dataset"
    records = []
    for k in range(n):
        task = list(OMNI_TASKS)[k // 2 % 4]
        sub = OMNI_TASKS[task][k % len(OMNI_TASKS[task])]
        number = k // 2  # two questions an image
        png = root / task / f"{number}.png"
        if not png.is_file():
            d.solid(png, d.colour(rng))
        options, gold = d.directions(rng, 2 + k % 3)
        records.append({"id": f"{number}_{k % 2}", "question": f"Question {k}: which way is the cup?",
                        "options": options, "answer": gold, "task_type": task, "sub_task_type": sub})
    (root / "data.json").write_text(json.dumps(records, indent=1), encoding="utf-8")
    return root, records


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in its real layout (:func:`write_copy`, 10 items; images drawn with Pillow),
    asked of the tiny LLaVA (:mod:`spatialprobe.benchmarks.demo_copy`)."""
    from spatialprobe.benchmarks import demo_copy as d

    data, _ = write_copy(folder, seed, n=10)
    return d.Demo(data, model="llava")
