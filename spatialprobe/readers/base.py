"""What a reader is: (an answer, the item as asked) -> a label, or nothing, with the reason.

A reader is registered by name (:mod:`spatialprobe.registry`, kind ``reader``), like a model or a
statistic; a benchmark module names its ``official`` reader (its authors' code, transcribed), and
every benchmark is also read by ``strict`` (:mod:`.strict`). A reader reads a generated reply
(:attr:`Reader.reply`) and, for the likelihood protocol, the options' scores (:attr:`Reader.scores`:
the best-scored option, the first of equal ones, unless the authors break ties otherwise).

A reading names a **label** of the benchmark's vocabulary (the option's label, so ``B`` for a
lettered item), or another value the authors' code keeps as the prediction (a letter that is no
option, an extracted word): such a value is simply never gold. ``None``: nothing was read (the
row's prediction is ``--``, wrong). Where the authors' code decides right or wrong with the gold
answer itself (a substring test), the reading is the gold label where their verdict is right.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NOTHING = "--"
"""The prediction of a row on which nothing was read."""


@dataclass(frozen=True)
class Asked:
    """An item as it was put to the model: what a reader may look at."""

    key: str
    """The item's key (seeds a reader's documented random draw, where its authors draw one)."""
    options: tuple[str, ...]
    """The options as asked (texts; lettered A, B, ... in this order where the question letters them)."""
    labels: tuple[str, ...]
    """``labels[i]``: the benchmark's label ``options[i]`` means."""
    gold: str
    """The gold label."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """The item's row fields (a benchmark's reader may need one: SpatialEval's task and question id)."""

    @property
    def letters(self) -> tuple[str, ...]:
        return tuple(string.ascii_uppercase[: len(self.options)])

    @property
    def gold_index(self) -> int | None:
        return self.labels.index(self.gold) if self.gold in self.labels else None

    def gold_text(self) -> str:
        """The gold option's text (the gold label where it is none of the options')."""
        index = self.gold_index
        return self.gold if index is None else self.options[index]


@dataclass(frozen=True)
class Reading:
    """What a reader read: a label (or another value the authors keep), or nothing, and why."""

    label: str | None
    reason: str

    @property
    def pred(self) -> str:
        """The row's prediction: the label, ``--`` where nothing was read."""
        return NOTHING if self.label is None else self.label


def option(asked: Asked, index: int | None, reason: str) -> Reading:
    """The reading of option ``index`` (``None``: nothing)."""
    if index is None or not 0 <= index < len(asked.options):
        return Reading(None, reason)
    return Reading(asked.labels[index], reason)


def letter(asked: Asked, value: str | None, reason: str) -> Reading:
    """The reading of an option letter (a letter that is no option's stays itself: never gold)."""
    if not value:
        return Reading(None, reason)
    if value in asked.letters:
        return option(asked, asked.letters.index(value), reason)
    return Reading(value, f"{reason} (no option's letter)")


def best_scored(scores: Sequence[float], asked: Asked) -> Reading:
    """The best-scored option, the first of equal ones (``np.argmax``)."""
    values = [float(s) for s in scores]
    return option(asked, values.index(max(values)), "the best-scored option")


ReplyReader = Callable[[str, Asked], Reading]
ScoresReader = Callable[[Sequence[float], Asked], Reading]


def letter_reader(extract: Callable[[str], str | None], found: str, none: str) -> ReplyReader:
    """A reply reader from an authors' letter extractor (reply -> a letter or None): the letter's
    option (a letter beyond the item's options stays itself: never gold), ``found``/``none`` the reasons."""
    def read(reply: str, asked: Asked) -> Reading:
        value = extract(reply)
        return letter(asked, value, found if value else none)
    return read


@dataclass(frozen=True)
class Reader:
    """One registered reader."""

    name: str
    reply: ReplyReader
    """A generated reply -> its reading."""
    cited: str
    """Where its rules come from: ``repository @ commit, path, lines`` (the toolkit's own: its module)."""
    summary: str
    """What it does, in one sentence (``spatialprobe ls``, ``audit parse``, docs/fidelity.md)."""
    scores: ScoresReader = best_scored
    """The options' scores (likelihood protocol) -> its reading."""
    unread: str = "nothing read: counted wrong"
    """What the authors' code does where this reader reads nothing (a judge, a random draw), in words."""

    def __call__(self, reply: str, asked: Asked) -> Reading:
        """The reading of a generated reply (:attr:`reply`)."""
        return self.reply(reply, asked)


def get(name: str) -> Reader:
    """The registered reader ``name``; an unknown name is refused listing the known ones."""
    from spatialprobe import registry

    found = registry.lookup("reader", name)
    if not isinstance(found, Reader):
        raise TypeError(f"the reader {name!r} is registered as {type(found).__name__}, not a Reader")
    return found


def names() -> list[str]:
    """Every registered reader's name."""
    from spatialprobe import registry

    return registry.names("reader")
