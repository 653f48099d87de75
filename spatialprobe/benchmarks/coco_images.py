"""Images a benchmark's records name by file, found in the folder a user gives (COCO's layout:
the file itself, or under ``train2017/``, ``val2017/`` or ``images/``), and the version of a
records file. VSR and SpatialMQA read their COCO images through these; a missing image is
refused or counted, never a silent gap.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from spatialprobe.files import DataError

IMAGE_SUBDIRS = ("", "train2017", "val2017", "images")


def file_version(path: Path) -> str:
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def find_images(examples, images_dir: str | Path, subdirs: tuple[str, ...] = IMAGE_SUBDIRS
                ) -> tuple[dict[str, Path], list[str]]:
    """(example id -> image path, ids whose image is missing) for a COCO image folder; each
    example's ``image`` file name is looked for in ``images_dir`` and the given subfolders."""
    images_dir = Path(images_dir)
    found: dict[str, Path] = {}
    missing: list[str] = []
    for example in examples:
        for sub in subdirs:
            candidate = images_dir / sub / example.image
            if candidate.exists():
                found[example.id] = candidate
                break
        else:
            missing.append(example.id)
    return found, missing


def usable_images(examples, images_dir: str | Path, *, total: int, subdirs: tuple[str, ...] = IMAGE_SUBDIRS,
                  skip_missing: bool = False, limit: int | None = None, what: str = "examples"
                  ) -> tuple[dict[str, Path], list[str], dict[str, Any]]:
    """(example id -> image path, ids whose image is missing, coverage) for the examples of a
    benchmark. A missing image is refused, naming the first and the count, unless
    ``skip_missing`` (or ``limit``, a smoke test on part of a folder): never a silent gap.
    ``coverage`` (``summary.json``'s ``details.coverage``, the table's first line) says how many
    of the file's ``total`` examples are used and why the others are not."""
    found, missing = find_images(examples, images_dir, subdirs)
    if not found:
        raise DataError(images_dir, None, None, f"none of the {len(examples):,} images were found here: "
                        "--images should be the COCO folder (flat, or with "
                        f"{', '.join(s + '/' for s in subdirs if s)} inside)")
    if missing and not (skip_missing or limit):
        first = next(e.image for e in examples if e.id == missing[0])
        raise DataError(images_dir, None, None, f"{len(missing):,} of {len(examples):,} {what} have no "
                        f"image here (first: {first}); add the images, or pass --skip-missing to "
                        f"evaluate the {len(found):,} that have one (counted and recorded)")
    coverage = {"used": len(found), "total": total, "skipped_missing": len(missing),
                "skip_missing": skip_missing, "limit": limit}
    return found, missing, coverage


def without_images(examples, total: int, limit: int | None) -> tuple[dict[str, None], list[str], dict[str, Any]]:
    """What :func:`usable_images` returns for examples read without images (a blind audit):
    every example kept, its image None."""
    coverage = {"used": len(examples), "total": total, "skipped_missing": 0, "skip_missing": False, "limit": limit}
    return {e.id: None for e in examples}, [], coverage
