"""The annotation page of ISM (Human): one self-contained HTML file holding every image of an
image run's task (as a data URI), the question for it and the answer options.

:func:`export_page` writes it; the annotator answers with the keyboard and saves a JSON file that
they send back, which :mod:`spatialprobe.judging.human` scores. :func:`read_run` reads the run's
items (gold kept aside) and :func:`page_id` names the page, so answers are matched to the page
they came from.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from spatialprobe import tasks
from spatialprobe.errors import UsageError
from spatialprobe.extras import require
from spatialprobe.files import DataError, shown
from spatialprobe.imagestore import Completeness, ImageStore, missing_record, open_image_run, present_images

CANT_TELL = "cannot tell"
"""The option offered besides the task's labels: it counts as answered (``--min-answered``) and
is scored as unanswered (a seeded guess)."""


def question(task: str, a: str, b: str) -> str:
    """What the annotator is asked: the task file's ``annotation_question``."""
    return tasks.get(task).question(a, b)


def annotation_items(run: str | Path, task: str | None = None, *, partial: bool = False,
                     with_files: bool = True, skip_missing: bool = False
                     ) -> tuple[str, list[dict[str, Any]]]:
    """(task, items) for the run's images of one task, in store order, with gold kept aside."""
    page = read_run(run, task, partial=partial, with_files=with_files, skip_missing=skip_missing)
    return page.task, page.items


@dataclass
class AnnotationRun:
    """What an annotation page is made from: the image run read (and how complete it is), the
    task, its items, and the image files skipped as missing (``--skip-missing``)."""

    store: ImageStore
    completeness: Completeness
    task: str
    items: list[dict[str, Any]]
    missing: dict[str, Any] | None = None


def read_run(run: str | Path, task: str | None = None, *, partial: bool = False, with_files: bool = True,
             skip_missing: bool = False) -> AnnotationRun:
    """The run's images of one task (``with_files``: those whose file is there, a gone file
    refused unless ``skip_missing``; else every recorded image, as scoring answers reads no
    image)."""
    store, completeness = open_image_run(run, partial=partial)
    records = [r for r in store.records() if r.meta.get("task") in tasks.names()
               and {"obj_a", "obj_b", "label"} <= set(r.meta)]
    found = sorted({r.meta["task"] for r in records})
    if task is None:
        if len(found) != 1:
            raise UsageError(f"{run} holds images of tasks {found or 'none'}; choose one with --task.")
        task = found[0]
    records = [r for r in records if r.meta["task"] == task]
    for r in records:
        if r.meta["label"] not in tasks.labels_of(task):  # it would be judged and scored 0
            raise DataError(run, None, "label", f"prompt {shown(r.prompt_id)} has the label "
                            f"{shown(r.meta['label'])}, not a {task} label ({', '.join(tasks.labels_of(task))})")
    missing = None
    if with_files:
        records, gone = present_images(run, records, skip_missing, "ask about")
        missing = missing_record(store, gone, len(records)) if gone else None
    items = [{"id": f"{r.prompt_id}#{r.image_index}", "path": r.path, "obj_a": r.meta["obj_a"],
              "obj_b": r.meta["obj_b"], "gold": r.meta["label"], "prompt": r.prompt,
              "question": question(task, r.meta["obj_a"], r.meta["obj_b"])} for r in records]
    if not items:
        raise UsageError(f"{run} holds no finished images of {task} instances.")
    return AnnotationRun(store, completeness, task, items, missing)


def page_id(run: str | Path, task: str, items: Sequence[dict[str, Any]]) -> str:
    """Names the page by its task and items (not the run's path, so a moved run still imports)."""
    digest = hashlib.sha256(json.dumps([task] + [[i["id"], i["prompt"]] for i in items])
                            .encode()).hexdigest()
    return f"{task}-{digest[:12]}"


def image_data_uri(path: Path, max_side: int = 768, quality: int = 90) -> str:
    """The image as a JPEG data URI (a page of 500 PNGs at 512 px would weigh ~200 MB)."""
    import io

    from spatialprobe.vision import open_image

    require("PIL.Image", "judge", "The annotation page (spatialprobe annotate)")
    image = open_image(path)  # a missing or damaged file: one sentence naming it
    if max(image.size) > max_side:
        image.thumbnail((max_side, max_side))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode()


def export_page(run: str | Path, out: str | Path, task: str | None = None, *, partial: bool = False,
                skip_missing: bool = False) -> AnnotationRun:
    """Write the annotation page for the run's images of ``task``; returns what it was made of
    (the page records the image run's completeness and the image files skipped)."""
    from spatialprobe.files import atomic_write_text

    page = read_run(run, task, partial=partial, skip_missing=skip_missing)
    task, items = page.task, page.items
    options = [*tasks.labels_of(task), CANT_TELL]
    payload = {
        "page_id": page_id(run, task, items), "run": str(Path(run).resolve()), "task": task,
        "options": options, "image_run": page.completeness.to_dict(), "missing_images": page.missing,
        "items": [{"id": i["id"], "question": i["question"],
                   "image": image_data_uri(i["path"])}
                  for i in items],
    }
    template = (resources.files("spatialprobe") / "data" / "annotate.html").read_text("utf-8")
    # Inside <script>, HTML reads "</script" as its end and "<!--<script>" as a switch to a state in
    # which "</script>" no longer ends it; JSON's \u escapes of <, > and & leave no markup at all.
    data = json.dumps(payload).translate({ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"})
    html_page = template.replace("__TITLE__", html.escape(f"spatialprobe annotation: {task}"))
    html_page = html_page.replace("__DATA__", data)
    out = Path(out)
    atomic_write_text(out, html_page)
    return page
