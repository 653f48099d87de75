"""MindCube (Yin et al. 2025): spatial mental modelling from a few views - lettered questions
about two to four images of one scene, in three settings (``among``, ``around``, ``rotation``;
the authors also track ``translation``).

Files: the authors' ``data/`` folder (HF ``MLL-Lab/MindCube``, unpacked by their
``download_data.bash``): ``raw/MindCube_tinybench.jsonl`` (MindCube-Tiny, the set EASI and the
challenge's validation use) and the full benchmark (``raw/MindCube.jsonl``: that file name is
unverified), images under ``other_all_image/`` named relative to ``data/``. ``--data`` the
``data/`` folder with ``--subset tiny`` (default) or ``full``, or one JSONL file (images found
beside it or one folder up; ``--images`` to say where). lmms-eval's Parquet re-host
(``oscarqjh/MindCube_lmmseval``, images embedded) is read too. Records ``id, question`` (its
options written in it, ``A. ... B. ...``), ``images`` (a list), ``gt_answer`` (a letter).
``--option setting=among`` keeps one setting.

Wording: the question as written and "Answer with the option's letter.", every image shown
together; labels the letters. Official metrics, the reply read by the authors' ``extract_answer``
(the registered reader ``mindcube``, :mod:`spatialprobe.readers.mindcube`; under ``strict`` too,
as ``strict_accuracy`` and ``strict_accuracy_by_setting``): ``accuracy`` - their overall, over
every setting but ``translation`` (``BasicEvaluator``) -, ``accuracy_by_setting`` (every item,
lmms-eval's overall, and one part per setting), and beside them the **chance** baseline (the mean
of 100/k over the items, k options each) and the **frequency** baseline (answering every item with
the most frequent gold letter of the items read), each per setting too (baselines of the items:
no reader, no strict twin). Resampled by the
multi-view image group (the id up to ``_q<n>``; the images where an id has no such part).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, copy_source, given
from spatialprobe.benchmarks.local_copy import Records, letters, option_letters, read_records
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.readers.mindcube import IN_OVERALL, setting_of
from spatialprobe.registry import component

OPTIONS = {"setting": "keep one setting of the authors' (among, around, rotation, translation, other)"}
FILES = {"tiny": "raw/MindCube_tinybench.jsonl", "full": "raw/MindCube.jsonl"}
"""The subsets' files under the ``data/`` folder (the full one's name is unverified)."""
QUESTION = "{question}\nAnswer with the option's letter."
OFFICIAL = (Official({"accuracy": "share"}, pred="overall_right"),
            Official({"accuracy_by_setting": "accuracy"}, ("setting",)),
            Official({"chance": "mean"}, ("setting",), pred="chance_value", reads=False),
            Official({"frequency": "share"}, ("setting",), pred="frequency_right", reads=False))
_MARK = re.compile(r"(?:^|(?<=\s))([A-E])\.\s")
_GROUP = re.compile(r"^(.*?)_q\d")


def options_in(question: str) -> tuple[str, ...]:
    """The options written in a question from its last ``A. `` on (``A. x B. y`` inline or one a
    line), lettered from A in turn; ``()`` where there are fewer than two."""
    marks = list(_MARK.finditer(question))
    starts = [n for n, m in enumerate(marks) if m.group(1) == "A"]
    if not starts:
        return ()
    run = [marks[starts[-1]]]
    for mark in marks[starts[-1] + 1:]:
        if mark.group(1) == letters(len(run) + 1)[-1]:
            run.append(mark)
    ends = [m.start() for m in run[1:]] + [len(question)]
    texts = tuple(question[m.end():end].strip() for m, end in zip(run, ends, strict=True))
    return texts if len(texts) >= 2 and all(texts) else ()


def matching(item: SourceItem, output: str | None, label: str | None) -> dict[str, Any]:
    """Whether a reading is right, counted in the authors' overall (None for ``translation``)."""
    return {"overall_right": int(label == item.gold) if IN_OVERALL[item.fields["setting"]] else None}


def _file(data: str, subset: str | None) -> str:
    root = Path(data)
    if root.is_dir() and not any(root.glob("*.parquet")) and not (root / "dataset_info.json").is_file():
        chosen = root / FILES[subset or "tiny"]
        if not chosen.is_file():
            raise UsageError(f"{root}: no {FILES[subset or 'tiny']} (the MindCube data/ folder holds raw/*.jsonl)")
        return str(chosen)
    return data


