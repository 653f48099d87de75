"""Frozen records that flow between stages: dataset -> prompts -> model -> judge -> metrics -> report.

Every stage reads records and writes records; records serialize to plain JSON dicts with
``to_dict``/``from_dict`` so they can be written as JSON lines and read back unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

VARIANT = "engine_variant"
"""The field of a ``predictions.jsonl`` row of an engine-generated robustness variant
(``--protocol-variants``): true on such rows, absent on the benchmark's own items."""


class _Serializable:
    def to_dict(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]):
        names = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        kwargs = {}
        for key, value in data.items():
            if key not in names:
                continue
            if isinstance(value, list):
                value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
            kwargs[key] = value
        return cls(**kwargs)


@dataclass(frozen=True)
class Instance(_Serializable):
    """One probing item: a pair of objects (and, for posrel, a scenario) with its gold answer."""

    id: str
    """Stable identifier within its dataset, e.g. ``size-0001``."""
    task: str
    """The task the gold label belongs to: ``size``, ``height`` or ``posrel``."""
    obj_a: str
    """First object (posrel: the person, e.g. ``man``)."""
    obj_b: str
    """Second object (posrel: the object the person acts on, e.g. ``car``)."""
    label: str
    """Gold answer word in canonical form: ``larger``/``smaller``, ``taller``/``shorter``, or a relation."""
    text: str = ""
    """Scenario text as released: ``An ant and a bird.`` or ``A man washes the car.``."""
    action: str = ""
    """posrel: the verb phrase without the objects, e.g. ``washes``; empty for comparisons."""
    pronoun: str = ""
    """posrel: the pronoun that refers to the person (``He``/``She``); empty for comparisons."""
    level_a: int | None = None
    """Scale level of ``obj_a`` (1 = smallest) where the dataset defines one."""
    level_b: int | None = None
    """Scale level of ``obj_b`` where the dataset defines one."""
    fold_keys: tuple[str, ...] = ()
    """Objects that decide fold membership (both objects for comparisons, the object for posrel)."""


@dataclass(frozen=True)
class Dataset(_Serializable):
    """A named, versioned set of instances with the label set its task uses."""

    name: str
    """Dataset name, e.g. ``size`` or the file it was loaded from."""
    version: str
    """Version string; built-in sets carry a content hash so results name exactly what was probed."""
    task: str
    """``size``, ``height`` or ``posrel``: decides prompts and answer words."""
    labels: tuple[str, ...]
    """Canonical label words, in a fixed order."""
    instances: tuple[Instance, ...] = field(repr=False, default=())
    """The instances, in a stable order."""
    object_levels: tuple[tuple[str, int], ...] = ()
    """(object, level) for datasets with scale levels; used to stratify folds and order plots."""

    def __len__(self) -> int:
        return len(self.instances)


@dataclass(frozen=True)
class Fold:
    """One object-disjoint fold: choose on ``dev``, report on ``test``."""

    index: int
    """Fold number, 0-based."""
    objects: tuple[str, ...]
    """Fold keys (objects) that belong to this fold."""
    dev: tuple[str, ...]
    """Ids of instances whose fold keys all lie in this fold."""
    test: tuple[str, ...]
    """Ids of instances with no fold key in this fold."""


@dataclass(frozen=True)
class PromptConfig(_Serializable):
    """A prompt template and one answer word per label, as chosen for a fold."""

    template: str
    """Template with ``[A]``, ``[B]``, ``[MASK]`` (and for posrel ``[SCENARIO]``, ``[PRONOUN]``)."""
    answers: tuple[str, ...]
    """Answer word for each label, aligned with ``Dataset.labels``."""


@dataclass(frozen=True)
class Prediction(_Serializable):
    """A model's answer for one instance under one prompt configuration."""

    instance_id: str
    """Id of the instance."""
    fold: int
    """Fold whose test set the instance was scored in; -1 for whole-set predictions."""
    obj_a: str
    """First object."""
    obj_b: str
    """Second object."""
    gold: str
    """Gold canonical label."""
    pred: str
    """Predicted canonical label."""
    template: str
    """Prompt template used."""
    answers: tuple[str, ...]
    """Answer words used, aligned with the dataset's labels."""
    scores: tuple[float, ...]
    """Score (mean log-probability) of each answer word, aligned with ``answers``."""
