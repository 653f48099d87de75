"""VSR (Liu, Emerson, Collier 2023): is the caption true of its COCO image?

Wordings: ``question`` (a yes/no question about the caption, for chat models) and
``contrastive`` (the caption against the caption with its relation negated, from
``spatialprobe/data/vsr_relations.tsv``: the caption wins - ``yes`` - only where it scores strictly
higher, as the CLIP baseline of the paper). Labels ``yes``/``no`` for every family; resampled by
COCO image; official metrics: accuracy (with its breakdown per relation category and per
relation) and macro-F1. A relation without a category (``congruent``) counts overall and per
relation but in no category, as the VSR authors' script. Each item states its fact (subject,
relation, object) - the relation as ``not RELATION`` where the caption is false - which
``spatialprobe report --by fact`` joins with other runs.

The loader and relation table:
Each JSON lines record: ``image`` (COCO 2017 file name), ``caption``, ``label`` (1 true, 0 false),
``relation``, ``annotator_id``, ``vote_true_validator_id``/``vote_false_validator_id`` (lists, or
strings such as ``"[2, 9]"`` as released), and ``reference_frame`` (random split) or
``subj``/``obj`` (zero-shot split). Unknown extra keys are ignored. Splits live in
``DIR/{random,zeroshot}/{train,dev,test}.jsonl``.

Images are read from a COCO folder the user names (the file itself, or under ``train2017/``
or ``val2017/``); records whose image is missing are reported, not fatal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, Wording
from spatialprobe.benchmarks.coco_images import file_version, usable_images, without_images
from spatialprobe.errors import UsageError
from spatialprobe.files import DataError, iter_jsonl, parse_json, require, shown
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

SPLITS = ("random", "zeroshot")
PARTS = ("train", "dev", "test")
CATEGORIES = ("Adjacency", "Directional", "Orientation", "Projective", "Proximity",
              "Topological", "Unallocated")
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


QUESTION = "Is this caption true of the image? Caption: {caption} Answer yes or no."
OFFICIAL = (Official({"accuracy": "accuracy", "macro_f1": "macro_f1"}, ("category", "relation")),)


def _contrastive(caption: str, relation: str) -> Wording:
    """Negation first, so that a tie (the first of equal scores wins) answers ``no``."""
    return Wording("", (negate_caption(caption, relation), caption), ("no", "yes"))


def vsr_source(path: Path, images_dir: Path | None, split: str = "random", part: str = "test",
               limit: int | None = None, skip_missing: bool = False) -> tuple[Source, dict[str, Any]]:
    """VSR's captions with their images (those found; ``skip_missing`` or refused); ``images_dir``
    None: the captions alone, without images (a blind audit, ``spatialprobe audit blind``)."""
    every = load_vsr_file(path, split=split, part=part)
    examples = every[:limit]
    table = relations()
    for example in examples:  # every relation has a negation, checked before any model runs
        if example.relation not in table:
            raise UsageError(f"{path}: example {example.id} has relation {example.relation!r}, which "
                             "is not among the 71 of spatialprobe/data/vsr_relations.tsv")
    found, missing, coverage = (usable_images(examples, images_dir, total=len(every), skip_missing=skip_missing,
                                                  limit=limit) if images_dir is not None
                                else without_images(examples, len(every), limit))
    items = tuple(SourceItem(e.id, QUESTION.format(caption=e.caption), ("Yes", "No"), ("yes", "no"),
                             "yes" if e.label == 1 else "no", None if found[e.id] is None else str(found[e.id]),
                             (e.subj, e.obj, e.image),
                             {"image": e.image, "relation": e.relation,
                              "category": table[e.relation].category},
                             {"contrastive": _contrastive(e.caption, e.relation)},
                             fact=(e.subj, e.relation if e.label == 1 else f"not {e.relation}", e.obj))
                  for e in examples if e.id in found)
    train = path.parent / "train.jsonl"  # the answer prior: the training split's majority
    prior = (tuple("yes" if e.label == 1 else "no" for e in load_vsr_file(train, split=split, part="train"))
             if part != "train" and train.is_file() else None)
    spec = Resampling(("yes", "no"), ("image",), key=("instance_id",), pooled=True, unit="images")
    settings = {"name": "vsr", "data": {"file": str(path.resolve()), "version": file_version(path)},
                "images": images_dir and str(images_dir.resolve()), "split": split, "part": part, "limit": limit,
                "skip_missing": skip_missing}
    source = Source("vsr", f"vsr-{split}", f"vsr-{split}-{part}@{file_version(path)}", ("yes", "no"),
                    items, spec, prior_labels=prior, official=OFFICIAL, settings=settings, extras=plot,
                    details={"total": coverage["total"], "coverage_detail": coverage, "what": "examples",
                             "missing_images": sorted({e.image for e in examples if e.id in set(missing)})[:50]})
    return source, settings


def panels(summary: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """{"per category": {group: {accuracy, n, ci}}, "per relation": ...} from a summary's breakdown
    (``ci`` only where the run has intervals)."""
    out: dict[str, dict[str, dict[str, Any]]] = {"per category": {}, "per relation": {}}
    for part, metric in summary["metrics"]["accuracy"].get("breakdown", {}).items():
        key, group = part.split(" ", 1)
        out[f"per {key}"][group] = {"accuracy": metric["mean"], "n": metric["n"],
                                    **({"ci": metric["ci"]} if "ci" in metric else {})}
    return out


def write_plot(run: Any, summary: Mapping[str, Any], title: str) -> None:
    """``accuracy.png`` (written atomically by the plot) when anything was scored."""
    if not summary["accuracy"]["n"]:
        return
    from spatialprobe.reports.vl_plots import accuracy_bars

    accuracy_bars(panels(summary), run.file("accuracy.png"), title)


def plot(run: Any, summary: Mapping[str, Any]) -> None:
    """The source's extra file: ``accuracy.png``, accuracy per category and per relation."""
    write_plot(run, summary, f"VSR: {summary['model']}")


@component("source", "vsr", "VSR captions: yes/no question or caption vs negation")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of a run's recorded ``source`` settings."""
    images = settings["images"]
    return vsr_source(Path(settings["data"]["file"]), images and Path(images), settings["split"],
                      settings["part"], settings["limit"], settings["skip_missing"])[0]


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in VSR's layout (:mod:`spatialprobe.benchmarks.demo_copy`): ``random/`` and
    ``zeroshot/`` of ``train``/``dev``/``test.jsonl`` and COCO-named images in ``images/val2017/``,
    each caption true or false of its drawn image."""
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng = random.Random(seed)
    words = {"left": "left of", "right": "right of", "above": "above", "below": "below"}
    for split in SPLITS:
        for part in PARTS:
            rows = []
            for k in range(12):
                scene, label = d.pair(rng), k % 2
                image = f"{rng.randrange(10 ** 11, 10 ** 12):012d}.jpg"
                d.save(d.draw(scene), folder / "images" / "val2017" / image)
                relation = words[scene.relation if label else d.OPPOSITE[scene.relation]]
                caption = f"The {scene.a} is {relation} the {scene.b}."
                rows.append({"image": image, "caption": caption, "label": label, "relation": relation,
                             "subj": scene.a, "obj": scene.b, "annotator_id": 0,
                             "vote_true_validator_id": [], "vote_false_validator_id": []})
            d.write_jsonl(folder / split / f"{part}.jsonl", rows)
    return d.Demo(folder, images=folder / "images", model="clip")
