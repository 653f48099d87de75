"""``--demo`` of ``bench NAME``, ``vsr`` and ``spatialmqa``: try a benchmark offline in one command.

The benchmark module's ``demo`` writes a small SYNTHETIC copy in the real layout
(:mod:`spatialprobe.benchmarks.demo_copy`) into ``--data`` (default ``demo-data/NAME``); without
``--model`` the tiny untrained model the demo names is built into ``tiny-models/FAMILY``
(:mod:`spatialprobe.tiny`) unless it is there; then the command runs as on a real copy. The copy
is deterministic, so the same command resumes its run; the run is marked synthetic and, with a
tiny model, untrained.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from spatialprobe.errors import UsageError

DEMO_HELP = ("Write a small SYNTHETIC copy of the benchmark in its real layout (images drawn on the spot) into "
             "--data (demo-data/NAME if not given) and ask it; without --model, of the tiny untrained model it "
             "names, built into tiny-models/FAMILY. To try it offline; its numbers mean nothing.")
DemoOption = typer.Option(False, "--demo", help=DEMO_HELP)


@dataclass(frozen=True)
class DemoInputs:
    """What a command runs on with ``--demo``: the copy's data and images, its ``--subset`` and
    ``--option`` values, and the model."""

    data: Path
    images: Path | None
    subset: str | None
    options: dict[str, str]
    model: str


def demo_inputs(name: str, module: Any, data: str | None, model: str | None, **given: Any) -> DemoInputs:
    """Write ``name``'s demo copy (``module.demo``) and, where no ``model`` is given, the tiny model it
    names; ``given``: the options that do not apply with ``--demo`` (refused where set)."""
    from spatialprobe.benchmarks.demo_copy import MARKER, write_demo

    typed = [f"--{key.replace('_', '-')}" for key, value in given.items() if value]
    if typed:
        raise UsageError(f"{typed[0]} does not apply with --demo: the demo copy is written and read as it is.")
    if not hasattr(module, "demo"):
        raise UsageError(f"{name} declares no demo copy (a demo(folder, seed) function in its module)")
    folder = Path(data) if data else Path("demo-data") / name
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--data {folder} is a file; with --demo it is the folder the demo copy is written into.")
    demo = write_demo(name, module, folder)
    for key, value in demo.env.items():  # EWoK's test password, for this process only
        os.environ.setdefault(key, value)
    typer.secho(f"Demo: a SYNTHETIC copy of {name} written to {folder} ({MARKER}); its numbers mean nothing.",
                fg=typer.colors.YELLOW, err=True)
    return DemoInputs(demo.data, demo.images, demo.subset, dict(demo.options), model or tiny_model(demo.model))


def tiny_model(family: str) -> str:
    """``tiny-models/FAMILY``, built (:func:`spatialprobe.tiny.build`) unless a tiny model is there."""
    from spatialprobe.tiny import MARKER, build

    folder = Path("tiny-models") / family
    if not (folder / MARKER).is_file():
        build(family, folder)
        typer.secho(f"Built the tiny UNTRAINED {family} model in {folder} (spatialprobe models tiny {family}).",
                    fg=typer.colors.YELLOW, err=True)
    return str(folder)


def coco_inputs(name: str, module: Any, demo: bool, data: Path | None, images: Path | None, model: str | None,
                text_alone: bool) -> tuple[Path, Path | None, str]:
    """(data folder, COCO image folder, model) of ``vsr`` or ``spatialmqa``: the demo copy's with
    ``--demo``; the images None where the run asks the text alone (``--image-condition none``)."""
    if demo:
        found = demo_inputs(name, module, None if data is None else str(data), model, images=images)
        data, images, model = found.data, found.images, found.model
    data = required(data, "--data", name)
    images = None if text_alone else required(images, "--images", name)  # none: no image is read
    return data, images, required(model, "--model", name)


def required(value: Any, option: str, command: str) -> Any:
    """``value``, refused in one sentence where it is missing (an option needed unless ``--demo``)."""
    if value is None:
        raise UsageError(f"{command} needs {option} (or --demo, to try it on a synthetic copy).")
    return value
