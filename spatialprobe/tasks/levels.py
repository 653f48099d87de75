"""Object-scale comparison sets built from a comparison task's object levels (its task file)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol

from spatialprobe import tasks
from spatialprobe.errors import UsageError
from spatialprobe.records import Dataset, Instance

# Words whose first letter misleads the a/an rule.
_AN_EXCEPTIONS = {"hour", "honest", "honour", "honor", "heir", "herb"}
_A_EXCEPTIONS = ("uni", "use", "user", "euro", "one", "once", "ufo", "ukulele", "ewe")


def article(noun: str) -> str:
    """``a`` or ``an`` for a noun phrase, by its first sound as far as spelling tells."""
    word = noun.lower().split()[0] if noun.strip() else noun
    if word in _AN_EXCEPTIONS:
        return "an"
    if word.startswith(_A_EXCEPTIONS):
        return "a"
    return "an" if word[:1] in "aeiou" else "a"


def with_article(noun: str) -> str:
    return f"{article(noun)} {noun}"


def capitalize_first(text: str) -> str:
    return text[:1].upper() + text[1:]


class _Record(Protocol):
    """A dataset record (an Instance, a QAItem): anything that serializes with ``to_dict``."""

    def to_dict(self) -> dict[str, Any]: ...


def content_version(name: str, instances: tuple[_Record, ...]) -> str:
    """A version string that changes whenever any instance changes."""
    digest = hashlib.sha256(
        json.dumps([i.to_dict() for i in instances], sort_keys=True).encode()
    ).hexdigest()
    return f"{name}-{digest[:12]}"


def build_scale(task: str) -> Dataset:
    """Every ordered pair of objects from different levels; gold says whether A is larger/taller.

    With 5 levels of 5 objects this is 250 unordered pairs in both orders = 500 instances,
    ordered by (first object, second object) in level order, ids ``{task}-0000`` ...
    """
    definition = tasks.get(task)
    if not definition.levels:
        scale = [t for t in tasks.names() if tasks.get(t).levels]
        raise UsageError(f"Task {task!r} has no object levels; scale tasks: {', '.join(scale)}.")
    levels, labels = definition.levels, definition.labels
    objects = [(obj, lvl + 1) for lvl, objs in enumerate(levels) for obj in objs]
    instances: list[Instance] = []
    for obj_a, level_a in objects:
        for obj_b, level_b in objects:
            if level_a == level_b:
                continue
            instances.append(Instance(
                id=f"{task}-{len(instances):04d}",
                task=task,
                obj_a=obj_a,
                obj_b=obj_b,
                label=labels[0] if level_a > level_b else labels[1],
                text=capitalize_first(f"{with_article(obj_a)} and {with_article(obj_b)}."),
                level_a=level_a,
                level_b=level_b,
                fold_keys=(obj_a, obj_b),
            ))
    instances_t = tuple(instances)
    return Dataset(
        name=task,
        version=content_version(task, instances_t),
        task=task,
        labels=labels,
        instances=instances_t,
        object_levels=tuple(objects),
    )
