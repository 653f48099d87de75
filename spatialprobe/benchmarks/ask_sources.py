"""The items an ask run puts to a model, from a task, VSR or SpatialMQA, and how to replay them.

Each builder returns the :class:`~spatialprobe.benchmarks.ask.AskSource` and the settings that
record it (files as path + content version, the image run by path), so that
:func:`source_from_settings` rebuilds the same items from a run's ``config.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spatialprobe import registry, tasks
from spatialprobe.benchmarks.ask import MQA_QUESTION, VSR_QUESTION, AskItem, AskSource
from spatialprobe.errors import DataError, UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.prompts.questions import choice_question
from spatialprobe.records import Dataset
from spatialprobe.runner import scale
from spatialprobe.runner.settings import Component


def load_model(component: Component, device: str, batch_size: int, device_map: str = "none",
               max_memory: dict[str, str] | None = None) -> Any:
    """The registered model adapter a run names, on ``device`` (``device_map``: spread over
    devices, at most ``max_memory`` on each)."""
    from spatialprobe.models.options import sharding

    runtime: dict[str, Any] = {"device": device, "batch_size": batch_size,
                               **sharding(component.name, device, device_map, max_memory)}
    return scale.component("model", registry.Spec(component.name, {**component.args, **runtime}))  # --ray: cluster


# ---- tasks -------------------------------------------------------------------------------------
def _run_images(run: str, dataset: Dataset, partial: bool) -> tuple[dict[str, str], dict[str, Any]]:
    """Instance id -> the first image a synthesis run holds for it (its prompt id is the id)."""
    from spatialprobe.imagestore import open_image_run

    store, completeness = open_image_run(run, partial=partial)
    first: dict[str, str] = {}
    for record in store.images():
        first.setdefault(record.prompt_id, str(record.path))
    missing = [inst.id for inst in dataset.instances if inst.id not in first]
    if missing:
        raise DataError(run, None, None, f"holds no image for {len(missing):,} of the {len(dataset.instances):,} "
                        f"instances of {dataset.name} (first: {missing[0]}); synthesize it from the same "
                        "dataset (spatialprobe synthesize --prompts TASK)")
    return first, {"path": str(Path(run).resolve()), "completeness": completeness.to_dict()}


def task_source(dataset: Dataset, data: dict[str, Any], image: str = "none", folds: int = 5, seed: int = 0,
                partial: bool = False) -> tuple[AskSource, dict[str, Any]]:
    """A task's instances as multiple-choice questions; ``image``: ``none``, ``blank`` or a
    synthesis run holding an image of each instance. ``data`` records the dataset (its source)."""
    from spatialprobe.datasets import make_folds

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
        items.append(AskItem(inst.id, asked.prompt, asked.options, asked.labels, asked.gold,
                             images.get(inst.id), (inst.obj_a, inst.obj_b), fields))
    split = tuple((tuple(f.dev), tuple(f.test)) for f in make_folds(dataset, folds, seed))
    spec = Resampling(tuple(dataset.labels), spec_task.object_fields, group="fold", part="fold {}",
                      key=("instance_id", "fold"))
    source = AskSource("task", dataset.task, f"{dataset.name}@{dataset.version}", tuple(dataset.labels),
                       tuple(items), spec, folds=split)
    return source, settings


# ---- VSR and SpatialMQA ------------------------------------------------------------------------
def vsr_source(path: Path, images_dir: Path, split: str = "random", part: str = "test",
               limit: int | None = None, skip_missing: bool = False) -> tuple[AskSource, dict[str, Any]]:
    """VSR's captions as yes/no questions about their images (resampled by COCO image)."""
    from spatialprobe.datasets import vsr

    every = vsr.load_vsr_file(path, split=split, part=part)
    examples = every[:limit]
    found, _, coverage = vsr.usable_images(examples, images_dir, total=len(every), skip_missing=skip_missing,
                                           limit=limit)
    items = tuple(AskItem(e.id, VSR_QUESTION.format(caption=e.caption), ("Yes", "No"), ("yes", "no"),
                          "yes" if e.label == 1 else "no", str(found[e.id]), (e.subj, e.obj, e.image),
                          {"image": e.image, "relation": e.relation})
                  for e in examples if e.id in found)
    train = path.parent / "train.jsonl"  # the answer prior: the training split's majority
    prior = (tuple("yes" if e.label == 1 else "no" for e in vsr.load_vsr_file(train, split=split, part="train"))
             if part != "train" and train.is_file() else None)
    spec = Resampling(("yes", "no"), ("image",), key=("instance_id",), pooled=True, unit="images")
    settings = {"name": "vsr", "data": {"file": str(path.resolve()), "version": vsr.file_version(path)},
                "images": str(images_dir.resolve()), "split": split, "part": part, "limit": limit,
                "skip_missing": skip_missing}
    return AskSource("vsr", f"vsr-{split}", f"vsr-{split}-{part}@{vsr.file_version(path)}", ("yes", "no"),
                     items, spec, prior_labels=prior, details={"total": coverage["total"],
                                                               "coverage_detail": coverage}), settings


