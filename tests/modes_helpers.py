"""Random detections and depth maps for the reference-mode tests, in both layouts: the toolkit's
:class:`Detection` and the released dicts (``class``, ``conf``, ``rect``) of tests/judge_reference.py."""

from __future__ import annotations

import numpy as np

from spatialprobe.detectors.base import Detection
from spatialprobe.judging.box import JudgeConfig
from spatialprobe.registry import Spec

SCORES = (0.0, 0.3, 0.5, 0.5, 0.9)
"""Detector scores drawn: exact ties and a zero (which the release never picks)."""


def random_box(rng: np.random.Generator, width: int, height: int) -> tuple[float, float, float, float]:
    """A float box, a third of them thinner than a pixel on one side; corners may lie a little
    outside the image (negative coordinates wrap around in the peers' numpy slices)."""
    x0, y0 = rng.uniform(-3, width), rng.uniform(-3, height)
    kind = int(rng.integers(3))
    w = rng.uniform(0.05, 0.95) if kind == 0 else rng.uniform(1, width / 2)
    h = rng.uniform(0.05, 0.95) if kind == 1 else rng.uniform(1, height / 2)
    return (float(x0), float(y0), float(x0 + w), float(y0 + h))


def random_detections(rng: np.random.Generator, names: tuple[str, ...], width: int, height: int,
                      most: int = 3) -> list[Detection]:
    """0..``most`` boxes of each name, in a shuffled order (the order the peers' lists keep)."""
    found = [Detection(name, random_box(rng, width, height), float(rng.choice(SCORES)))
             for name in names for _ in range(int(rng.integers(most + 1)))]
    return [found[i] for i in rng.permutation(len(found))]


def released(detections: list[Detection]) -> list[dict]:
    return [{"class": d.label, "conf": d.score, "rect": list(d.box)} for d in detections]


def config(task: str, rule: str = "vdg", mode: str = "reference") -> JudgeConfig:
    return JudgeConfig(task=task, detector=Spec("colour", {}), rule=rule, mode=mode)
