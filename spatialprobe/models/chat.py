"""``--format chat``: each instance asked as a question, the answer options scored as the reply.

The question is built from the task file, so a new task needs no code:

* comparison tasks ask ``Which is larger: an ant or a bird?`` (the task's ``question_word``) and
  the options are the two objects as the question names them (``An ant``, ``A bird``); the
  first object answers the first label (``larger``: the first is larger), the second the other.
  The objects are the options, not ``larger``/``smaller``, because they are what the question
  asks for, so an instruction model's natural reply is one of them.
* position tasks ask ``A man washes the car. Where is the man relative to the car: above, below,
  inside or beside?`` and the options are the label words (``Above``, ...).

The question is kept as a one-template candidate set (``source: "chat"``) so it is recorded in
the run's settings like every prompt; the chat template itself is the tokenizer's, applied by
the causal scorer, whose weights hash and model id identify it.
"""

from __future__ import annotations

from collections.abc import Sequence

from spatialprobe import tasks
from spatialprobe.models.base import ScoreRequest
from spatialprobe.prompts.templates import Candidates, fill
from spatialprobe.records import Instance
from spatialprobe.tasks.levels import capitalize_first, with_article


def question_template(task: str) -> str:
    """The question with the task's placeholders, e.g. ``Which is larger: [A] or [B]?``."""
    spec = tasks.get(task)
    if spec.is_comparison:
        return f"Which is {spec.question_word}: [A] or [B]?"
    words = list(spec.labels)
    listed = f"{', '.join(words[:-1])} or {words[-1]}" if len(words) > 1 else words[0]
    return f"[SCENARIO] Where is the [PERSON] relative to the [OBJECT]: {listed}?"


def candidates(task: str) -> Candidates:
    """The question as the run's only template, with each label as its own answer word."""
    labels = tasks.get(task).labels
    return Candidates(task, (question_template(task),), {label: (label,) for label in labels}, "chat")


def options(task: str, inst: Instance, labels: Sequence[str]) -> tuple[str, ...]:
    """The reply that means each label, aligned with ``labels``."""
    if tasks.get(task).is_comparison:
        first, second = capitalize_first(with_article(inst.obj_a)), capitalize_first(with_article(inst.obj_b))
        return first, second  # labels[0] says the first object is X-er: it is the answer
    return tuple(capitalize_first(label) for label in labels)


def requests(cells: Sequence[tuple[str, Instance]], task: str, labels: Sequence[str]) -> list[ScoreRequest]:
    """One request per (question, instance): the question as the prefix, the options as words."""
    return [ScoreRequest(fill(template, inst)[0].strip(), "", options(task, inst, labels))
            for template, inst in cells]
