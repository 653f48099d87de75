"""The narrow interfaces of detectors and depth estimators: a batch of images in, a list out.

A :class:`Detector` is given, for each image, the object names the prompt mentions and returns
every detection above its threshold as :class:`Detection` records named by *our* object names
(closed-set detectors map their classes back through an alias map). A :class:`DepthEstimator`
returns one 2-D float array of **depth** (larger = farther) per image, at the image's size;
adapters whose model predicts disparity convert it with :func:`detectors.depth.to_depth`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from spatialprobe.detectors.rules import Box
from spatialprobe.errors import UsageError


def as_box(values: Sequence[float]) -> Box:
    """(x0, y0, x1, y1) as floats; anything but four numbers is a ValueError, not a short box."""
    x0, y0, x1, y1 = (float(v) for v in values)
    return (x0, y0, x1, y1)


@dataclass(frozen=True)
class Detection:
    """One detected object."""

    label: str
    """Our object name (the query it answers), e.g. ``tyre``."""
    box: Box
    """(x0, y0, x1, y1) in pixels of the original image, y pointing down."""
    score: float
    """Detector confidence in [0, 1]."""

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "box": [float(v) for v in self.box], "score": float(self.score)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Detection:
        return cls(data["label"], as_box(data["box"]), float(data["score"]))


@runtime_checkable
class Detector(Protocol):
    name: str

    def describe(self) -> dict[str, Any]:
        """Model id and settings, for the run's configuration."""

    def detect(self, images: Sequence[Any], queries: Sequence[Sequence[str]]) -> list[list[Detection]]:
        """Detections for each PIL image, looking for the object names in ``queries[i]``."""


@runtime_checkable
class DepthEstimator(Protocol):
    name: str

    def describe(self) -> dict[str, Any]:
        """Model id, what the model predicts (depth or disparity) and the conversion used."""

    def estimate(self, images: Sequence[Any]) -> list[np.ndarray]:
        """Depth (larger = farther) for each PIL image, shape (height, width)."""


def best_per_object(detections: Sequence[Detection], names: Sequence[str], ties: str = "first"
                    ) -> dict[str, Detection | None]:
    """The highest-confidence detection of each name (None when the name was not detected).

    Among exactly tied top scores, ``ties="first"`` keeps the first detection (the
    spatial-commonsense release's strict ``>``) and ``ties="last"`` the last one (GenEval's
    ``np.argsort(scores)[::-1]`` in ``evaluation/evaluate_images.py`` puts the later index first).
    """
    if ties not in ("first", "last"):
        raise UsageError(f"ties must be 'first' or 'last', not {ties!r}")
    best: dict[str, Detection | None] = dict.fromkeys(names)
    for det in detections:
        if det.label in best:
            current = best[det.label]
            if current is None or det.score > current.score or (ties == "last" and det.score == current.score):
                best[det.label] = det
    return best


def nms(detections: Sequence[Detection], iou_threshold: float) -> list[Detection]:
    """Greedy per-label non-maximum suppression: drop boxes overlapping a better one of the label."""
    from spatialprobe.detectors.rules import iou

    kept: list[Detection] = []
    for det in sorted(detections, key=lambda d: -d.score):
        if all(k.label != det.label or iou(k.box, det.box) <= iou_threshold for k in kept):
            kept.append(det)
    return kept
