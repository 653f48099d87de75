"""3DSRBench (Ma et al. 2025): lettered questions on height, location, orientation and
multi-object 3-D relations, each asked in its circular variants (options rotated: qids ``X``,
``X-1``, ``X-2``, ...) and, where the relation can be reversed, flipped (``X-flip``,
``X-flip-1``, ...).

Files: the CSV/TSV the authors and VLMEvalKit distribute (``index, qid, question, A-D, answer,
category``, and ``image`` - base64, or the ``index`` of the row holding it as VLMEvalKit
shortens repeated images - or ``image_url``, found by its file name under ``--images``); any
layout of :func:`spatialprobe.benchmarks.local_copy.read_records`.

Wording: ``question`` (the question and its lettered options); labels the letters. Replies are
read as VLMEvalKit reads them (``vlmeval-can-infer``, :mod:`spatialprobe.readers.vlmeval`; its
judge LLM is not run, so a reply it cannot read counts wrong, as under ``exact_matching``) and by
``strict``. Official metrics: accuracy over every row (VLMEvalKit's "vanilla" Overall) per category and main
category, and in the run's ``3dsrbench.json`` (:func:`extras`, :func:`official_scores`) the
consistent accuracies (every row of a group right) of ``_3DSRBench.evaluate`` (open-compass/VLMEvalKit @e8e78f0
``vlmeval/dataset/image_mcq.py`` l. 2662 on; lmms-eval's ``tasks/3dsrbench/utils.py`` groups the
same way): ``flip`` (``X-k`` with ``X-flip-k``: qid without ``-flip``), ``circular`` (qid[:8],
or qid[:13] for flipped ones) and ``flip_circular`` (qid[:8]), each the mean over the rows
whose qid is itself a group's key of "every row of the group right". The authors' script
(``compute_3dsrbench_results.py``; johnson111788/SpatialReasoner @90eeb8e ``src/eval``, the
difference of SpatialReasoner issue #4) reports circular accuracy as its headline, grouping by
the qid without a trailing ``-N`` and averaging over groups: the two agree where base ids have 8
characters and every group holds its own unrotated row, and ``3dsrbench.json`` gives both.
``--option grouping=authors`` makes the authors' groups the rows' ``circular`` field (the
protocol engine's groups); default ``vlmevalkit``. Resampled by base question (qid[:8]).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, given, recorded
from spatialprobe.benchmarks.local_copy import Records, image_file, letters, options_text, read_records
from spatialprobe.errors import DataError, UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS = {"grouping": "vlmevalkit (default: circular groups qid[:8] / qid[:13], as VLMEvalKit and lmms-eval) or "
                       "authors (the qid without a trailing -N, as the authors' compute_3dsrbench_results.py)"}
QUESTION = "{question}\n{options}\nAnswer with the option's letter."
MAIN = {"height_higher": "height", "location_above": "location", "location_closer_to_camera": "location",
        "location_next_to": "location", "orientation_in_front_of": "orientation",
        "orientation_on_the_left": "orientation", "orientation_viewpoint": "orientation",
        "multi_object_closer_to": "multi_object", "multi_object_facing": "multi_object",
        "multi_object_viewpoint_towards_object": "multi_object", "multi_object_parallel": "multi_object",
        "multi_object_same_direction": "multi_object"}
"""Each category's main category (the authors' ``mapping``)."""
OFFICIAL = (Official({"accuracy": "accuracy"}, ("main_category", "category")),)
KEYS: dict[str, Callable[[str], str]] = {
    "flip": lambda q: q.replace("-flip", ""),
    "circular": lambda q: q[:8] if "-flip" not in q else q[:13],
    "flip_circular": lambda q: q[:8],
}
"""VLMEvalKit's group key of each consistent accuracy."""


def authors_key(qid: str) -> str:
    """The authors' circular group: the qid without a trailing ``-N`` (one character)."""
    return qid[:-2] if len(qid) >= 2 and qid[-2] == "-" else qid


def consistent_vlmevalkit(qids: Sequence[str], hits: Sequence[bool], key: Callable[[str], str]) -> float:
    """``_3DSRBench.evaluate``'s consistent accuracy (percent): the rows whose qid is a key, each
    right where every row of its group is (a later duplicate qid overwriting an earlier one)."""
    keys = {q: key(q) for q in qids}
    main = [n for n, q in enumerate(qids) if q in set(keys.values())]
    hit_map = {qids[n]: bool(hits[n]) for n in main}
    for q, hit in zip(qids, hits, strict=True):
        if keys[q] not in hit_map:
            raise DataError(q, None, "qid", f"its group {keys[q]!r:.60} has no question of that qid")
        hit_map[keys[q]] = hit_map[keys[q]] and bool(hit)
    return 100.0 * sum(hit_map[qids[n]] for n in main) / len(main)


def consistent_authors(qids: Sequence[str], hits: Sequence[bool]) -> float:
    """The authors' circular accuracy (percent): the mean over groups (:func:`authors_key`)."""
    groups: dict[str, bool] = {}
    for q, hit in zip(qids, hits, strict=True):
        groups[authors_key(q)] = groups.get(authors_key(q), True) and bool(hit)
    return 100.0 * sum(groups.values()) / len(groups)


