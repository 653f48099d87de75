"""The images of an image run that a judge reads: which of its images carry an instance of a
task (:func:`task_images`), why a prompt cannot be scored as that task (:func:`why_unscorable`),
the ``source`` setting that names the run (:func:`image_run`) and the one a judgement records
(:func:`image_run_source`: its identity, its dataset and a digest of the images judged), the
images a judge of a task reads from it (:func:`judged_task_images`), and what a summary says of
where the images came from (:func:`source_info`). Read by the judges of
:mod:`spatialprobe.judging.box`, :mod:`spatialprobe.judging.vqa`, :mod:`spatialprobe.judging.visor`
and :mod:`spatialprobe.judging.human`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from spatialprobe.errors import UsageError
from spatialprobe.imagestore import Completeness, ImageRecord, ImageStore, open_image_run, present_images
from spatialprobe.runner.settings import recorded


def task_images(store: ImageStore, task: str) -> list[ImageRecord]:
    """Images the run records (file present or not) whose prompt carries an instance of ``task``
    with both objects and a label."""
    return [rec for rec in store.records()
            if rec.meta.get("task", task) == task and {"obj_a", "obj_b", "label"} <= set(rec.meta)]


def why_unscorable(meta: Mapping[str, Any], task: str) -> str | None:
    """Why ``judge TASK`` cannot score a prompt with this metadata (None: it can)."""
    if meta.get("task", task) == task and {"obj_a", "obj_b", "label"} <= set(meta):
        return None
    template = meta.get("template")
    if meta.get("task") not in (None, task):
        return f"it is a {meta['task']} instance, not {task} (judge it with `judge {meta['task']}`)"
    if template == "sr2d" or "rel_type" in meta:
        return ("it is an SR2D sentence, whose relation VISOR scores, not one of the "
                f"{task} task's answers (score it with `spatialprobe visor RUN`)")
    if template == "comparison":
        return (f"it names two objects ({meta['obj_a']}, {meta['obj_b']}) but not which comparison "
                "it asks (size and height share the text) nor its answer; use --prompts size or "
                "height, or a JSON lines file with task, obj_a, obj_b and label")
    if template == "none":
        return ("it is none of the toolkit's templates (a posrel instance's text, an SR2D "
                "sentence), so it names no objects and no answer")
    return "its metadata lacks " + ", ".join(k for k in ("task", "obj_a", "obj_b", "label")
                                             if k not in meta)


def unscorable_prompts(store: ImageStore, task: str) -> list[str]:
    """One sentence per prompt with finished images that ``judge TASK`` cannot score, saying why
    (a plain prompt file's lines are named by number)."""
    with_images = {rec.prompt_id for rec in store.images()}
    out = []
    for item in store.prompts():
        why = why_unscorable(item.meta, task) if item.prompt_id in with_images else None
        if why is not None:
            where = f"line {item.meta['line']}" if "line" in item.meta else f"prompt {item.prompt_id}"
            out.append(f"{where} ({item.prompt!r}): {why}")
    return out


def unscorable_note(unscorable: Sequence[str], task: str, shown: int = 10) -> str:
    """How many prompts ``judge TASK`` leaves out, and why, for the first ``shown``."""
    more = f"; and {len(unscorable) - shown} more" if len(unscorable) > shown else ""
    return (f"{len(unscorable)} prompt(s) cannot be scored as {task} and are left out: "
            + "; ".join(unscorable[:shown]) + more)


def image_key(rec: ImageRecord) -> str:
    return f"{rec.prompt_id}#{rec.image_index}"

def image_run(path: str | Path, partial: bool = False) -> dict[str, Any]:
    """The ``source`` setting of a kind that reads the image run at ``path`` (``partial``: an
    unfinished one), as a command gives it; the kind resolves it (:func:`image_run_source`)."""
    return {"path": str(path), "completeness": {"partial": partial}}


def opened_image_run(source: Mapping[str, Any]) -> tuple[str, ImageStore, Completeness]:
    """The path, store and completeness of the image run a ``source`` setting names (a given
    one, :func:`image_run`, or a recorded one, :func:`image_run_source`)."""
    path = str(recorded(source, "path", "source"))
    return (path, *open_image_run(path, partial=bool((source.get("completeness") or {}).get("partial"))))


class TaskImages(NamedTuple):
    """The images of an image run that a judge of one task reads (:func:`judged_task_images`)."""

    store: ImageStore
    completeness: Completeness
    images: list[ImageRecord]
    """The finished images of the task's instances whose file is there."""
    missing: list[ImageRecord]
    """Those whose file is gone or damaged (only with ``skip_missing``: else refused)."""
    unscorable: list[str]
    """One sentence per prompt with images that cannot be scored as the task (:func:`unscorable_prompts`)."""


def judged_task_images(source: Mapping[str, Any], task: str, skip_missing: bool) -> TaskImages:
    """The images of ``task`` instances in the image run a ``source`` setting names; a run that
    holds none is refused in one sentence, saying why its prompts cannot be scored."""
    path, store, completeness = opened_image_run(source)
    images, missing = present_images(path, task_images(store, task), skip_missing, "judge")
    unscorable = unscorable_prompts(store, task)
    if not images:
        why = f"; {unscorable_note(unscorable, task, 3)}" if unscorable else ""
        raise UsageError(f"{path} holds no finished images of {task} instances "
                         f"(prompt meta needs task, obj_a, obj_b and label){why}.")
    return TaskImages(store, completeness, images, missing, unscorable)


def image_run_source(store: ImageStore, images: Sequence[ImageRecord],
                     completeness: Completeness | None = None) -> dict[str, Any]:
    """The image run a judgement reads, as settings: where it is, its identity (when its config
    has one), its dataset, a digest of the finished images judged (ids, seeds, files) and how
    complete the run was (a ``--partial`` read of an unfinished run is another identity)."""
    listed = [[r.prompt_id, r.image_index, r.seed, str(r.path.relative_to(store.path))] for r in images]
    digest = hashlib.sha256(json.dumps(listed).encode("utf-8")).hexdigest()
    source = {"path": str(store.path.resolve()), "identity": (store.run.config() or {}).get("identity"),
              "dataset": source_dataset(store), "images": len(images), "images_sha256": digest}
    if completeness is not None:
        source["completeness"] = completeness.to_dict()
    return source


def source_dataset(store: ImageStore) -> str | None:
    """The image run's dataset as ``name@version`` (or the prompt file), from its config.

    ``spatialprobe synthesize`` records it as ``prompts`` (in ``settings`` once synthesis runs
    on the run spine); ``dataset`` is read too.
    """
    config = store.run.config() or {}
    for where in (config, config.get("settings") or {}):
        dataset = where.get("dataset") or where.get("prompts")
        if isinstance(dataset, dict):
            dataset = f"{dataset.get('name')}@{dataset.get('version')}"
        if dataset:
            return str(dataset)
    return None


def source_info(store: ImageStore, images: Sequence[ImageRecord]) -> dict[str, str]:
    models = sorted({f"{r.backend}:{r.model}" for r in images})
    return {"model": " | ".join(models),
            "dataset": source_dataset(store) or str(images[0].meta.get("task"))}
