"""SpatialMQA (Liu et al., 2025): multiple-choice spatial questions on COCO test2017 images.

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
from dataclasses import dataclass
from pathlib import Path

from spatialprobe.errors import UsageError
from spatialprobe.files import DataError, iter_jsonl, require, shown

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
