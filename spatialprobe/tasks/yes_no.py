"""Yes/no spatial question sets built from the size, height and posrel datasets.

- size / height: every comparison instance gives two questions, "Is an ant larger than a bird?"
  and "Is an ant smaller than a bird?", one answered yes and one no, so the set is exactly
  balanced. The scenario text ("An ant and a bird.") is kept as the optional context.
- posrel: every scenario gives the question about its gold relation (yes) and one distractor
  (no), in that order, as in the spatial-commonsense release (``data/posrel/data_qa.json``):
  "A man drives the car. Is the man inside the car?" / "... Is the man beside the car?".
  Relations are worded as the release words them: above -> ``on``, below -> ``under``.
  The distractor of inside/above/below is ``beside``; the distractor of beside is the relation
  of the other action on the same object (the dataset pairs each object with two actions that
  give different relations), falling back to ``inside`` when the object has no other relation.

Release format (``posrel_qa.jsonl``): ``{"question", "label"}`` with label 1 = yes, two lines
per posrel record in order. We write the same fields and add optional ``id``, ``task``,
``instance_id``, ``context``, ``relation``; :func:`load_qa` reads both.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spatialprobe import tasks, validate
from spatialprobe.errors import UsageError
from spatialprobe.files import DataError, iter_jsonl, require, shown
from spatialprobe.records import Dataset, _Serializable
from spatialprobe.tasks.levels import capitalize_first, content_version, with_article

RELATION_WORDS = {"inside": "inside", "above": "on", "below": "under", "beside": "beside"}
_WORD_RELATION = {word: rel for rel, word in RELATION_WORDS.items()}


@dataclass(frozen=True)
class QAItem(_Serializable):
    """One yes/no question about one dataset instance."""

    id: str
    """Stable id: ``<instance id>-q0`` / ``-q1``."""
    task: str
    """``size``, ``height`` or ``posrel``."""
    question: str
    """The question alone: ``Is the man inside the car?``."""
    answer: str
    """Gold answer: ``yes`` or ``no``."""
    instance_id: str
    """Id of the dataset instance (= image store ``prompt_id`` of its synthesized images)."""
    context: str = ""
    """The scenario the question is about (``A man drives the car.``); may be empty."""
    relation: str = ""
    """What the question asks: a relation (posrel) or a comparative (``larger``...)."""

    @property
    def full_text(self) -> str:
        """Context and question in one string, as the release writes them."""
        return f"{self.context} {self.question}".strip()


@dataclass(frozen=True)
class QASet:
    """A named, versioned list of questions."""

    name: str
    """Source dataset name (or file name)."""
    version: str
    """Content hash of the items."""
    task: str
    """Task of the source dataset."""
    items: tuple[QAItem, ...]
    """Questions in order: for each instance its true question first, then the distractor."""

    def __len__(self) -> int:
        return len(self.items)


def _comparison_items(dataset: Dataset) -> list[QAItem]:
    words = tasks.get(dataset.task).labels
    items = []
    for inst in dataset.instances:
        a_first = inst.label == dataset.labels[0]  # obj_a is larger/taller
        for index, word in enumerate(words):
            yes = a_first == (index == 0)
            question = f"Is {with_article(inst.obj_a)} {word} than {with_article(inst.obj_b)}?"
            items.append(QAItem(f"{inst.id}-q{index}", dataset.task, question, "yes" if yes else "no",
                                inst.id, inst.text, word))
    return items


def posrel_distractor(relation: str, others: list[str]) -> str:
    """The distractor relation (see the module docstring); ``others``: relations of the object."""
    if relation != "beside":
        return "beside"
    candidates = Counter(r for r in others if r != "beside")
    return candidates.most_common(1)[0][0] if candidates else "inside"


def posrel_question(person: str, relation: str, obj: str) -> str:
    return f"Is the {person} {RELATION_WORDS[relation]} the {obj}?"


def _posrel_items(dataset: Dataset) -> list[QAItem]:
    relations_of = defaultdict(list)
    for inst in dataset.instances:
        relations_of[inst.obj_b].append(inst.label)
    items = []
    for inst in dataset.instances:
        context = capitalize_first(inst.text.strip())
        distractor = posrel_distractor(inst.label, relations_of[inst.obj_b])
        for index, (rel, answer) in enumerate(((inst.label, "yes"), (distractor, "no"))):
            items.append(QAItem(f"{inst.id}-q{index}", dataset.task,
                                posrel_question(inst.obj_a, rel, inst.obj_b), answer, inst.id,
                                context, rel))
    return items


def build_qa(dataset: Dataset) -> QASet:
    """The balanced yes/no question set of a size, height or posrel dataset."""
    if not tasks.get(dataset.task).is_comparison:  # position: distractors as the release's posrel QA file
        items = _posrel_items(dataset)
    elif tasks.get(dataset.task).is_comparison:
        items = _comparison_items(dataset)
    else:
        raise UsageError(f"No QA set is defined for task {dataset.task!r}.")
    inst = tuple(items)
    return QASet(dataset.name, content_version(f"{dataset.name}-qa", inst), dataset.task, inst)


def to_qa_records(qa: QASet) -> list[dict[str, Any]]:
    """Release-format records (``question`` with the context, ``label`` 1 = yes) plus our fields."""
    return [{"question": item.full_text, "label": int(item.answer == "yes"), "id": item.id,
             "task": item.task, "instance_id": item.instance_id, "context": item.context,
             "relation": item.relation} for item in qa.items]


_SPLIT = re.compile(r"^(?P<context>.*?[.!])?\s*(?P<question>(Is|Are|Does|Do|Can)\b.*\?)\s*$")
_ASKED = re.compile(r"\bis (?:the|an?) .+? (?P<word>inside|on|under|beside|larger|smaller|taller|"
                    r"shorter) (?:than )?(?:the|an?) ", re.IGNORECASE)


def asked_objects(question: str) -> tuple[str, str] | None:
    """The two things a question of :func:`build_qa`'s wording names - ``Is an ant larger than a
    bird?`` -> ``("ant", "bird")``, ``Is the man inside the car?`` -> ``("man", "car")`` - or None
    for a question worded otherwise."""
    words = [*RELATION_WORDS.values(), *(w for t in tasks.comparisons() for w in tasks.labels_of(t))]
    found = re.fullmatch(r"\s*is (?:the|an?) (?P<a>.+?) (?:" + "|".join(map(re.escape, words))
                         + r")(?: than)? (?:the|an?) (?P<b>.+?)\s*\?\s*", question, re.IGNORECASE)
    return (found.group("a"), found.group("b")) if found else None


def _relations(task: str) -> tuple[str, ...]:
    """What a question of ``task`` may ask: a relation (posrel) or the task's two label words."""
    return tuple(RELATION_WORDS) if not tasks.get(task).is_comparison else tasks.labels_of(task)


