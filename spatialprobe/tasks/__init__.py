"""Tasks as data: one JSON file per task in this folder, registered like every other component.

A task file says everything the toolkit needs to know about a task (fields of :class:`Task`):
its labels, the question word of the release format, the placeholders a template must hold, its
candidates file (``spatialprobe/tasks/candidates/``), the rule that judges its images, the question
a human annotator is asked, and its built-in data: the object levels of a comparison task (every
cross-level pair in both orders is an instance) or a release-format file of a position task.
Adding a task is adding a file here and its candidates file; no code changes.

The modules beside hold the tasks' data: the built-in sets and any release-format file
(:mod:`.data`, :mod:`.release`), comparison files of object pairs (:mod:`.pairs`), object levels
(:mod:`.levels`), object-disjoint folds (:mod:`.folds`), where a dataset came from (:mod:`.origin`),
the probe's data checks (:mod:`.probe_data`), yes/no question sets (:mod:`.yes_no`) and SR2D
(:mod:`.sr2d`). The probe, the synthesizer, the judges and the engine's ``task`` benchmark read them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from spatialprobe.errors import UsageError

QUESTION_KEYS = frozenset({"choice", "choice_options", "yes_no", "words", "annotation"})
COMPARISON = "comparison"
POSITION = "position"


@dataclass(frozen=True)
class Task:
    """One task, as its JSON file states it."""

    name: str
    """Task name, e.g. ``size``."""
    kind: str
    """``comparison`` (is the first object X-er than the second?) or ``position`` (a relation)."""
    labels: tuple[str, ...]
    """Canonical label words; for comparisons (X-er, Y-er) with the first meaning "first is X-er"."""
    placeholders: tuple[str, ...]
    """Placeholders every prompt template of the task must hold."""
    candidates: str
    """File name of the built-in candidates in ``spatialprobe/tasks/candidates/``."""
    questions: Mapping[str, Any]
    """How the task is asked of a model that answers questions, and of a person (data, so a new
    task needs no code; :mod:`spatialprobe.prompts.questions` reads it):

    * ``choice``: the multiple-choice question, with the template placeholders (``[A]``, ``[B]``,
      ``[SCENARIO]``, ``[PERSON]``, ``[OBJECT]``) and ``[OPTIONS]`` for the listed options;
    * ``choice_options``: what answers it: ``objects`` (the two objects: the first means the first
      label) or ``labels`` (the label words);
    * ``yes_no``: a yes/no question about one label, ``[WORD]`` standing for the label's word;
    * ``words``: each label's word in the yes/no question (``above`` -> ``on``);
    * ``annotation``: what a human annotator is asked, with ``{a}`` and ``{b}`` for the objects."""
    judge_rule: str | None = None
    """How images are judged: ``area*depth^2``, ``height*depth``, ``position``; None: not visible."""
    question_word: str | None = None
    """Comparisons: the word of the release format's ``question`` ("Is A larger than B?")."""
    description: str = ""
    """One line for ``spatialprobe ls``."""
    source: str = ""
    """Where the task's built-in data (levels, data file) comes from."""
    order: int = 99
    """Position in tables (paper order first)."""
    levels: tuple[tuple[str, ...], ...] = ()
    """Comparisons: the built-in objects by level, smallest first."""
    data: str | None = None
    """Position tasks: the built-in dataset, a release-format file in ``spatialprobe/tasks/``."""

    @property
    def is_comparison(self) -> bool:
        return self.kind == COMPARISON

    @property
    def object_fields(self) -> tuple[str, ...]:
        """The instance fields naming the objects its instances were sampled by (its fold keys, the
        clusters of its bootstrap intervals): both objects of a comparison; the object
        (``obj_b``), not the person (``obj_a``), of a position task."""
        return ("obj_a", "obj_b") if self.is_comparison else ("obj_b",)

    @property
    def has_builtin_data(self) -> bool:
        return bool(self.levels) or self.data is not None

    @property
    def annotation_question(self) -> str:
        return str(self.questions["annotation"])

    def question(self, a: str, b: str) -> str:
        return self.annotation_question.format(a=a, b=b)


def _from_json(data: dict[str, Any], source: str) -> Task:
    fields = set(Task.__dataclass_fields__)
    unknown = sorted(set(data) - fields)
    if unknown:
        raise UsageError(f"{source}: unknown task field(s) {unknown}; known: {sorted(fields)}")
    try:
        task = Task(**{**data, "labels": tuple(data["labels"]),
                       "placeholders": tuple(data["placeholders"]),
                       "levels": tuple(tuple(level) for level in data.get("levels", ()))})
    except (KeyError, TypeError) as err:
        raise UsageError(f"{source}: not a task definition ({err})") from err
    if source.endswith(".json") and source.rsplit("/", 1)[-1] != f"{task.name}.json":
        raise UsageError(f"{source}: a task file is named after its task ({task.name}.json)")
    missing = sorted(QUESTION_KEYS - set(task.questions))
    if missing:
        raise UsageError(f"{source}: its questions block lacks {missing}")
    unworded = [label for label in task.labels if label not in task.questions["words"]]
    if unworded:
        raise UsageError(f"{source}: questions.words has no word for the label(s) {unworded}")
    if task.questions["choice_options"] not in ("objects", "labels"):
        raise UsageError(f"{source}: questions.choice_options must be 'objects' or 'labels'")
    if task.kind not in (COMPARISON, POSITION):
        raise UsageError(f"{source}: kind must be {COMPARISON!r} or {POSITION!r}, not {task.kind!r}")
    if task.is_comparison and (len(task.labels) != 2 or not task.question_word):
        raise UsageError(f"{source}: a comparison task has two labels and a question_word")
    return task


@cache
def _all() -> dict[str, Task]:
    found = {}
    for entry in resources.files(__name__).iterdir():
        if entry.name.endswith(".json"):
            task = _from_json(json.loads(entry.read_text(encoding="utf-8")), f"tasks/{entry.name}")
            found[task.name] = task
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))


def names() -> list[str]:
    """Every task, in table order."""
    return list(_all())


def get(name: str) -> Task:
    """The task called ``name``; an unknown name gets the registry's "did you mean" error."""
    tasks = _all()
    if name not in tasks:
        from spatialprobe.registry import lookup

        lookup("task", name)  # raises UnknownComponent naming the close matches
    return tasks[name]


def labels_of(name: str) -> tuple[str, ...]:
    return get(name).labels


def comparisons() -> list[str]:
    return [name for name, task in _all().items() if task.is_comparison]


def __getattr__(name: str) -> Task:  # so the registry's "module:attr" targets resolve to tasks
    tasks = _all()
    if name in tasks:
        return tasks[name]
    raise AttributeError(name)