def official_scores(qids: Sequence[str], hits: Sequence[bool]) -> dict[str, dict[str, float]]:
    """VLMEvalKit's four accuracies and the authors' circular one, in percent."""
    vanilla = 100.0 * sum(map(bool, hits)) / len(hits)
    return {"vlmevalkit": {"vanilla": vanilla, **{name: consistent_vlmevalkit(qids, hits, key)
                                                  for name, key in KEYS.items()}},
            "authors": {"vanilla": vanilla, "circular": consistent_authors(qids, hits)}}


def _image(records: Records, n: int, by_index: Mapping[str, int], folders: Sequence[Path]) -> str:
    """Row ``n``'s image: base64 (or the index of the row that holds it), else ``image_url``."""
    row, where = records.rows[n], records.place(n, "image")
    value = row.get("image")
    if isinstance(value, str) and value:
        if len(value) <= 64 and value in by_index and by_index[value] != n:  # VLMEvalKit's shortened repeat
            value = records.rows[by_index[value]].get("image")
        if isinstance(value, str) and len(value) > 64:
            try:
                return image_file(base64.b64decode(value, validate=True), what=where)
            except ValueError:  # binascii.Error, or characters base64 never holds
                raise records.error(n, "image", "neither base64 nor the index of a row with an image") from None
    if value:
        return image_file(value, folders=folders, what=where)
    url = str(records.require(n, "image_url"))
    return image_file(url.split("/")[-1], folders=folders, what=where)


@component("source", "3dsrbench",
           "3DSRBench lettered 3-D questions: vanilla, flip, circular, flip+circular (VLMEvalKit's or authors' groups)")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """3DSRBench's rows from the user's copy (``seed`` unused)."""
    found = given(settings)
    if found["data"] is None:
        raise UsageError("3dsrbench needs --data: the authors' or VLMEvalKit's 3DSRBench TSV")
    grouping = found["options"].get("grouping", "vlmevalkit")
    if grouping not in ("vlmevalkit", "authors"):
        raise UsageError(f"--option grouping={grouping}: it is vlmevalkit or authors")
    if found["subset"] is not None:
        raise UsageError("--subset does not apply to 3dsrbench (its categories are reported apart)")
    records = read_records(found["data"], split=found["split"])
    folders = [Path(found["images"])] if found["images"] else [records.path.parent]
    by_index = {str(r.get("index")): n for n, r in enumerate(records.rows)}
    items = []
    for n, row in enumerate(records.rows[:found["limit"]]):
        qid = str(records.require(n, "qid"))
        options = tuple(str(row[c]) for c in "ABCD" if row.get(c) not in (None, "") and str(row[c]) != "nan")
        gold = str(records.require(n, "answer")).strip()
        if gold not in letters(len(options)):
            raise records.error(n, "answer", f"{gold!r:.60} is none of the {len(options)} options' letters")
        category = str(records.require(n, "category"))
        fields = {"qid": qid, "base": qid[:8], "category": category, "main_category": MAIN.get(category, "other"),
                  **{name: key(qid) for name, key in KEYS.items()}}
        if grouping == "authors":
            fields["circular"] = authors_key(qid)
        question = QUESTION.format(question=records.require(n, "question"), options=options_text(options))
        items.append(SourceItem(f"{row.get('index', n)}|{qid}", question, options, letters(len(options)), gold,
                                _image(records, n, by_index, folders), (), fields))
    if len({i.key for i in items}) != len(items):
        raise DataError(records.path, None, "index", "two rows share index and qid")
    spec = Resampling(letters(4), ("base",), key=("instance_id",), pooled=True, unit="questions")
    return Source("3dsrbench", "3dsrbench", f"3dsrbench@{records.version}", letters(4), tuple(items), spec,
                  official=OFFICIAL, extras=extras, reader="vlmeval-can-infer",
                  settings=recorded("3dsrbench", found, found["data"], records.version),
                  variants={name: name for name in KEYS},
                  details={"total": len(records.rows), "what": "questions", "grouping": grouping})


def extras(run: Any, summary: Mapping[str, Any]) -> None:
    """``3dsrbench.json``: per condition, VLMEvalKit's vanilla, flip, circular and flip+circular
    accuracy and the authors' circular accuracy (:func:`official_scores`), on the rows in order."""
    import json

    from spatialprobe.files import atomic_write_text, iter_jsonl

    rows = [row for _, row in iter_jsonl(run.file("predictions.jsonl"))]
    out = {}
    for condition in dict.fromkeys(row["condition"] for row in rows):
        mine = [r for r in rows if r["condition"] == condition]
        out[condition] = official_scores([r["qid"] for r in mine], [r["pred"] == r["gold"] for r in mine])
    atomic_write_text(run.file("3dsrbench.json"), json.dumps(out, indent=2) + "\n")


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in 3DSRBench's TSV layout (:mod:`spatialprobe.benchmarks.demo_copy`): lettered
    columns A-D, images as base64, every question with its option-rotated copies (``qid`` groups)."""
    import csv
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng, rows = random.Random(seed), list[dict[str, Any]]()
    for k in range(4):
        scene, question, choices, gold = d.lettered(rng, 2)
        image = d.b64(d.draw(scene))
        for turn in range(2):  # the circular copy: the options rotated
            shown = choices[turn:] + choices[:turn]
            qid = f"Q{k:07d}" + (f"-{turn}" if turn else "")
            rows.append({"index": len(rows), "qid": qid, "question": question, "A": shown[0], "B": shown[1],
                         "C": "", "D": "", "answer": "AB"[shown.index(choices[gold])],
                         "category": "location_above", "image": image})
    path = folder / "3DSRBench.tsv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    return d.Demo(path)
