"""SpatialMQA (Liu et al. 2025): a question about a COCO image with 2-6 lettered options.

Wordings: ``question`` (lettered options) and ``contrastive`` (each option in the template
``{option}: {question}`` scored against the image). The official metrics, for every family:
accuracy, macro-F1 over the relations in gold, macro precision and recall and the benchmark's
F1 = 2PR/(P+R) (``Code/eval/calculate_prf1.py``), broken down per perspective and per axis, under
the authors' lenient reader (``spatialmqa``, :mod:`spatialprobe.readers.spatialmqa`: right where
the lower-cased reply is part of the gold answer or holds it, as the experiment scripts and
``calculate_xyz.py`` run - its on/above clause changes nothing as the file runs; a reply that is
an option's letter stands for its text) and each again as its ``strict_`` twin (``strict``: the
reply is exactly an option's letter or text). The paper's table is the lenient one: the
experiment scripts write the lenient verdict (``result``) that ``calculate_xyz.py`` and
``calculate_prf1.py`` read. A row's ``pred`` is the lenient reading (the gold answer where right,
else the first relation holding the reply; also kept as ``pred_lenient``), ``pred_strict`` the
strict one.

``wording="legacy-generate"`` (recorded in the source settings only where given): the ``question``
wording is the retired spatialmqa kind's generate prompt, verbatim (:data:`LEGACY_PROMPT`, options
joined by ``; ``), and every reply is read as that kind read it (``spatialmqa-legacy``: its
lenient rule with the on/above clause applied; ``strict`` as for every source, which reads a bare
letter as its option where the retired kind read none), so that a migrated run of its generate
method (:mod:`spatialprobe.engine.legacy`) asks and scores as it did.

The records:
Records are JSON lines ``{"image", "question", "options", "answer"}`` (2-6 options; answers
among ``left of, right of, in front of, behind, on/above, below``). Records carry no id, so
each gets ``{part}-{index:05d}`` plus a content hash of image, question and answer. Unexpected
extra keys (the release has at least one, ``",answer"``) are kept by name in
``MQAExample.extra_keys`` and listed by :func:`extra_key_report`, never fatal.

**Perspective** (question type), derived from the question text by these rules, in order:

1. ``outside`` - the question does not place the reader in the scene (no ``if/suppose/imagine
   ... you`` and no ``you are/were the|a|standing|sitting``): an observer outside the image.
2. ``first`` - the reader is placed in the scene and the relation is to the reader
   (``relative to you``, ``in relation to you``, ``side of you``, ``of you``, ...), or no other
   reference object is named (``If you were the man, where would the sun be?``).
3. ``third`` - the reader is placed in the scene but the relation is between two other things
   (``from your perspective, where is the cup relative to the laptop?``); ``side of the image``
   does not count as a reference object.

On the released test split these rules give 452 outside / 586 first / 38 third; the authors'
own rule files hold 452 / 590 / 34.

**Axis** comes from the gold answer: ``x`` (left of, right of), ``y`` (on/above, below),
``z`` (in front of, behind).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, Wording
from spatialprobe.benchmarks.coco_images import file_version, usable_images, without_images
from spatialprobe.errors import UsageError
from spatialprobe.files import DataError, iter_jsonl, require, shown
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

PARTS = ("train", "dev", "test")
KNOWN_KEYS = frozenset({"image", "question", "options", "answer", "id"})
AXIS_OF = {"left of": "x", "right of": "x", "on/above": "y", "above": "y", "on": "y",
           "below": "y", "in front of": "z", "behind": "z"}
PERSPECTIVES = ("outside", "first", "third")

_PLACED = re.compile(r"\b(if|suppose|imagine|assume|assuming|when)\b[^?]*\byou\b"
                     r"|\byou (are|were) (standing|sitting|the|a|an)\b", re.IGNORECASE)
_TO_YOU = re.compile(r"\b(relative to|in relation to|with respect to|compared to|side of|of|to|"
                     r"from|in|toward|towards) you\b", re.IGNORECASE)
_OTHER_REFERENCE = re.compile(
    r"\b(relative to|in relation to|with respect to|compared to|side of|left of|right of|"
    r"left or right of|above or below|in front of or behind)\s+(the|a|an|this|that|his|her|its|"
    r"their)\s+(?!(image|picture|photo)\b)", re.IGNORECASE)


@dataclass(frozen=True)
class MQAExample:
    """One multiple-choice question about an image."""

    id: str
    """Stable id: ``{part}-{index:05d}`` (index = record order in the file)."""
    content_hash: str
    """First 12 hex digits of sha256(image, question, answer): the same record anywhere."""
    image: str
    """COCO test2017 file name."""
    question: str
    """The question text."""
    options: tuple[str, ...]
    """Answer options as released, in order."""
    answer: str
    """The gold option."""
    perspective: str
    """``outside``, ``first`` or ``third`` (see the module docstring for the rules)."""
    axis: str
    """``x``, ``y`` or ``z`` from the gold answer; ``?`` for an answer outside the six relations."""
    extra_keys: tuple[str, ...] = ()
    """Keys the record carried beyond image/question/options/answer."""


def perspective(question: str) -> str:
    """Question type by perspective: ``outside``, ``first`` or ``third``."""
    if not _PLACED.search(question):
        return "outside"
    if _TO_YOU.search(question) or not _OTHER_REFERENCE.search(question):
        return "first"
    return "third"


def axis(answer: str) -> str:
    return AXIS_OF.get(answer.strip().lower(), "?")


def load_spatialmqa_file(path: str | Path, part: str | None = None) -> list[MQAExample]:
    """All records of one SpatialMQA JSON lines file; malformed records raise DataError."""
    path = Path(path)
    part = part or path.stem
    out: list[MQAExample] = []
    for line, rec in iter_jsonl(path):
        image = require(rec, "image", str, path, line).strip()
        question = require(rec, "question", str, path, line).strip()
        options = require(rec, "options", list, path, line)
        if not 2 <= len(options) <= 6 or not all(isinstance(o, str) and o.strip() for o in options):
            raise DataError(path, line, "options", f"expected 2-6 non-empty strings, got {shown(options)}")
        seen = [o.strip() for o in options]
        twice = next((o for n, o in enumerate(seen) if o in seen[:n]), None)
        if twice is not None:  # a repeated option would make one answer two choices
            raise DataError(path, line, "options", f"{shown(twice)} is given twice; each option must be a "
                            "different answer")
        answer = require(rec, "answer", str, path, line).strip()
        if answer not in options:
            raise DataError(path, line, "answer", f"{shown(answer)} is not one of the options {shown(options)}")
        digest = hashlib.sha256("\x1f".join((image, question, answer)).encode()).hexdigest()[:12]
        out.append(MQAExample(
            id=f"{part}-{len(out):05d}", content_hash=digest, image=image, question=question,
            options=tuple(o.strip() for o in options), answer=answer,
            perspective=perspective(question), axis=axis(answer),
            extra_keys=tuple(sorted(k for k in rec if k not in KNOWN_KEYS))))
    if not out:
        raise DataError(path, None, None, "file has no records")
    return out


def load_spatialmqa(data_dir: str | Path, part: str = "test") -> list[MQAExample]:
    if part not in PARTS:
        raise UsageError(f"part must be one of {PARTS}, got {part!r}")
    return load_spatialmqa_file(Path(data_dir) / f"{part}.jsonl", part=part)


def extra_key_report(examples) -> dict[str, list[str]]:
    """Unexpected key -> ids of the records that carry it."""
    report: dict[str, list[str]] = {}
    for example in examples:
        for key in example.extra_keys:
            report.setdefault(key, []).append(example.id)
    return report


def counts(examples, field: str) -> dict[str, int]:
    return dict(sorted(Counter(getattr(e, field) for e in examples).items()))


QUESTION = "{question}\nOptions:\n{options}\nAnswer with the option's letter."
TEMPLATE = "{option}: {question}"
LEGACY_PROMPT = ("You are an expert in spatial relation reasoning. Look at the image and answer the "
                 "question by choosing exactly one of the options. Reply with the option only, no "
                 "explanation.\nQuestion: {question}\nOptions: {options}")
"""The retired spatialmqa kind's generate prompt (commit 6125a7a, ``models/mqa_models.py``)."""
LEGACY = "legacy-generate"
STATISTICS = {"accuracy": "accuracy", "macro_f1": "macro_f1_gold", "f1": "pr_f1_gold",
              "precision": "precision_gold", "recall": "recall_gold"}
