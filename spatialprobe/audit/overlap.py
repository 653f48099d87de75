"""Images shared between benchmarks (and with a declared training set), found by perceptual hash.

Two copies of one photograph rarely share bytes: a benchmark re-encodes, resizes or re-hosts it
(SpatialScore merges eleven older sets; 3DSRBench, CV-Bench and BLINK draw on COCO). Each image is
hashed with ``imagehash.phash`` (the DCT hash of the image shrunk to 32 × 32 grey: a resize or a
JPEG re-save moves few of its 64 bits), and two images are the same where their hashes differ in
at most ``distance`` bits (default :data:`DISTANCE`). For every pair of sets the report counts the
items of each set that show an image of the other, with examples.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from spatialprobe.extras import require

DISTANCE = 6
"""Hashes at most this many bits apart (of 64) are one image: a resize or a JPEG re-save moves 0–4."""
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")


@dataclass(frozen=True)
class ImageSet:
    """Images to compare, each with the items that show it."""

    name: str
    images: Mapping[str, tuple[str, ...]]
    """Image path -> the keys of the items that show it (a folder's image: its own path)."""


def folder_set(name: str, folder: Path) -> ImageSet:
    """Every image file under ``folder`` (recursively), each its own item."""
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    return ImageSet(name, {str(p): (str(p.relative_to(folder)),) for p in files})


def items_set(name: str, shown: Iterable[tuple[str, str]]) -> ImageSet:
    """A set of (item key, image path) pairs."""
    images: dict[str, list[str]] = {}
    for key, path in shown:
        images.setdefault(path, []).append(key)
    return ImageSet(name, {path: tuple(keys) for path, keys in images.items()})


def hashes(paths: Sequence[str]) -> np.ndarray:
    """The 64-bit perceptual hash of each image, as unsigned integers."""
    imagehash = require("imagehash", "audit", "Image overlap by perceptual hash (audit data --against)")
    from spatialprobe.vision import open_image

    out = np.zeros(len(paths), dtype=np.uint64)
    for n, path in enumerate(paths):
        bits = imagehash.phash(open_image(path)).hash.flatten()
        out[n] = np.uint64(int("".join("1" if b else "0" for b in bits), 2))
    return out


def _popcount(values: np.ndarray) -> np.ndarray:
    """Set bits of each uint64."""
    as_bytes = values.view(np.uint8).reshape(*values.shape, 8)
    return np.unpackbits(as_bytes, axis=-1).sum(-1)


def matches(a: np.ndarray, b: np.ndarray, distance: int) -> list[tuple[int, int, int]]:
    """(index in a, index in b, bits apart) of every pair of hashes at most ``distance`` bits apart."""
    found = []
    step = max(1, 2_000_000 // max(len(b), 1))
    for start in range(0, len(a), step):
        apart = _popcount(a[start:start + step, None] ^ b[None, :])
        for i, j in zip(*np.nonzero(apart <= distance), strict=True):
            found.append((start + int(i), int(j), int(apart[i, j])))
    return found


def overlap(sets: Sequence[ImageSet], distance: int = DISTANCE, examples: int = 5) -> list[dict[str, Any]]:
    """For every pair of sets: the items of each that show an image of the other, with examples."""
    hashed = {s.name: (list(s.images), hashes(list(s.images))) for s in sets}
    out = []
    for first, second in combinations(sets, 2):
        paths_a, hash_a = hashed[first.name]
        paths_b, hash_b = hashed[second.name]
        pairs = matches(hash_a, hash_b, distance)
        items_a = sorted({k for i, _, _ in pairs for k in first.images[paths_a[i]]})
        items_b = sorted({k for _, j, _ in pairs for k in second.images[paths_b[j]]})
        out.append({"sets": [first.name, second.name], "images": len({i for i, _, _ in pairs}),
                    "items": {first.name: len(items_a), second.name: len(items_b)},
                    "of": {first.name: sum(len(v) for v in first.images.values()),
                           second.name: sum(len(v) for v in second.images.values())},
                    "examples": [{"a": paths_a[i], "b": paths_b[j], "bits_apart": d} for i, j, d in pairs[:examples]],
                    "shared_items": {first.name: items_a, second.name: items_b}})
    return out
