"""Copies of the lettered benchmarks, in each one's own file layout, with a planted shortcut: the
gold option's text is always ``left`` and the other ``right``, in a random order, one image (or
scene, base question) per item. Shared by ``tests/test_audit_benchmarks.py`` and
``bench/audit_table.py``: what the blind audit finds on every benchmark module the suite can build."""

from __future__ import annotations

import base64
import hashlib
import json
import random
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
        else:
            raise KeyError(name)
    files = {"cv-bench": "test.jsonl", "3dsrbench": "3DSRBench.jsonl", "blink": "blink.jsonl",
             "embspatial": "embspatial_bench.json", "site": "site.jsonl", "mmsi": "mmsi.jsonl",
             "spatialeval": "spatialeval.jsonl"}
    more = {"subset": "tqa"} if name == "spatialeval" else {}
    return files[name], rows, more


PLANTED = ("cv-bench", "3dsrbench", "blink", "embspatial", "site", "mmsi", "spatialeval")
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