OFFICIAL = (Official(STATISTICS, ("perspective", "axis")),)


def matching(item: SourceItem, output: str | None, label: str | None) -> dict[str, Any]:
    """``pred_lenient``: the official (lenient) reading under the name earlier runs gave it."""
    return {"pred_lenient": label or "--"}


def spatialmqa_source(path: Path, images_dir: Path | None, part: str = "test", limit: int | None = None,
                      skip_missing: bool = False, wording: str | None = None) -> tuple[Source, dict[str, Any]]:
    """SpatialMQA's questions with their images (those found; ``skip_missing`` or refused);
    ``images_dir`` None: the questions alone (a blind audit, ``spatialprobe audit blind``);
    ``wording`` :data:`LEGACY`: the retired kind's generate prompt and matching (module docstring)."""
    if wording not in (None, LEGACY):
        raise UsageError(f"the spatialmqa source's wording is {LEGACY} or none, not {wording!r}.")
    from spatialprobe.readers.option_parser import SPATIALMQA_LABEL_ORDER, spatialmqa_option

    every = load_spatialmqa_file(path, part=part)
    examples = every[:limit]
    found, missing, coverage = (usable_images(examples, images_dir, total=len(every),
                                              subdirs=("", "test2017", "images"), skip_missing=skip_missing,
                                              limit=limit, what="questions")
                                if images_dir is not None else without_images(examples, len(every), limit))
    before, _, after = TEMPLATE.partition("{option}")
    items = []
    for e in examples:
        if e.id not in found:
            continue
        lettered = "\n".join(f"{chr(65 + n)}. {o}" for n, o in enumerate(e.options))
        contrastive = Wording(before.format(question=e.question), e.options, e.options,
                              after.format(question=e.question))
        asked = (LEGACY_PROMPT.format(question=e.question, options="; ".join(e.options)) if wording
                 else QUESTION.format(question=e.question, options=lettered))
        items.append(SourceItem(e.id, asked, e.options,
                                e.options, e.answer, None if found[e.id] is None else str(found[e.id]), (e.image,),
                                {"image": e.image, "perspective": e.perspective, "axis": e.axis},
                                {"contrastive": contrastive}))
    train = path.parent / "train.jsonl"
    prior = (tuple(x.answer for x in load_spatialmqa_file(train, part="train"))
             if part != "train" and train.is_file() else None)
    spec = Resampling(tuple(SPATIALMQA_LABEL_ORDER), ("image",), key=("instance_id",), pooled=True,
                      unit="images", fold_case=True)
    settings = {"name": "spatialmqa", "data": {"file": str(path.resolve()), "version": file_version(path)},
                "images": images_dir and str(images_dir.resolve()), "part": part, "limit": limit,
                "skip_missing": skip_missing, **({"wording": wording} if wording else {})}
    source = Source("spatialmqa", "spatialmqa", f"spatialmqa-{part}@{file_version(path)}",
                    tuple(SPATIALMQA_LABEL_ORDER), tuple(items), spec, prior_labels=prior,
                    lenient=spatialmqa_option, official=OFFICIAL,
                    matching=matching, reader="spatialmqa-legacy" if wording else "spatialmqa",
                    settings=settings,
                    details={"total": coverage["total"], "coverage_detail": coverage, "what": "questions",
                             "missing_images": sorted({e.image for e in examples if e.id in set(missing)})[:50],
                             "extra_keys": extra_key_report(examples)})
    return source, settings