def spatialmqa_source(path: Path, images_dir: Path, part: str = "test", limit: int | None = None,
                      skip_missing: bool = False) -> tuple[AskSource, dict[str, Any]]:
    """SpatialMQA's questions with lettered options, parsed by its lenient rule where letters fail."""
    from spatialprobe.datasets import spatialmqa
    from spatialprobe.datasets.vsr import file_version, usable_images
    from spatialprobe.models.answer_parse import SPATIALMQA_LABEL_ORDER, spatialmqa_option

    every = spatialmqa.load_spatialmqa_file(path, part=part)
    examples = every[:limit]
    found, _, coverage = usable_images(examples, images_dir, total=len(every), skip_missing=skip_missing,
                                       limit=limit, what="questions")
    items = []
    for e in examples:
        if e.id not in found:
            continue
        lettered = "\n".join(f"{chr(65 + n)}. {o}" for n, o in enumerate(e.options))
        items.append(AskItem(e.id, MQA_QUESTION.format(question=e.question, options=lettered), e.options,
                             e.options, e.answer, str(found[e.id]), (e.image,), {"image": e.image}))
    train = path.parent / "train.jsonl"
    prior = (tuple(x.answer for x in spatialmqa.load_spatialmqa_file(train, part="train"))
             if part != "train" and train.is_file() else None)
    spec = Resampling(tuple(SPATIALMQA_LABEL_ORDER), ("image",), key=("instance_id",), pooled=True,
                      unit="images", fold_case=True)
    settings = {"name": "spatialmqa", "data": {"file": str(path.resolve()), "version": file_version(path)},
                "images": str(images_dir.resolve()), "part": part, "limit": limit, "skip_missing": skip_missing}
    return AskSource("spatialmqa", "spatialmqa", f"spatialmqa-{part}@{file_version(path)}",
                     tuple(SPATIALMQA_LABEL_ORDER), tuple(items), spec, prior_labels=prior,
                     lenient=spatialmqa_option, details={"total": coverage["total"],
                                                         "coverage_detail": coverage}), settings


# ---- yes/no QA -------------------------------------------------------------------------------------
QA_QUESTION = "{text} Answer yes or no."


def qa_source(task: str | None, data: str | None, images: str | None = None,
              partial: bool = False) -> tuple[AskSource, dict[str, Any]]:
    """The yes/no questions of a task or file (``qa text``), or of the instances a synthesis run
    drew, each with its image (``qa image``); resampled by the instance a question is about."""
    from spatialprobe.benchmarks.qa import questions_from_images
    from spatialprobe.datasets.qa import questions_for

    settings: dict[str, Any] = {"name": "qa", "task": task, "data": data, "images": None}
    first: dict[str, str] = {}
    if images is not None:
        from spatialprobe.imagestore import open_image_run

        store, completeness = open_image_run(images, partial=partial)
        for record in store.images():
            first.setdefault(record.prompt_id, str(record.path))
        settings["images"] = {"path": str(Path(images).resolve()), "completeness": completeness.to_dict()}
        qa, label = questions_from_images(store) if task is None and data is None else questions_for(task, data)
    else:
        qa, label = questions_for(task, data)
    items = tuple(AskItem(item.id, QA_QUESTION.format(text=item.full_text), ("Yes", "No"), ("yes", "no"),
                          item.answer, first.get(item.instance_id), (item.instance_id,),
                          {"instance": item.instance_id, "relation": item.relation})
                  for item in qa.items if images is None or item.instance_id in first)
    if images is not None and len(items) < len(qa.items):
        raise DataError(images, None, None, f"holds no image for {len(qa.items) - len(items):,} of the "
                        f"{len(qa.items):,} questions' instances; synthesize it from the same dataset")
    spec = Resampling(("yes", "no"), ("instance",), key=("instance_id",), pooled=True, unit="instances")
    return AskSource("qa", str(qa.task), label, ("yes", "no"), items, spec), settings


def source_from_settings(settings: dict[str, Any], seed: int) -> AskSource:
    """The items a run's recorded source names (``spatialprobe run CONFIG``)."""
    name = settings.get("name")
    if name == "task":
        from spatialprobe.datasets.sources import load_source

        dataset = load_source(settings["dataset"], settings["task"])
        image = settings["image_run"]["path"] if "image_run" in settings else settings["image"]
        partial = bool((settings.get("image_run", {}).get("completeness") or {}).get("partial"))
        return task_source(dataset, settings["dataset"], image, settings["folds"], seed, partial)[0]
    if name == "vsr":
        return vsr_source(Path(settings["data"]["file"]), Path(settings["images"]), settings["split"],
                          settings["part"], settings["limit"], settings["skip_missing"])[0]
    if name == "spatialmqa":
        return spatialmqa_source(Path(settings["data"]["file"]), Path(settings["images"]), settings["part"],
                                 settings["limit"], settings["skip_missing"])[0]
    if name == "qa":
        images = settings.get("images") or None
        partial = bool(((images or {}).get("completeness") or {}).get("partial"))
        return qa_source(settings.get("task"), settings.get("data"), images and images["path"], partial)[0]
    raise UsageError(f"config.json: source.name must be task, vsr, spatialmqa or qa, not {name!r}.")
