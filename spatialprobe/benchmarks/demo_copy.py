"""Small SYNTHETIC copies of the benchmarks, to try each one offline in one command
(``spatialprobe bench NAME --demo``, ``vsr --demo``, ``spatialmqa --demo``).

A benchmark module declares ``demo(folder, seed) -> Demo`` (its last function): it writes a few
items in the benchmark's REAL layout - the files its reader reads, images drawn here with Pillow
(two shapes in the relation the gold states), embedded or as files as the real copy has them - and
says how to read them (:class:`Demo`). :func:`write_demo` runs it and leaves :data:`MARKER` in the
folder; every run of data under a folder holding it is marked synthetic in its summary and table
(:func:`synthetic`). The numbers of a demo say nothing about a model.
"""

from __future__ import annotations

import base64
import io
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARKER = "SYNTHETIC.md"
"""The file in a demo copy's folder that says it is synthetic (and what wrote it)."""

RELATIONS = {"left": "to the left of", "right": "to the right of", "above": "above", "below": "below"}
"""The relations a demo scene draws, and how a caption words them."""
OPPOSITE = {"left": "right", "right": "left", "above": "below", "below": "above"}
COLOURS = {"red": (220, 40, 40), "blue": (40, 70, 220), "green": (40, 170, 60), "yellow": (230, 200, 40)}
SHAPES = ("circle", "square")


@dataclass(frozen=True)
class Demo:
    """How to read a demo copy: what ``bench`` is given (``--data``, ``--images``, ``--subset``,
    ``--option``), environment variables it needs (EWoK's password) and the tiny model family
    (:mod:`spatialprobe.tiny`) that asks it."""

    data: Path
    images: Path | None = None
    subset: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    model: str = "llava"


@dataclass(frozen=True)
class Pair:
    """Two objects of a demo scene and the relation of the first to the second."""

    a: str
    b: str
    relation: str

    @property
    def sentence(self) -> str:
        return f"The {self.a} is {RELATIONS[self.relation]} the {self.b}."


def pair(rng: random.Random) -> Pair:
    """Two differently coloured shapes and a relation, drawn from ``rng``."""
    colour_a, colour_b = rng.sample(list(COLOURS), 2)
    return Pair(f"{colour_a} {rng.choice(SHAPES)}", f"{colour_b} {rng.choice(SHAPES)}", rng.choice(list(RELATIONS)))


def draw(scene: Pair, size: int = 64) -> Any:
    """A PIL image of ``scene``: its first object placed in its relation to the second."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), (245, 245, 240))
    pen = ImageDraw.Draw(image)
    centre, offset, r = size // 2, size // 4, size // 8
    dx, dy = {"left": (-1, 0), "right": (1, 0), "above": (0, -1), "below": (0, 1)}[scene.relation]
    for name, (x, y) in ((scene.b, (centre - dx * offset, centre - dy * offset)),
                         (scene.a, (centre + dx * offset, centre + dy * offset))):
        colour, shape = name.split()
        box = (x - r, y - r, x + r, y + r)
        (pen.ellipse if shape == "circle" else pen.rectangle)(box, fill=COLOURS[colour])
    return image


def png(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def b64(image: Any) -> str:
    """An image as base64 PNG text (as EmbSpatial's JSON and 3DSRBench's TSV embed theirs)."""
    return base64.b64encode(png(image)).decode("ascii")


def embedded(image: Any, name: str) -> dict[str, Any]:
    """An image as a Hugging Face Parquet copy embeds it: ``{"bytes", "path"}``."""
    return {"bytes": png(image), "path": name}


def save(image: Any, path: Path) -> str:
    """Save ``image`` at ``path`` (folders made); its path as a string."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return str(path)


def lettered(rng: random.Random, k: int = 4) -> tuple[Pair, str, list[str], int]:
    """A drawn scene, the question about it, ``k`` relation options in a random order and the gold's index."""
    scene = pair(rng)
    options = [scene.relation, *rng.sample([r for r in RELATIONS if r != scene.relation], k - 1)]
    rng.shuffle(options)
    return scene, f"Where is the {scene.a} relative to the {scene.b}?", options, options.index(scene.relation)


def solid(path: Path, colour: tuple[int, int, int], size: int = 24) -> Path:
    """A small image of one colour with a white square at a place drawn from the colour (file
    images a copy names by path)."""
    from PIL import Image, ImageDraw

    path.parent.mkdir(parents=True, exist_ok=True)
    picture = Image.new("RGB", (size, size), colour)
    x = colour[0] % (size - 6)
    ImageDraw.Draw(picture).rectangle((x, 4, x + 5, 9), fill=(255, 255, 255))
    picture.save(path)
    return path


def colour(rng: random.Random) -> tuple[int, int, int]:
    return (rng.randrange(256), rng.randrange(256), rng.randrange(256))


DIRECTIONS = ["left", "right", "front", "back", "front-left", "back-right", "above", "below"]
"""The direction words of the copies that ask a direction among lettered options."""


def directions(rng: random.Random, k: int) -> tuple[list[str], int]:
    """``k`` direction options in a random order and the gold's index."""
    options = rng.sample(DIRECTIONS, k)
    return options, rng.randrange(k)


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_json(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1), encoding="utf-8")
    return path


def write_parquet(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    """``rows`` as one Parquet file (pyarrow: the ``benchmarks`` extra, which reads it too)."""
    from spatialprobe.extras import require

    arrow, parquet = require("pyarrow", "benchmarks"), require("pyarrow.parquet", "benchmarks")
    path.parent.mkdir(parents=True, exist_ok=True)
    parquet.write_table(arrow.Table.from_pylist(list(rows)), path)
    return path


def write_demo(name: str, module: Any, folder: Path, seed: int = 0) -> Demo:
    """Benchmark ``name``'s demo copy (its module's ``demo``) written in ``folder``, with :data:`MARKER`."""
    from spatialprobe import __version__

    folder.mkdir(parents=True, exist_ok=True)
    demo = module.demo(folder, seed)
    (folder / MARKER).write_text(
        f"# SYNTHETIC demo copy of {name}\n\nWritten by spatialprobe {__version__} (seed {seed}) in the layout "
        f"of the real {name} copy, with images drawn on the spot. It is NOT the benchmark: runs of it\n"
        "try the toolkit end to end, and their numbers say nothing about a model.\n", encoding="utf-8")
    return demo


def synthetic(data: Any) -> str | None:
    """The demo copy ``data`` (a file or folder of the run's settings) lies in, where one holds
    :data:`MARKER`: ``"demo copy in FOLDER"``; else None."""
    if isinstance(data, dict):  # VSR's and SpatialMQA's recorded file
        data = data.get("file") or data.get("path")
    if not data or not isinstance(data, str) or data.startswith("hf:"):
        return None
    path = Path(data)
    for folder in (path, *list(path.parents)[:3]):
        if (folder / MARKER).is_file():
            return f"spatialprobe demo copy in {folder.resolve()}"
    return None
