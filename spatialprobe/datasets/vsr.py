"""Visual Spatial Reasoning (VSR; Liu, Emerson & Collier, TACL 2023): loader and relation table.

Each JSON lines record: ``image`` (COCO 2017 file name), ``caption``, ``label`` (1 true, 0 false),
``relation``, ``annotator_id``, ``vote_true_validator_id``/``vote_false_validator_id`` (lists, or
strings such as ``"[2, 9]"`` as released), and ``reference_frame`` (random split) or
``subj``/``obj`` (zero-shot split). Unknown extra keys are ignored. Splits live in
``DIR/{random,zeroshot}/{train,dev,test}.jsonl``.

Images are read from a COCO folder the user names (the file itself, or under ``train2017/``
or ``val2017/``); records whose image is missing are reported, not fatal.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from spatialprobe.errors import UsageError
from spatialprobe.files import DataError, iter_jsonl, parse_json, require, shown

SPLITS = ("random", "zeroshot")
PARTS = ("train", "dev", "test")
CATEGORIES = ("Adjacency", "Directional", "Orientation", "Projective", "Proximity",
              "Topological", "Unallocated")
IMAGE_SUBDIRS = ("", "train2017", "val2017", "images")
NO_CATEGORY = "-"
"""The table's category of a relation in none of the 7 (``congruent``, as the authors' script)."""


@dataclass(frozen=True)
class VSRExample:
    """One caption-image pair with its truth value."""

    id: str
    """Stable id: ``{split}-{part}-{index:05d}`` (index = record order in the file)."""
    image: str
    """COCO file name, e.g. ``000000296471.jpg``."""
    caption: str
    """The caption, e.g. ``The cat is inside the refrigerator.``."""
    label: int
    """1 if the caption is true of the image, else 0."""
    relation: str
    """The spatial relation the caption uses, e.g. ``inside``."""
    subj: str = ""
    """Subject object (zero-shot split as released; else read from the caption)."""
    obj: str = ""
    """Object (zero-shot split as released; else read from the caption)."""
    annotator_id: int | None = None
    """Annotator who wrote the caption."""
    vote_true: tuple[int, ...] = ()
    """Validators who voted the caption true."""
    vote_false: tuple[int, ...] = ()
    """Validators who voted the caption false."""
    reference_frame: float | None = None
    """Reference frame code where released (random split); None otherwise."""


@dataclass(frozen=True)
class Relation:
    """One VSR relation with its category and its negation for negated-relation prompting."""

    name: str
    """The relation as captions use it, e.g. ``left of``."""
    category: str | None
    """One of the 7 categories in :data:`CATEGORIES`; None for ``congruent``, which the VSR
    authors' category list leaves out (their script counts it in no category)."""
    negation: str
    """An antonym (``right of``) or a negation (``not touching``) that replaces it in the caption."""


@cache
def relations() -> dict[str, Relation]:
    """The 71 relations of ``spatialprobe/data/vsr_relations.tsv``."""
    text = (resources.files("spatialprobe") / "data" / "vsr_relations.tsv").read_text(encoding="utf-8")
    table = {}
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    for line in lines[1:]:
        name, category, negation = line.split("\t")
        table[name] = Relation(name, None if category == NO_CATEGORY else category, negation)
    return table


def _id_list(value, path, line, field) -> tuple[int, ...]:
    if isinstance(value, str):
        try:
            value = parse_json(value, path, line)
        except DataError:
            raise DataError(path, line, field, f"expected a list of ids like \"[2, 9]\", got {shown(value)}") from None
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise DataError(path, line, field, f"expected a list of integer ids, got {shown(value)}")
    return tuple(value)


def _subj_obj(caption: str, relation: str) -> tuple[str, str]:
    """``The cat is inside the fridge.`` -> (cat, fridge); empty strings when the shape differs."""
    body = caption.strip().rstrip(".")
    before, sep, after = body.partition(f" {relation} ")
    if not sep:
        return "", ""
    subj = before.removeprefix("The ").removeprefix("the ")
    for verb in (" is", " are"):
        subj = subj.removesuffix(verb)
    return subj.strip(), after.removeprefix("the ").strip()


def file_version(path: Path) -> str:
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def load_vsr_file(path: str | Path, split: str = "vsr", part: str | None = None) -> list[VSRExample]:
    """All records of one VSR JSON lines file; a malformed record raises :class:`DataError`."""
    path = Path(path)
    part = part or path.stem
    out: list[VSRExample] = []
    for line, rec in iter_jsonl(path):
        caption = require(rec, "caption", str, path, line).strip()
        relation = require(rec, "relation", str, path, line).strip()
        if not re.search(rf"\b{re.escape(relation)}\b", caption):  # its negation could not be written
            raise DataError(path, line, "caption", f"{shown(caption)} does not contain its relation {shown(relation)}")
        label = require(rec, "label", int, path, line)
        if label not in (0, 1):
            raise DataError(path, line, "label", f"expected 0 or 1, got {label}")
        subj, obj = rec.get("subj"), rec.get("obj")
        if not (isinstance(subj, str) and isinstance(obj, str)):
            subj, obj = _subj_obj(caption, relation)
        frame = rec.get("reference_frame")
        if frame is not None and not isinstance(frame, (int, float)):
            raise DataError(path, line, "reference_frame", f"expected a number or null, got {frame!r}")
        annotator = rec.get("annotator_id")
        out.append(VSRExample(
            id=f"{split}-{part}-{len(out):05d}", image=require(rec, "image", str, path, line).strip(),
            caption=caption, label=label, relation=relation, subj=subj, obj=obj,
            annotator_id=annotator if isinstance(annotator, int) else None,
            vote_true=_id_list(rec.get("vote_true_validator_id", []), path, line, "vote_true_validator_id"),
            vote_false=_id_list(rec.get("vote_false_validator_id", []), path, line, "vote_false_validator_id"),
            reference_frame=float(frame) if frame is not None else None))
    if not out:
        raise DataError(path, None, None, "file has no records")
    return out