def _qa_item(rec: dict, number: int, task: str | None, path: Path, line: int) -> QAItem:
    """One QA record, every field checked: its types, its task and the relation it asks."""
    full = str(validate.text(rec, "question", path, line)).strip()
    label = require(rec, "label", int, path, line)
    if label not in (0, 1):
        raise DataError(path, line, "label", f"expected 0 or 1, got {label}")
    match = _SPLIT.match(full)
    if match is None:
        raise DataError(path, line, "question", f"no yes/no question found in {shown(full)}")
    context = validate.text(rec, "context", path, line, optional=True) if rec.get("context") != "" else ""
    if context is None:  # absent or null: the sentence before the question, if any
        context = match.group("context") or ""
    context = context.strip()
    question = full[len(context):].strip() if full.startswith(context) else match.group("question")
    asked = _ASKED.search(question)
    relation = validate.text(rec, "relation", path, line, optional=True) or (
        _WORD_RELATION.get(asked.group("word").lower(), asked.group("word").lower()) if asked else "")
    task_of_word = {w: t for t in tasks.comparisons() for w in tasks.labels_of(t)}
    rec_task = validate.text(rec, "task", path, line, optional=True)
    if rec_task is not None:
        validate.known_task(rec_task, path, line)
        if task is not None and rec_task != task:
            raise DataError(path, line, "task", f"is {shown(rec_task)}, not the {task} asked for")
    rec_task = rec_task or task or task_of_word.get(relation, "posrel")
    if relation and relation not in _relations(rec_task):
        raise DataError(path, line, "relation", f"{shown(relation)} is not a {rec_task} relation "
                                                f"({', '.join(_relations(rec_task))})")
    instance_id = (validate.identifier(rec, "instance_id", path, line, optional=True)
                   or f"{rec_task}-{number // 2:04d}")
    item_id = validate.identifier(rec, "id", path, line, optional=True) or f"{instance_id}-q{number % 2}"
    return QAItem(item_id, rec_task, question, "yes" if label == 1 else "no", instance_id, context, relation)


def load_qa(path: str | Path, task: str | None = None) -> QASet:
    """Read a QA file: the release's ``posrel_qa.jsonl`` or one written by :func:`to_qa_records`.

    Release records carry no ids: record ``n`` is about posrel instance ``n // 2`` (two
    questions per scenario), which is the id ``load_release`` gives that scenario.
    """
    path = Path(path)
    items: list[QAItem] = []
    ids = validate.Unique(path, "id")
    for line, rec in iter_jsonl(path):
        item = _qa_item(rec, len(items), task, path, line)
        ids.add(item.id, line)
        items.append(item)
    if not items:
        raise DataError(path, None, None, "file has no records")
    inst = tuple(items)
    return QASet(path.name, content_version(path.stem, inst), items[0].task, inst)


def questions_for(task: str | None, data: str | Path | None = None) -> tuple[QASet, str]:
    """The question set of a task (built-in dataset) or of a file, and a ``name@version`` label.

    ``data`` may be a QA file (records with ``question`` and no ``obj_a``: the release's
    ``posrel_qa.jsonl`` or our export) or any dataset file ``datasets.load`` reads.
    """
    from spatialprobe.tasks.data import load

    if data is None:
        if task is None:
            raise UsageError("Give a task (size, height, posrel) or a data file.")
        dataset = load(task)
        return build_qa(dataset), f"{dataset.name}@{dataset.version}"
    path = Path(data)
    for _, record in iter_jsonl(path):
        if "question" in record and "obj_a" not in record:
            qa = load_qa(path, task)
            return qa, f"{qa.name}@{qa.version}"
        break
    dataset = load(str(path), task=task)
    return build_qa(dataset), f"{dataset.name}@{dataset.version}"
