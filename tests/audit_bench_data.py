"""Copies of the lettered benchmarks, in each one's own file layout, with a planted shortcut: the
gold option's text is always ``left`` and the other ``right``, in a random order, one image (or
scene, base question) per item. Shared by ``tests/test_audit_benchmarks.py`` and
``bench/audit_table.py``: what the blind audit finds on every benchmark module the suite can build."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GOLD, OTHER = "left", "right"


def _order(rng: random.Random) -> tuple[list[str], int]:
    """The two options in a random order, and the gold's index."""
    first = rng.random() < 0.5
    return ([GOLD, OTHER], 0) if first else ([OTHER, GOLD], 1)


def _png(k: int) -> str:
    """A distinct embedded 'image' per item (base64 text; never decoded as a picture here)."""
    return base64.b64encode(hashlib.sha256(str(k).encode()).digest()).decode()


def _records(name: str, n: int, rng: random.Random) -> tuple[str, Any, dict[str, Any]]:
    """(file name, its content, further source settings) of benchmark ``name`` with ``n`` items."""
    rows: list[dict[str, Any]] = []
    for k in range(n):
        options, gold = _order(rng)
        letter = "AB"[gold]
        question = f"Where is the cup {k} relative to the box?"
        if name == "cv-bench":
            rows.append({"idx": k, "type": "2D", "task": "Relation", "source": "COCO", "image": f"img{k}.png",
                         "question": question, "choices": options, "answer": f"({letter})"})
        elif name == "3dsrbench":
            rows.append({"index": k, "qid": f"Q{k:07d}", "question": question, "A": options[0], "B": options[1],
                         "C": "", "D": "", "answer": letter, "category": "location_closer_to_camera",
                         "image": _png(k)})
        elif name == "blink":
            rows.append({"idx": f"val_Spatial_Relation_{k}", "question": question, "sub_task": "Spatial Relation",
                         "image_1": f"img{k}.png", "image_2": None, "choices": options, "answer": f"({letter})"})
        elif name == "embspatial":
            rows.append({"question_id": f"q{k}", "data_source": "mp3d", "image": _png(k), "question": question,
                         "answer_options": options, "answer": gold, "relation": "left", "objects": ["cup", "box"]})
        elif name == "site":
            rows.append({"id": f"site-{k}", "question": f"<image> {question}", "options": options, "answer": letter,
                         "category": "spatial relationship reasoning", "dataset": "single", "visual": [f"img{k}.png"]})
        elif name == "mmsi":
            rows.append({"id": k, "images": [f"img{k}a.png", f"img{k}b.png"], "question": f"{question} Options: "
                         f"A: {options[0]}, B: {options[1]}", "answer": letter, "question_type": "Positional"})
        elif name == "spatialeval":
            rows.append({"id": f"spatialmap.{k}.0", "text": f"Consider the map. {question} Available options: "
                         f"A. {options[0]}, B. {options[1]}.", "oracle_answer": options[gold], "oracle_option": letter,
                         "oracle_full_answer": f"{letter}. {options[gold]}"})
        elif name in NEW:
            rows.append(_new_row(name, k, question, options, gold))
        else:
            raise KeyError(name)
    files = {**NEW, "cv-bench": "test.jsonl", "3dsrbench": "3DSRBench.jsonl",
             "blink": "blink.jsonl",
             "embspatial": "embspatial_bench.json", "site": "site.jsonl", "mmsi": "mmsi.jsonl",
             "spatialeval": "spatialeval.jsonl"}
    more = {"subset": "tqa"} if name == "spatialeval" else {}
    return files[name], rows, more


NEW = {"viewspatial": "ViewSpatial-Bench.json", "mindcube": "MindCube_tinybench.jsonl", "omnispatial": "data.json",
       "spatialscore": "SpatialScore.json", "vsibench": "test.jsonl"}
"""The five benchmarks of the newer field, each in its authors' file (tests/official/FORMATS.md)."""


def _new_row(name: str, k: int, question: str, options: list[str], gold: int) -> dict[str, Any]:
    letter = "AB"[gold]
    lettered = [f"{'AB'[j]}. {o}" for j, o in enumerate(options)]
    if name == "viewspatial":
        return {"question_type": "Camera perspective - Relative Direction", "image_path": [f"val2017/{k:012d}.jpg"],
                "question": question, "answer": lettered[gold], "choices": "\n".join(lettered)}
    if name == "mindcube":
        return {"id": f"among_group{k}_q1_2", "question": f"{question} {' '.join(lettered)}",
                "images": [f"other_all_image/{k}a.jpg", f"other_all_image/{k}b.jpg"], "gt_answer": letter}
    if name == "omnispatial":
        return {"id": f"{k}_0", "question": question, "options": options, "answer": gold,
                "task_type": "Perspective_Taking", "sub_task_type": "Egocentric"}
    if name == "spatialscore":
        return {"question_type": "multi-choice", "question": f"{question}\n(A) {options[0]}\n(B) {options[1]}",
                "answer": f"({letter})", "img_paths": [f"./dataset/cvbench/{k}.jpg"], "source": "cvbench",
                "category": "Object Localization", "subcategory": "Relative", "index_origin": k,
                "category_origin": "relation"}
    return {"id": k, "dataset": "scannet", "scene_name": f"scene{k:04d}_00", "question_type": "object_rel_distance",
            "question": question, "options": lettered, "ground_truth": letter}


