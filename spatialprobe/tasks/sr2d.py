"""SR2D (Gokhale et al., VISOR): spatial prompts over the 80 COCO classes, in the released layout.

For every unordered pair of classes (3,160, in ``itertools.combinations`` order) and each of the
relations *to the left of, to the right of, above, below*, both orders ``A rel B`` and
``B rel A`` (25,280 spatial prompts); then per pair ``A and B`` and ``B and A`` (6,320); then one
single-object prompt per class (80): 31,680 records. Each record is
``{unique_id, num_objects, obj_1_attributes, obj_2_attributes, rel_type, text}`` with
``unique_id`` equal to its position in the list, as the released JSON file has it.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from spatialprobe.files import DataError, read_json_file
from spatialprobe.tasks.levels import with_article

COCO_CLASSES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog",
    "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella",
    "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite",
    "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange",
    "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant",
    "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
    "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors",
    "teddy bear", "hair drier", "toothbrush",
)
SR2D_RELATIONS = ("to the left of", "to the right of", "above", "below")
SPATIAL_KEYS = ("unique_id", "num_objects", "obj_1_attributes", "obj_2_attributes", "rel_type", "text")


def _record(uid: int, n: int, a: str, b: str | None, rel: str, text: str) -> dict[str, Any]:
    return {"unique_id": uid, "num_objects": n, "obj_1_attributes": [a],
            "obj_2_attributes": [b], "rel_type": rel, "text": text}


def build_sr2d(classes: tuple[str, ...] = COCO_CLASSES) -> list[dict[str, Any]]:
    """The SR2D prompt list, in the released order."""
    records: list[dict[str, Any]] = []
    for a, b in itertools.combinations(classes, 2):
        art_a, art_b = with_article(a), with_article(b)
        for rel in SR2D_RELATIONS:
            records.append(_record(len(records), 2, a, b, rel, f"{art_a} {rel} {art_b}"))
            records.append(_record(len(records), 2, b, a, rel, f"{art_b} {rel} {art_a}"))
        records.append(_record(len(records), 2, a, b, "and", f"{art_a} and {art_b}"))
        records.append(_record(len(records), 2, b, a, "and", f"{art_b} and {art_a}"))
    for a in classes:
        records.append(_record(len(records), 1, a, None, "single", with_article(a)))
    return records


def is_spatial(record: dict[str, Any]) -> bool:
    """A two-object prompt with a spatial relation (the prompts VISOR scores)."""
    return record.get("num_objects") == 2 and record.get("rel_type") in SR2D_RELATIONS


def prompt_lines(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records as ``spatialprobe synthesize`` prompt lines: ``{id, text, ...}`` with the
    SR2D fields kept as the prompt's metadata, so ``spatialprobe visor RUN`` finds them."""
    return [{"id": str(r["unique_id"]), **r} for r in records]


def load_sr2d(path: str | Path) -> dict[int, dict[str, Any]]:
    """SR2D records by ``unique_id``; a malformed record is a DataError naming its index and field,
    and two records with one ``unique_id`` are refused, naming both (one would lose its images)."""
    path = Path(path)
    data = read_json_file(path)
    if not isinstance(data, list):
        raise DataError(path, None, None, "expected a JSON list of SR2D records")
    for index, rec in enumerate(data):
        for key in SPATIAL_KEYS:
            if not isinstance(rec, dict) or key not in rec:
                raise DataError(path, None, f"[{index}].{key}", "missing")
    check_records([(f"record [{index}]", None, f"[{index}].", rec) for index, rec in enumerate(data)], path)
    return {int(rec["unique_id"]): rec for rec in data}


def check_records(entries: list[tuple[str, int | None, str, dict[str, Any]]], path: str | Path) -> None:
    """Each spatial record's fields (``unique_id`` an integer, the objects' class names), and no
    ``unique_id`` twice. ``entries``: (where it is, for the message; its line or None; the prefix
    of its field names; the record). VISOR keys images ``<unique_id>_<k>``, so two prompts with
    one id would merge; an empty ``obj_1_attributes`` would fail mid-run."""
    seen: dict[int, str] = {}
    for where, line, prefix, rec in entries:
        uid = rec.get("unique_id")
        if isinstance(uid, bool) or not (isinstance(uid, int) or (isinstance(uid, str) and uid.isdigit())):
            raise DataError(path, line, f"{prefix}unique_id", f"expected a whole number, got {uid!r}")
        if int(uid) in seen:
            raise DataError(path, line, f"{prefix}unique_id", f"{where} has unique_id {int(uid)}, as "
                            f"{seen[int(uid)]} has; each prompt needs its own (VISOR keys images by it)")
        seen[int(uid)] = where
        if not is_spatial(rec):
            continue
        for key in ("obj_1_attributes", "obj_2_attributes"):
            value = rec.get(key)
            if not (isinstance(value, list) and value and isinstance(value[0], str) and value[0].strip()):
                raise DataError(path, line, f"{prefix}{key}", "expected a list whose first item is the "
                                f"object's class name, got {value!r}")