@component("source", "spatialmqa",
           "SpatialMQA lettered questions: lenient/strict, 2PR/(P+R) F1, per perspective and axis")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of a run's recorded ``source`` settings."""
    images = settings["images"]
    return spatialmqa_source(Path(settings["data"]["file"]), images and Path(images), settings["part"],
                             settings["limit"], settings["skip_missing"], settings.get("wording"))[0]


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in SpatialMQA's layout (:mod:`spatialprobe.benchmarks.demo_copy`):
    ``train``/``dev``/``test.jsonl`` and COCO-named images in ``images/test2017/``, each question's
    gold the relation drawn."""
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng = random.Random(seed)
    answer = {"left": "left of", "right": "right of", "above": "on/above", "below": "below"}
    for part in PARTS:
        rows = []
        for k in range(10):
            scene, question, relations, gold = d.lettered(rng, 2 + k % 3)
            image = f"{rng.randrange(10 ** 11, 10 ** 12):012d}.jpg"
            d.save(d.draw(scene), folder / "images" / "test2017" / image)
            rows.append({"image": image, "question": question, "options": [answer[r] for r in relations],
                         "answer": answer[relations[gold]]})
        d.write_jsonl(folder / f"{part}.jsonl", rows)
    return d.Demo(folder, images=folder / "images" / "test2017", model="clip")