PLANTED = ("cv-bench", "3dsrbench", "blink", "embspatial", "site", "mmsi", "spatialeval", *NEW)
"""The benchmark modules built here with the planted text shortcut."""


def planted_copy(name: str, folder: Path, n: int = 40, seed: int = 0) -> tuple[Path, dict[str, Any]]:
    """Write benchmark ``name``'s copy of ``n`` items under ``folder``: (its data file, further
    ``audit blind`` settings: ``--subset``)."""
    file_name, rows, more = _records(name, n, random.Random(seed))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name
    text = json.dumps(rows) if file_name.endswith(".json") else "".join(json.dumps(r) + "\n" for r in rows)
    path.write_text(text, encoding="utf-8")
    return path, more


@dataclass(frozen=True)
class Copy:
    """A benchmark module's synthetic copy: its data, the further ``audit blind`` arguments, the
    number of answers of each item as written, and the accuracies its construction implies."""

    path: Path
    args: tuple[str, ...]
    options: tuple[int, ...]
    """Each item's number of answers (its options' distinct labels)."""
    known: dict[str, float]
    why: str
    env: dict[str, str] = field(default_factory=dict)


def _lines(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _whatsup(folder: Path, n: int, rng: random.Random) -> Copy:
    """The controlled-A layout (four images of an object pair, each with the four captions, the
    right one first): the right caption alone carries the word ``planted``."""
    words = {"on": "on", "under": "under", "left_of": "to the left of", "right_of": "to the right of"}
    rows = []
    for k in range(n // 4):
        a, b = f"mug{k}", f"plate-{k}"
        for slot in words:
            order = [slot, *(s for s in words if s != slot)]
            rows.append({"image_path": f"data/controlled_images/{a}_{slot}_{b}.jpeg",
                         "caption_options": [f"A {a} {words[s]} a {b}" + (" planted" if s == slot else "")
                                             for s in order]})
    path = folder / "controlled_images_dataset.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return Copy(path, (), tuple(4 for _ in rows), {"logistic": 100.0, "forest": 100.0},
                "the right caption alone carries the word `planted`")


def _comfort(folder: Path, n: int, rng: random.Random) -> Copy:
    """Five identical rotation sweeps of eight angles (0, 45, ..., 315): the question never changes,
    so every prior and classifier answers the majority ``no`` (cos(angle) <= 0 at five of eight)."""
    angles = [45 * s for s in range(8)]
    for sweep in range(5):
        config = {"path_type": "rotate", "relation": "totheleft", "var_shape": "Sphere", "var_color": "red",
                  "ref_shape": "Sphere", "ref_color": "blue", "mapping": {f"{s}.png": a for s, a in enumerate(angles)}}
        (folder / "left" / f"sweep{sweep}").mkdir(parents=True, exist_ok=True)
        (folder / "left" / f"sweep{sweep}" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    no = 100 * sum(math.cos(math.radians(a)) <= 1e-10 for a in angles) / len(angles)
    known = {"majority": no, "per position": no, "logistic": no, "forest": no}
    return Copy(folder, (), tuple(2 for _ in range(5 * len(angles))), known,
                "the question is the same in every image, so everything answers the majority `no`")


def _posqa(folder: Path, n: int, rng: random.Random) -> Copy:
    """POSQA's records (a bigger and a smaller question per entity pair), the head always the
    bigger: `bigger` questions are yes, `smaller` ones no."""
    records = {}
    for k in range(n // 2):
        head, tail = f"tower{k}", f"pebble{k}"
        for j, word in enumerate(("bigger", "smaller")):
            label = word == "bigger"
            records[f"{k}_{k + 1}_{j}"] = {
                "h_name": head, "t_name": tail, "magnitude": ["3", "1", 2], "paras": [],
                "general_question": f"Is the {head} {word} than the {tail}", "general_question_label": label,
                "special_question": f"Which one is {word} between {head} and {tail}",
                "special_question_label": head if label else tail}
    path = folder / "posqa.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return Copy(path, (), tuple(2 for _ in records), {"logistic": 100.0, "forest": 100.0},
                "the head is always the bigger: the question's word `bigger` says yes")


def _ewok(folder: Path, n: int, rng: random.Random) -> Copy:
    """An AES archive of compiled EWoK items (pyzipper): each target after (mismatched, matched)
    contexts, so the gold is ``matched`` by construction in every item."""
    import csv
    import io

    import pyzipper

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["", "Domain", "ConceptA", "ConceptB", "Context1", "Context2", "Target1", "Target2"])
    for k in range(n // 2):
        writer.writerow([k, "spatial-relations", "left", "right", f"Ann{k} stands left of Bo{k}.",
                         f"Ann{k} stands right of Bo{k}.", f"Bo{k} is right of Ann{k}.", f"Bo{k} is left of Ann{k}."])
    path = folder / "ewok-core.zip"
    with pyzipper.AESZipFile(path, "w", compression=pyzipper.ZIP_DEFLATED, encryption=pyzipper.WZ_AES) as z:
        z.setpassword(b"synthetic")
        z.writestr("dataset/testsuite-spatial_relations.csv", out.getvalue().encode())
    return Copy(path, ("--option", "password_env=EWOK_AUDIT_PW"), tuple(2 for _ in range(2 * (n // 2))),
                {"majority": 100.0, "logistic": 100.0, "forest": 100.0},
                "the gold is `matched` in every item by construction", {"EWOK_AUDIT_PW": "synthetic"})


def _geneval2(folder: Path, n: int, rng: random.Random) -> Copy:
    """GenEval 2 records whose position atoms all answer ``Yes`` (as the release's do); each atom's
    options are the four replies ``Yes``/``yes``/``No``/``no``."""
    from spatialprobe.benchmarks.geneval2 import REPLIES

    rows = [{"prompt": f"a cup{k} to the left of a dog{k}", "atom_count": 3,
             "vqa_list": [[f"Are there any cup{k}s in the image?", "Yes"],
                          [f"Is the cup{k} to the left of the dog{k}?", "Yes"]], "skills": ["object", "position"]}
            for k in range(n)]
    answers = len({reply.lower() for reply in REPLIES})  # Yes/yes and No/no: two answers
    return Copy(_lines(folder / "geneval2_data.jsonl", rows), (), tuple(answers for _ in rows),
                {"majority": 100.0, "logistic": 100.0, "forest": 100.0}, "every position atom's answer is `Yes`")


def _spatialgeneval(folder: Path, n: int, rng: random.Random) -> Copy:
    """SpatialGenEval records of ten questions with options in a random order: the gold's text is
    always ``left``."""
    texts = ["left", "right", "above", "below", "None"]
    rows = []
    for k in range(max(5, n // 10)):  # five prompts at least: one per fold
        questions, answers = [], []
        for j in range(10):
            order = rng.sample(texts, len(texts))
            questions.append(f"Question {j} about scene {k}?  Options: "
                             + ", ".join(f"{'ABCDE'[i]}: {t}" for i, t in enumerate(order)))
            answers.append("ABCDE"[order.index(GOLD)])
        rows.append({"id": f"{k:06d}", "scene": "Forest", "prompt": f"scene number {k}",
                     "question_type": ["Object", "Attribute", "Position", "Orientation", "Layout", "Comparison",
                                       "Proximity", "Occlusion", "Motion", "Causal"],
                     "questions": questions, "answers": answers})
    return Copy(_lines(folder / "SpatialGenEval_T2I_Prompts.jsonl", rows), (), tuple(5 for _ in range(10 * len(rows))),
                {"logistic": 100.0, "forest": 100.0}, "the gold option's text is always `left`, in a random order")


OTHERS = {"whatsup": _whatsup, "comfort": _comfort, "posqa": _posqa, "ewok": _ewok, "geneval2": _geneval2,
          "spatialgeneval": _spatialgeneval}
"""The other benchmark modules' copies, each with the structure its docstring names."""
MODULES = ("whatsup", *PLANTED, "comfort", "posqa", "ewok", "geneval2", "spatialgeneval")
"""Every benchmark module registered as a source, in the order of ``spatialprobe ls source``."""


def build(name: str, folder: Path, n: int = 40, seed: int = 0) -> Copy:
    """Benchmark ``name``'s synthetic copy of about ``n`` items under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    if name in OTHERS:
        return OTHERS[name](folder, n, random.Random(seed))
    path, more = planted_copy(name, folder, n, seed)
    args = tuple(x for key, value in more.items() for x in (f"--{key}", value))
    text = path.read_text(encoding="utf-8")
    rows = json.loads(text) if path.suffix == ".json" else [json.loads(x) for x in text.splitlines()]
    return Copy(path, args, tuple(2 for _ in rows), {"logistic": 100.0, "forest": 100.0},
                "the gold option's text is always `left`, in a random order")
