"""A task's instances (size, height, posrel, weight, or a release-format file) as multiple-choice
questions, tested on the probe's object-disjoint folds (mean ± σ over folds); the image of each
instance from a synthesis run, a blank image, or none."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe import tasks
from spatialprobe.benchmarks.base import Source, SourceItem
from spatialprobe.errors import DataError
from spatialprobe.files import shown
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.prompts.questions import choice_question
from spatialprobe.records import Dataset
from spatialprobe.registry import component


def _run_images(run: str, dataset: Dataset, partial: bool) -> tuple[dict[str, str], dict[str, Any]]:
    """Instance id -> the first image a synthesis run holds for it (its prompt id is the id)."""
    from spatialprobe.imagestore import open_image_run

    store, completeness = open_image_run(run, partial=partial)
    first: dict[str, str] = {}
    shown: dict[str, dict[str, Any]] = {}
    for record in store.images():
        first.setdefault(record.prompt_id, str(record.path))
        shown.setdefault(record.prompt_id, record.meta)
    missing = [inst.id for inst in dataset.instances if inst.id not in first]
    if missing:
        raise DataError(run, None, None, f"holds no image for {len(missing):,} of the {len(dataset.instances):,} "
                        f"instances of {dataset.name} (first: {missing[0]}); synthesize it from the same "
                        "dataset (spatialprobe synthesize --prompts TASK)")
    for inst in dataset.instances:
        _same_instance(run, inst, shown[inst.id])
    return first, {"path": str(Path(run).resolve()), "completeness": completeness.to_dict()}


SHOWN_FIELDS = ("task", "obj_a", "obj_b", "label", "action")
"""What an image run's prompt must share with the question asked of its picture (its instance)."""


def _same_instance(run: str, inst: Any, meta: Any) -> None:
    """Refuse the image run where the prompt its image of ``inst.id`` was drawn from is another
    instance (other objects, label or action under the same id): a run synthesized from other
    lines of a file, whose ids restart at each file."""
    meta = meta if isinstance(meta, Mapping) else {}  # a run.sqlite edited by hand: nothing matches
    fields = [f for f in SHOWN_FIELDS if getattr(inst, f)]
    ours = inst.to_dict()
    differ = [f for f in fields if str(meta.get(f, "")) != str(ours[f])]
    if differ:
        raise DataError(run, None, None, f"its image of {inst.id} was drawn for another instance "
                        f"({', '.join(f'{f} {shown(meta.get(f))}' for f in differ)}) than the question "
                        f"{inst.id} asks of ({', '.join(f'{f} {shown(ours[f])}' for f in differ)}); synthesize "
                        "the images from the same instances (spatialprobe synthesize --prompts TASK, "
                        "with the same --data)")


def task_source(dataset: Dataset, data: dict[str, Any], image: str = "none", folds: int = 5, seed: int = 0,
                partial: bool = False) -> tuple[Source, dict[str, Any]]:
    """A task's instances as multiple-choice questions; ``image``: ``none``, ``blank`` or a
    synthesis run holding an image of each instance. ``data`` records the dataset (its source)."""
    from spatialprobe.tasks.data import make_folds

    images: dict[str, str] = {}
    settings: dict[str, Any] = {"name": "task", "task": dataset.task, "dataset": data, "image": image,
                                "folds": folds}
    if image not in ("none", "blank"):
        images, settings["image_run"] = _run_images(image, dataset, partial)
    spec_task = tasks.get(dataset.task)
    items = []
    for inst in dataset.instances:
        asked = choice_question(dataset.task, inst)
        fields = {f: getattr(inst, f) for f in ("obj_a", "obj_b")}
        items.append(SourceItem(inst.id, asked.prompt, asked.options, asked.labels, asked.gold,
                                images.get(inst.id), (inst.obj_a, inst.obj_b), fields,
                                fact=(inst.obj_a, inst.label, inst.obj_b)))
    split = tuple((tuple(f.dev), tuple(f.test)) for f in make_folds(dataset, folds, seed))
    spec = Resampling(tuple(dataset.labels), spec_task.object_fields, group="fold", part="fold {}",
                      key=("instance_id", "fold"))
    source = Source("task", dataset.task, f"{dataset.name}@{dataset.version}", tuple(dataset.labels),
                    tuple(items), spec, folds=split, settings=settings,
                    question_free=_objects_first_label(dataset.task))
    return source, settings


def _objects_first_label(task: str) -> str | None:
    """The task's first label where its choice question's options are the pair's own objects
    (size, height: a model may answer by ranking the names alone), else None."""
    spec = tasks.get(task)
    return spec.labels[0] if spec.questions.get("choice_options") == "objects" else None


@component("source", "task", "a task's instances as multiple choice, over folds")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of a run's recorded ``source`` settings."""
    from spatialprobe.tasks.origin import load_source

    dataset = load_source(settings["dataset"], settings["task"])
    image = settings["image_run"]["path"] if "image_run" in settings else settings["image"]
    partial = bool((settings.get("image_run", {}).get("completeness") or {}).get("partial"))
    return task_source(dataset, settings["dataset"], image, settings["folds"], seed, partial)[0]
