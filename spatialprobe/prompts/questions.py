"""A task's instances as questions, worded by the task file's ``questions`` block (no task names here).

* :func:`choice_question`: the multiple-choice question and its options, each option meaning one
  label (``Which is larger: an ant or a bird?`` -> ``An ant`` / ``A bird``; ``A man drives the bus.
  Where is the man relative to the bus: above, below, inside or beside?`` -> ``Above`` ...).
* :func:`yes_no_question`: whether the instance's relation is a given label (``Is an ant smaller
  than a bird?``; ``A man drives the bus. Is the man inside the bus?``).
"""

from __future__ import annotations

from dataclasses import dataclass

from spatialprobe import tasks
from spatialprobe.prompts.templates import fill
from spatialprobe.records import Instance
from spatialprobe.tasks.levels import capitalize_first, with_article


@dataclass(frozen=True)
class TaskQuestion:
    """One instance as a question: the text, the options that answer it, the label of each, gold."""

    prompt: str
    options: tuple[str, ...]
    labels: tuple[str, ...]
    """``labels[i]`` is what ``options[i]`` means: a task label, or ``yes``/``no``."""
    gold: str
    """The right label."""

    def label_of(self, option: str | None) -> str | None:
        """The label an option means (None for no option: a reply that named none)."""
        return None if option is None else self.labels[self.options.index(option)]


def listed(words: list[str]) -> str:
    """``above, below, inside or beside``."""
    return f"{', '.join(words[:-1])} or {words[-1]}" if len(words) > 1 else words[0]


def choice_template(task: str) -> str:
    """The task's multiple-choice question with its placeholders, options listed where it lists them."""
    spec = tasks.get(task)
    return spec.questions["choice"].replace("[OPTIONS]", listed(list(spec.labels)))


def choice_options(task: str, inst: Instance) -> tuple[str, ...]:
    """The replies that answer the choice question, aligned with the task's labels."""
    spec = tasks.get(task)
    if spec.questions["choice_options"] == "objects":  # the first object is the first label's answer
        return capitalize_first(with_article(inst.obj_a)), capitalize_first(with_article(inst.obj_b))
    return tuple(capitalize_first(label) for label in spec.labels)


def choice_question(task: str, inst: Instance) -> TaskQuestion:
    prompt = fill(choice_template(task), inst)[0].strip()
    return TaskQuestion(prompt, choice_options(task, inst), tuple(tasks.get(task).labels), inst.label)


def yes_no_question(task: str, inst: Instance, label: str) -> TaskQuestion:
    """Is the instance's relation ``label``? Options ``Yes``/``No``, gold ``yes`` where it is."""
    spec = tasks.get(task)
    template = spec.questions["yes_no"].replace("[WORD]", spec.questions["words"][label])
    return TaskQuestion(fill(template, inst)[0].strip(), ("Yes", "No"), ("yes", "no"),
                 "yes" if inst.label == label else "no")
