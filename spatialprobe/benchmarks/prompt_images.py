"""The generated images of a text-to-image prompt set (GenEval 2, SpatialGenEval), found by their
prompt's text: from ``--images``, either

* a JSON object ``{prompt: image path}`` (GenEval 2's ``--image_filepath_data``; a path relative
  to the JSON file's folder; a list of paths for several images of one prompt), or
* a ``spatialprobe synthesize`` run folder whose prompts are the set's texts (every image of a
  prompt; a finished run only).

:func:`images_by_prompt` maps each prompt text to its image paths; a prompt without one is left out
and counted (the source's coverage says how many).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.copy_images import images_checked
from spatialprobe.errors import DataError, UsageError


class _Unread(dict[str, list[str]]):
    """Every prompt's images, not read (:func:`spatialprobe.benchmarks.copy_images.text_only` without
    ``--images``): each prompt has one, named by nothing."""

    def __contains__(self, prompt: object) -> bool:
        return True

    def __missing__(self, prompt: str) -> list[str]:
        return ["unread"]


def images_by_prompt(images: str | None, what: str) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """(prompt text -> image paths, how the run records the images: path and content version)."""
    from spatialprobe.benchmarks.local_copy import version_of

    if not images and not images_checked():  # audit blind: the prompts' questions alone
        return _Unread(), {"path": None, "version": None}
    if not images:
        raise UsageError(f"{what} judges generated images: pass --images, a JSON object {{prompt: image path}} "
                         "or a spatialprobe synthesize run of its prompts.")
    where = Path(images)
    if where.is_file() and where.suffix == ".json":
        return _from_map(where), {"path": str(where.resolve()), "version": version_of([where])}
    if where.is_dir():
        return _from_run(where)
    raise UsageError(f"--images {where}: neither a JSON file {{prompt: image path}} nor an image run folder")


def _from_map(path: Path) -> dict[str, list[str]]:
    from spatialprobe.files import read_json_file

    data = read_json_file(path)
    if not isinstance(data, Mapping):
        raise DataError(path, None, None, "expected a JSON object {prompt: image path}")
    out: dict[str, list[str]] = {}
    for prompt, value in data.items():
        paths = [value] if isinstance(value, str) else value
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise DataError(path, None, str(prompt)[:60], "expected an image path or a list of them")
        found = [p if Path(p).is_absolute() else str((path.parent / p).resolve()) for p in paths]
        missing = [p for p in found if images_checked() and not Path(p).is_file()]
        if missing:
            raise DataError(path, None, str(prompt)[:60], f"image {missing[0]} not found")
        out[str(prompt).strip()] = found
    return out


def _from_run(folder: Path) -> tuple[dict[str, list[str]], dict[str, Any]]:
    from spatialprobe.imagestore import open_image_run, present_images

    store, completeness = open_image_run(folder)
    out: dict[str, list[str]] = {}
    for record in present_images(store.path, store.records(), False, "judge")[0]:
        out.setdefault(str(record.prompt).strip(), []).append(str(record.path))
    return out, {"path": str(folder.resolve()), "completeness": completeness.to_dict()}
