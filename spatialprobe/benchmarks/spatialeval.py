"""SpatialEval (Wang et al. 2024, jiayuww/SpatialEval): four tasks (Spatial-Map, Maze-Nav,
Spatial-Grid, Spatial-Real) in three modalities, the Hugging Face configs ``tqa`` (text only),
``vqa`` (image only) and ``vtqa`` (image and text), chosen with ``--subset`` (default ``tqa``).

Read from the user's copy of ``MilaWang/SpatialEval``: the repository folder (``tqa/``, ``vqa/``,
``vtqa/`` of Parquet files; ``--subset`` picks the folder), one config's Parquet file or folder, a
``datasets`` folder or ``hf:MilaWang/SpatialEval`` (offline), fields ``id`` (``TASK.….QID``),
``text``, ``image`` (embedded; ``vqa``/``vtqa``), ``oracle_answer``, ``oracle_option``. The text
ends with its lettered options (``A. northeast, B. …``), which become the item's options;
``--option task=spatialmap|mazenav|spatialgrid|spatialreal`` keeps one task.

Wording ``question``: the text with the authors' instruction ("First, provide a concise answer in
one sentence. Then, elaborate …", ``inference_lm.py``); a chat model answers by likelihood (the
options as replies) or by generation. Labels: the option texts, lower-cased; gold the
``oracle_answer``. Two readings of a reply, side by side:

* ``accuracy`` - the authors' ``evals/evaluation.py`` (@d82ba38, the ``spatialeval`` reader,
  :mod:`spatialprobe.readers.spatialeval`), with its quirk: their per-task extractor, then
  ``oracle_answer in str(extracted).lower()`` - a substring test, so "none" (also what an
  unparsed reply becomes) counts for "no" and "90" for "0" (SpatialEval PR #3). Spatial-Real has
  no extractor there (the authors judged it with GPT-4o, issue #2): nothing is read, wrong;
* ``strict_accuracy`` - the reply is exactly an option's letter or text (``strict``).

Both broken down per task; resampled by the map/maze/grid a question is about (an id without its
last part). ``--option reference_model=NAME`` passes a model name to the extractor's
model-specific branches (``claude``, ``geminiv``, ``gpt4o``); empty by default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks import base
from spatialprobe.benchmarks.base import Official, Source, SourceItem
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {
    "task": "keep one task: spatialmap, mazenav, spatialgrid or spatialreal (default: all four)",
    "reference_model": "the model name the authors' extractor sees in its model-specific branches (default: none)",
}
MODES = ("tqa", "vqa", "vtqa")
TASKS = ("spatialmap", "mazenav", "spatialgrid", "spatialreal")
INSTRUCTION = ("First, provide a concise answer in one sentence. Then, elaborate on the reasoning behind your "
               "answer in a detailed, step-by-step explanation.")
OFFICIAL = (Official({"accuracy": "accuracy"}, ("task",)),)
_OPTION = re.compile(r"(?:^|[\s:,(])([A-H])[.)]\s*(.+?)(?=,?\s+[A-H][.)]\s|[\n]|$)")


def lettered_options(text: str) -> tuple[str, ...]:
    """The options a SpatialEval text lists (``A. x, B. y, …`` from its last ``A.`` on), in order;
    ``()`` where it lists no run of letters from A."""
    start = max(text.rfind(" A. "), text.rfind("\nA. "), text.rfind("(A) "), -1 if not text.startswith("A. ") else 0)
    if start < 0:
        return ()
    found = _OPTION.findall(text[start:])
    options: list[str] = []
    for letter, option in found:
        if ord(letter) - 65 != len(options):
            break
        options.append(option.strip().rstrip(".,;").strip())
    return tuple(options) if len(options) >= 2 else ()


# -- the source ----------------------------------------------------------------------------------
def _data(found: Mapping[str, Any], mode: str) -> str:
    data = found.get("data")
    if not data:
        raise UsageError("spatialeval reads your copy of MilaWang/SpatialEval: pass --data.")
    folder = Path(str(data))
    return str(folder / mode) if not str(data).startswith("hf:") and (folder / mode).is_dir() else str(data)


def spatialeval_source(found: Mapping[str, Any]) -> Source:
    """SpatialEval's questions of one modality (``--subset``) from the user's copy."""
    from spatialprobe.benchmarks.copy_images import image_file
    from spatialprobe.benchmarks.local_copy import read_records
    from spatialprobe.errors import DataError

    mode = found.get("subset") or "tqa"
    if mode not in MODES:
        raise UsageError(f"--subset {mode} is not a SpatialEval modality; choose tqa, vqa or vtqa.")
    options = found["options"]
    task = options.get("task")
    if task is not None and task not in TASKS:
        raise UsageError(f"--option task={task} is not a SpatialEval task; choose one of {', '.join(TASKS)}.")
    if found.get("images"):
        raise UsageError("--images does not apply to spatialeval: its images are embedded in its Parquet files.")
    data = _data(found, mode)
    records = read_records(data, split=found.get("split"), config=mode)
    items = []
    for n, row in enumerate(records.rows):
        key = str(records.require(n, "id"))
        kind, qid = key.split(".")[0], key.split(".")[-1]
        if task is not None and kind != task:
            continue
        if kind not in TASKS or not qid.isdigit():
            raise records.error(n, "id", f"{key!r:.60} is not TASK.….QUESTION (task one of {', '.join(TASKS)})")
        text = str(records.require(n, "text"))
        choices = lettered_options(text)
        if not choices:
            raise records.error(n, "text", "lists no lettered options (A. …, B. …)")
        labels = tuple(c.lower() for c in choices)
        answer = str(records.require(n, "oracle_answer")).lower()
        letter = str(row.get("oracle_option") or "").strip().strip("().").upper()
        gold = labels[ord(letter) - 65] if len(letter) == 1 and 0 <= ord(letter) - 65 < len(labels) else answer
        if gold not in labels:
            raise records.error(n, "oracle_answer", f"{gold!r:.60} is none of the options {list(labels)}")
        image = None
        if mode != "tqa":
            where = records.where[n]
            image = image_file(records.require(n, "image"), what=f"{where[0]}, field 'image'")
        fields = {"task": kind, "question": qid, "scene": key.rsplit(".", 1)[0], "oracle_answer": answer,
                  "reference_model": options.get("reference_model", "")}
        items.append(SourceItem(key, f"{text}\n{INSTRUCTION}", choices, labels, gold, image, (fields["scene"],),
                                fields))
        if found.get("limit") and len(items) >= found["limit"]:
            break
    if not items:
        raise DataError(data, None, "id", f"holds no {task or 'SpatialEval'} question")
    labels = tuple(sorted({x for item in items for x in item.labels}))
    spec = Resampling(labels, ("scene",), key=("instance_id",), pooled=True, unit="scenes")
    settings = base.recorded("spatialeval", found, data, records.version, mode=mode)
    return Source("spatialeval", f"spatialeval-{mode}", f"spatialeval-{mode}@{records.version}", labels, tuple(items),
                  spec, official=OFFICIAL, reader="spatialeval", settings=settings,
                  details={"total": len(records.rows), "what": "questions", "mode": mode})


@component("source", "spatialeval",
           "SpatialEval: map, maze, grid, real; tqa/vqa/vtqa; exact match and the authors' parser")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of ``spatialprobe bench spatialeval`` settings or of a run's recorded ones."""
    return spatialeval_source(base.given(settings))


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in SpatialEval's Hugging Face layout (:mod:`spatialprobe.benchmarks.demo_copy`):
    ``tqa/``, ``vqa/`` and ``vtqa/`` of Parquet, Spatial-Map questions with lettered options in the
    text, images embedded (the demo asks ``vtqa``)."""
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng = random.Random(seed)
    questions = []
    for k in range(8):
        scene, _, choices, gold = d.lettered(rng, 4)
        text = (f"Consider a map with a {scene.a} and a {scene.b}. In which direction is the {scene.a} relative to "
                f"the {scene.b}? Available options: " + ", ".join(f"{'ABCD'[i]}. {c}" for i, c in enumerate(choices))
                + ".")
        questions.append((f"spatialmap.demo.{k}.0", text, choices[gold], "ABCD"[gold], d.draw(scene)))
    for mode in MODES:
        rows = [{"id": key, "text": text, "oracle_answer": answer, "oracle_option": option,
                 "oracle_full_answer": f"{option}. {answer}", **({} if mode == "tqa" else
                                                                 {"image": d.embedded(image, f"{key}.png")})}
                for key, text, answer, option, image in questions]
        d.write_parquet(folder / mode / "test-00000-of-00001.parquet", rows)
    return d.Demo(folder, subset="vtqa")