def split_file(data_dir: str | Path, split: str, part: str) -> Path:
    """``DIR/split/part.jsonl``, also accepting DIR = the split folder itself."""
    if split not in SPLITS or part not in PARTS:
        raise UsageError(f"split must be one of {SPLITS} and part one of {PARTS}; got {split}/{part}")
    data_dir = Path(data_dir)
    for candidate in (data_dir / split / f"{part}.jsonl", data_dir / f"{part}.jsonl"):
        if candidate.exists():
            return candidate
    raise DataError(data_dir / split / f"{part}.jsonl", None, None,
                    "file not found: --data should be the VSR folder holding random/ and zeroshot/")


def load_vsr(data_dir: str | Path, split: str = "random", part: str = "test") -> list[VSRExample]:
    return load_vsr_file(split_file(data_dir, split, part), split=split, part=part)


def find_images(examples, images_dir: str | Path, subdirs: tuple[str, ...] = IMAGE_SUBDIRS
                ) -> tuple[dict[str, Path], list[str]]:
    """(example id -> image path, ids whose image is missing) for a COCO image folder; each
    example's ``image`` file name is looked for in ``images_dir`` and the given subfolders."""
    images_dir = Path(images_dir)
    found: dict[str, Path] = {}
    missing: list[str] = []
    for example in examples:
        for sub in subdirs:
            candidate = images_dir / sub / example.image
            if candidate.exists():
                found[example.id] = candidate
                break
        else:
            missing.append(example.id)
    return found, missing


def usable_images(examples, images_dir: str | Path, *, total: int, subdirs: tuple[str, ...] = IMAGE_SUBDIRS,
                  skip_missing: bool = False, limit: int | None = None, what: str = "examples"
                  ) -> tuple[dict[str, Path], list[str], dict[str, Any]]:
    """(example id -> image path, ids whose image is missing, coverage) for the examples of a
    benchmark. A missing image is refused, naming the first and the count, unless
    ``skip_missing`` (or ``limit``, a smoke test on part of a folder): never a silent gap.
    ``coverage`` (``summary.json``'s ``details.coverage``, the table's first line) says how many
    of the file's ``total`` examples are used and why the others are not."""
    found, missing = find_images(examples, images_dir, subdirs)
    if not found:
        raise DataError(images_dir, None, None, f"none of the {len(examples):,} images were found here: "
                        "--images should be the COCO folder (flat, or with "
                        f"{', '.join(s + '/' for s in subdirs if s)} inside)")
    if missing and not (skip_missing or limit):
        first = next(e.image for e in examples if e.id == missing[0])
        raise DataError(images_dir, None, None, f"{len(missing):,} of {len(examples):,} {what} have no "
                        f"image here (first: {first}); add the images, or pass --skip-missing to "
                        f"evaluate the {len(found):,} that have one (counted and recorded)")
    coverage = {"used": len(found), "total": total, "skipped_missing": len(missing),
                "skip_missing": skip_missing, "limit": limit}
    return found, missing, coverage


def without_images(examples, total: int, limit: int | None) -> tuple[dict[str, None], list[str], dict[str, Any]]:
    """What :func:`usable_images` returns for examples read without images (a blind audit):
    every example kept, its image None."""
    coverage = {"used": len(examples), "total": total, "skipped_missing": 0, "skip_missing": False, "limit": limit}
    return {e.id: None for e in examples}, [], coverage


def negate_caption(caption: str, relation: str) -> str:
    """The caption with its relation replaced by the relation's negation from the table.

    ``The cat is inside the refrigerator.`` -> ``The cat is outside the refrigerator.``; the
    relation is looked for after ``is``/``are`` first, so a relation word inside an object's
    name (``the hot dog is on the table``) is left alone.
    """
    import re

    table = relations()
    if relation not in table:
        raise KeyError(f"relation {relation!r} is not in the VSR relation table")
    negation = table[relation].negation
    verb = re.search(rf"\b(is|are)\s+{re.escape(relation)}\b", caption)
    if verb:
        start = verb.end() - len(relation)
        return caption[:start] + negation + caption[verb.end():]
    plain = re.search(rf"\b{re.escape(relation)}\b", caption)
    if not plain:
        raise UsageError(f"caption {caption!r} does not contain its relation {relation!r}")
    return caption[:plain.start()] + negation + caption[plain.end():]