def _item(records: Records, n: int, folders: list[Path]) -> SourceItem:
    key = str(records.require(n, "id"))
    question = str(records.require(n, "question"))
    options = options_in(question)
    if not options:
        raise records.error(n, "question", "its options (A. ... B. ...) cannot be read")
    gold = records.gold_letter(n, "gt_answer", len(options))
    shown = records.images(n, "images", folders)
    group = _GROUP.match(key)
    unit = group.group(1) if group else "|".join(str(p) for p in shown)
    setting = setting_of(key)
    return SourceItem(key, QUESTION.format(question=question.replace("<image>", "").strip()), options,
                      letters(len(options)), gold, shown[0], (),
                      {"setting": setting, "group": hashlib.sha256(unit.encode()).hexdigest()[:12],
                       "chance_value": 100.0 / len(options) if IN_OVERALL[setting] else None},
                      views=tuple(shown[1:]))


@component("source", "mindcube",
           "MindCube multi-view lettered questions (tiny or full): accuracy per setting, chance and frequency "
           "baselines")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """MindCube's questions from the user's copy (``seed`` unused)."""
    found = given(settings, needs="mindcube needs --data: the MindCube data/ folder (with --subset tiny|full) or a "
                                  "JSONL file")
    if found["subset"] not in (None, *FILES):
        raise UsageError(f"--subset {found['subset']}: MindCube's subsets are {', '.join(FILES)}")
    data = _file(found["data"], found["subset"])
    records = read_records(data, split=found["split"])
    here = Path(data).parent if Path(data).is_file() else Path(data)
    folders = [Path(found["images"])] if found["images"] else [here.parent, here]
    setting = found["options"].get("setting")
    items = [item for item in (_item(records, n, folders) for n in range(len(records.rows)))
             if setting in (None, item.fields["setting"])][:found["limit"]]
    labels = option_letters(items, found, "MindCube questions" + (f" of setting {setting}" if setting else ""), "file")
    counted = Counter(i.gold for i in items if IN_OVERALL[i.fields["setting"]])
    frequent = sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] if counted else None
    items = [SourceItem(i.key, i.question, i.options, i.labels, i.gold, i.image, i.objects,
                        {**i.fields, "frequency_right": int(i.gold == frequent)
                         if IN_OVERALL[i.fields["setting"]] else None}, views=i.views) for i in items]
    spec = Resampling(labels, ("group",), key=("instance_id",), pooled=True, unit="multi-view image groups")
    return copy_source("mindcube", found, records, items, labels, spec, official=OFFICIAL, matching=matching,
                       reader="mindcube",
                       details={"frequent_gold": frequent,
                                "settings": dict(Counter(i.fields["setting"] for i in items)),
                                "overall": "translation left out of accuracy, as their BasicEvaluator does"})


def write_copy(folder: Path, seed: int = 0, n: int = 30) -> tuple[Path, list[dict[str, Any]]]:
    """MindCube's ``data/`` folder: ``raw/MindCube_tinybench.jsonl`` (the first ``n`` records) and
    ``raw/MindCube.jsonl`` (those and ``n`` more), images under ``other_all_image/``."""
    from spatialprobe.benchmarks import demo_copy as d

    rng = random.Random(seed)
    data = folder / "data"
    settings = ["among", "around", "rotation", "translation"]
    records = []
    for k in range(2 * n):
        setting = settings[k // 3 % 4]
        group = f"{setting}_group{k // 3:03d}"
        views = [f"other_all_image/{setting}/{group}/view_{j}.jpg" for j in range(2 + k % 3)]
        for path in views:
            if not (data / path).is_file():
                d.solid(data / path, d.colour(rng))
        options, gold = d.directions(rng, 3 + k % 3)
        written = " ".join(f"{'ABCDE'[j]}. {o.capitalize()}" for j, o in enumerate(options))
        records.append({"id": f"{group}_q{k}_{k % 5}", "category": [setting, "O-O"], "type": 1,
                        "question": f"Based on these views, question {k}: where is the chair? {written}",
                        "images": views, "gt_answer": "ABCDE"[gold]})
    for name, part in (("MindCube_tinybench.jsonl", records[:n]), ("MindCube.jsonl", records)):
        (data / "raw").mkdir(parents=True, exist_ok=True)
        (data / "raw" / name).write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
    return data, records


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in its real layout (:func:`write_copy`, 8 items; images drawn with Pillow),
    asked of several images a question: the tiny SmolVLM (:mod:`spatialprobe.benchmarks.demo_copy`)."""
    from spatialprobe.benchmarks import demo_copy as d

    data, _ = write_copy(folder, seed, n=8)
    return d.Demo(data, model="smolvlm")
