"""Cloze templates, answer sets and the candidate sets that prompt selection searches.

Templates use placeholders that are filled per instance:

``[A]``, ``[B]``
    the two objects with their article (``an ant``, ``a bird``);
``[OBJECT]``, ``[PERSON]``
    the bare object / person of a posrel scenario (the template writes ``the [OBJECT]``);
``[SCENARIO]``
    the posrel scenario text (``A woman washes the car.``);
``[PRONOUN]``
    the pronoun for the person (``She``);
``[MASK]``
    where the answer goes; the scorer substitutes the model's own mask token(s).

A filled sentence gets its first letter capitalized. Candidate sets pair several templates with
several *answer sets*; answer set ``i`` takes the ``i``-th candidate word of every label (lists of
unequal length repeat their last word), so ``10 templates x 10 answer sets`` is 100 configurations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from spatialprobe import tasks
from spatialprobe.errors import UsageError
from spatialprobe.files import DataError, read_json_file, shown
from spatialprobe.records import Dataset, Instance, PromptConfig
from spatialprobe.tasks.levels import capitalize_first, with_article

MASK = "[MASK]"
PLACEHOLDERS = ("[A]", "[B]", "[OBJECT]", "[PERSON]", "[SCENARIO]", "[PRONOUN]", MASK)


@dataclass(frozen=True)
class Candidates:
    """Prompt templates and answer-word candidates for one task."""

    task: str
    """Task they belong to."""
    templates: tuple[str, ...] = field(metadata={"nonempty": True})
    """Template candidates; the first is the hand-written one."""
    answers: dict[str, tuple[str, ...]]
    """Answer-word candidates for each canonical label; the first is the label word itself."""
    source: str = "builtin"
    """Where they came from: ``manual``, ``builtin``, a file path, or ``backtranslate:...``."""

    def answer_sets(self, labels: tuple[str, ...]) -> list[tuple[str, ...]]:
        depth = max(len(self.answers[label]) for label in labels)
        return [tuple(self.answers[label][min(i, len(self.answers[label]) - 1)] for label in labels)
                for i in range(depth)]

    def configs(self, labels: tuple[str, ...]) -> list[PromptConfig]:
        return [PromptConfig(t, s) for t in self.templates for s in self.answer_sets(labels)]

    def to_dict(self) -> dict:
        return {"task": self.task, "source": self.source, "templates": list(self.templates),
                "answers": {k: list(v) for k, v in self.answers.items()}}


def manual(task: str) -> Candidates:
    """Only the hand-written prompt and the label words themselves."""
    full = builtin(task)
    return Candidates(task, full.templates[:1], {k: v[:1] for k, v in full.answers.items()}, "manual")


def builtin(task: str) -> Candidates:
    """The candidate file shipped with the package (``spatialprobe/tasks/candidates/TASK.json``)."""
    ref = resources.files("spatialprobe.tasks") / "candidates" / tasks.get(task).candidates
    if not ref.is_file():
        raise UsageError(f"No built-in candidates for task {task!r} (have size, height, posrel).")
    with resources.as_file(ref) as path:
        loaded = load_candidates(path, task)
    return Candidates(loaded.task, loaded.templates, loaded.answers, "builtin")


def resolve(spec: str, task: str) -> Candidates:
    """``manual``, ``builtin`` or a path to a candidates JSON file."""
    if spec == "manual":
        return manual(task)
    if spec == "builtin":
        return builtin(task)
    return load_candidates(Path(spec), task)


def load_candidates(path: Path, task: str) -> Candidates:
    """Read and validate a candidates file: ``{"task", "templates": [...], "answers": {label: [...]}}``;
    its answers are keyed by exactly the task's labels."""
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise DataError(path, None, None, f"expected a JSON object {{task, templates, answers}}, "
                        f"got {'a list' if isinstance(data, list) else 'a single value'}")
    if data.get("task") != task:
        raise DataError(path, None, "task", f"holds candidates for {shown(data.get('task'))}, not {task!r}")
    templates = data.get("templates")
    if not isinstance(templates, list) or not templates:
        raise DataError(path, None, "templates", "expected a non-empty list of strings")
    for i, template in enumerate(templates):
        if not isinstance(template, str):
            raise DataError(path, None, f"templates[{i}]", f"expected a string, got {shown(template)}")
        missing = [p for p in tasks.get(task).placeholders if p not in template]
        if missing:
            raise DataError(path, None, f"templates[{i}]", f"lacks placeholder(s) {', '.join(missing)}")
        if template.count(MASK) != 1:
            raise DataError(path, None, f"templates[{i}]", "must hold exactly one [MASK]")
    answers = data.get("answers")
    if not isinstance(answers, dict) or not answers:
        raise DataError(path, None, "answers", "expected an object mapping each label to words")
    labels = tasks.labels_of(task)
    for label, words in answers.items():
        if label not in labels:
            raise DataError(path, None, f"answers.{shown(label, 40)}",
                            f"not a {task} label ({', '.join(labels)})")
        if not isinstance(words, list) or not words or not all(isinstance(w, str) and w.strip() for w in words):
            raise DataError(path, None, f"answers.{label}", "expected a non-empty list of words")
    missing_labels = [label for label in labels if label not in answers]
    if missing_labels:
        raise DataError(path, None, "answers", f"has no words for the {task} label(s) "
                                               f"{', '.join(missing_labels)}")
    return Candidates(task, tuple(templates), {k: tuple(w.strip() for w in v) for k, v in answers.items()},
                      str(path))


def check_labels(candidates: Candidates, dataset: Dataset) -> None:
    missing = [label for label in dataset.labels if label not in candidates.answers]
    if missing:
        raise UsageError(f"Candidates from {candidates.source} have no answers for label(s) "
                         f"{', '.join(missing)} of {dataset.name}.")


def fill(template: str, inst: Instance) -> tuple[str, str]:
    """Fill every placeholder but ``[MASK]``; return the text before and after the mask."""
    values = {
        "[A]": with_article(inst.obj_a),
        "[B]": with_article(inst.obj_b),
        "[OBJECT]": inst.obj_b,
        "[PERSON]": inst.obj_a,
        "[SCENARIO]": inst.text.strip(),
        "[PRONOUN]": inst.pronoun or "They",
    }
    text = template
    for key, value in values.items():
        text = text.replace(key, value)
    text = capitalize_first(text)
    prefix, _, suffix = text.partition(MASK)
    return prefix, suffix


def render(template: str, inst: Instance, answer: str) -> str:
    """The filled sentence with ``answer`` in place of the mask (for display and back-translation)."""
    prefix, suffix = fill(template, inst)
    return capitalize_first(prefix + answer + suffix)
