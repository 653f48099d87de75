"""Read and write the spatial-commonsense release format (JSON lines).

size / height records: ``{"text", "question", "obj_a", "obj_b", "label"}``, label 1 = obj_a
larger/taller. posrel records: ``{"text", "label", "obj_a", "obj_b"}``, label 0 inside, 1 above,
2 below, 3 beside; ``text`` may carry a trailing space. Our own posrel file adds the optional
fields ``action`` and ``pronoun``; when absent they are recovered from the text.

A malformed line raises :class:`DataError` naming the file, the line and the field; the whole
file is validated before anything is returned, so nothing is half-loaded.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from spatialprobe import tasks, validate
from spatialprobe.files import DataError, iter_jsonl, require, shown
from spatialprobe.records import Dataset, Instance
from spatialprobe.tasks.levels import capitalize_first, content_version, with_article

POSREL_CODES = {0: "inside", 1: "above", 2: "below", 3: "beside"}
POSREL_CODE_OF = {v: k for k, v in POSREL_CODES.items()}
_FEMALE = {"woman", "girl", "lady", "mother", "queen", "actress", "grandmother", "sister",
           "daughter", "wife", "aunt", "niece", "princess", "enchantress", "waitress", "nun"}


def pronoun_for(person: str) -> str:
    return "She" if person.lower() in _FEMALE else "He"


def _action_from_text(text: str, person: str, obj: str) -> str:
    match = re.match(rf"^\s*an?\s+{re.escape(person)}\s+(.*?)\s+the\s+{re.escape(obj)}\s*\.?\s*$",
                     text, flags=re.IGNORECASE)
    return match.group(1) if match else ""


def guess_task(path: str | Path) -> str:
    """The task a release file holds, from its first record (posrel has no ``question``)."""
    for line, record in iter_jsonl(path):
        if "question" in record and "obj_a" in record:
            words = set(re.findall(r"[a-z]+", str(record["question"]).lower()))
            found = [t for t in tasks.comparisons() if words & set(tasks.get(t).labels)]
            if len(found) != 1:
                raise DataError(path, line, "question", "names no comparison task's words "
                                f"({', '.join(w for t in tasks.comparisons() for w in tasks.labels_of(t))})")
            return found[0]
        if "obj_a" in record:
            return "posrel"
        raise DataError(path, line, "obj_a", "missing: not a spatial-commonsense release file")
    raise DataError(path, None, None, "file has no records")


def _check_question(rec: dict, task: str, label: int, path: Path, line: int) -> None:
    """A record's ``question`` must ask the task's question: a size file read as height or
    posrel would otherwise run, its labels read as the other task's ("0" as "inside")."""
    question = rec.get("question")
    if question is None:
        return
    if not isinstance(question, str):
        raise DataError(path, line, "question", f"expected str, got {shown(question)}")
    definition = tasks.get(task)
    words = set(re.findall(r"[a-z]+", question.lower()))
    if definition.is_comparison and words & set(definition.labels):
        return
    asked = [t for t in tasks.comparisons() if words & set(tasks.labels_of(t))]
    wanted = (f"'{definition.question_word}'" if definition.is_comparison
              else "its records have no question")
    raise DataError(path, line, "question", f"{shown(question)} is not a {task} question ({wanted}), "
                    f"so its label {label} is not a {task} label"
                    + (f"; is this a {asked[0]} file?" if asked else ""))


def _comparison(rec: dict, task: str, number: int, obj_a: str, obj_b: str, label: int,
                path: Path, line: int) -> Instance:
    if label not in (0, 1):
        raise DataError(path, line, "label", f"expected 0 or 1, got {label}")
    _check_question(rec, task, label, path, line)
    labels = tasks.get(task).labels
    text = validate.text(rec, "text", path, line, optional=True)
    if text and "question" not in rec and _action_from_text(text, obj_a, obj_b):
        raise DataError(path, line, "text", f"{shown(text)} is a posrel scenario, not a {task} comparison, "
                        f"so its label {label} is not a {task} label; is this a posrel file?")
    text = text or capitalize_first(f"{with_article(obj_a)} and {with_article(obj_b)}.")
    return Instance(id=f"{task}-{number:04d}", task=task, obj_a=obj_a, obj_b=obj_b,
                    label=labels[0] if label == 1 else labels[1], text=text.strip(),
                    fold_keys=(obj_a, obj_b))


def _position(rec: dict, task: str, number: int, obj_a: str, obj_b: str, label: int,
              path: Path, line: int) -> Instance:
    if label not in POSREL_CODES:
        raise DataError(path, line, "label", f"expected 0-3 (inside/above/below/beside), got {label}")
    _check_question(rec, task, label, path, line)
    text = str(validate.text(rec, "text", path, line)).strip()
    action = validate.text(rec, "action", path, line, optional=True) or _action_from_text(text, obj_a, obj_b)
    pronoun = validate.text(rec, "pronoun", path, line, optional=True) or pronoun_for(obj_a)
    return Instance(id=f"{task}-{number:04d}", task=task, obj_a=obj_a, obj_b=obj_b,
                    label=POSREL_CODES[label], text=text, action=action, pronoun=pronoun,
                    fold_keys=(obj_b,))


def load_release(path: str | Path, task: str | None = None) -> Dataset:
    """Load a release-format file of the given (or guessed) task; every record is checked
    against the task (its labels, its question, its fields' types) before anything returns."""
    path = Path(path)
    task = validate.task_name(task) if task else guess_task(path)
    read = _comparison if tasks.get(task).is_comparison else _position
    instances: list[Instance] = []
    for line, rec in iter_jsonl(path):
        obj_a = str(validate.identifier(rec, "obj_a", path, line)).strip()
        obj_b = str(validate.identifier(rec, "obj_b", path, line)).strip()
        label = require(rec, "label", int, path, line)
        instances.append(read(rec, task, len(instances), obj_a, obj_b, label, path, line))
    if not instances:
        raise DataError(path, None, None, "file has no records")
    inst = tuple(instances)
    labels = tasks.get(task).labels
    return Dataset(name=path.name, version=content_version(path.stem, inst), task=task,
                   labels=labels, instances=inst)


def to_release_records(dataset: Dataset) -> list[dict[str, Any]]:
    """The dataset as release-format records (export, and a round trip through the loader)."""
    rows = []
    for inst in dataset.instances:
        if not tasks.get(dataset.task).is_comparison:
            row = {"text": inst.text, "label": POSREL_CODE_OF[inst.label],
                   "obj_a": inst.obj_a, "obj_b": inst.obj_b}
            if inst.action:
                row["action"] = inst.action
            if inst.pronoun:
                row["pronoun"] = inst.pronoun
        else:
            word = tasks.get(dataset.task).question_word
            row = {"text": inst.text,
                   "question": f"Is {with_article(inst.obj_a)} {word} than {with_article(inst.obj_b)}?",
                   "obj_a": inst.obj_a, "obj_b": inst.obj_b,
                   "label": int(inst.label == dataset.labels[0])}
        rows.append(row)
    return rows
