"""``--backend shapes``: an UNTRAINED synthesizer that draws each prompt's relation as colour-coded
boxes, so the image side (synthesize -> judge -> visor -> report) runs offline with a known answer.

Each object is a filled rectangle in its colour from :func:`detectors.colour.object_colour`, with
the scene's disparity in the blue channel, exactly as ``--detector colour --depth colour`` read
them back (depth = 1 / disparity). What is drawn comes from the prompt's metadata:

* size / height (``obj_a``, ``obj_b``, ``label``): the object the label makes larger (taller) is
  drawn so that the judge's rule gives the gold answer by a wide margin: size compares
  area x depth^2 (the larger object, a square of 0.375 the canvas side at depth 2.0, against
  one of 0.1875 at depth 1.11: 13 times larger), height compares box height x depth (a tall
  narrow box, half the canvas high at depth 2.0, against a short wide one, 0.1875 high at depth
  1.11: 4.8 times taller); the two stand side by side, in a seeded order;
* posrel (``label`` above/below/inside/beside, A = ``obj_a``): A straight above or below B
  (VDG centre angle 90 / 270 degrees), A drawn within B's box (inside) or level with B (beside);
* posrel3d (``label`` in front of/behind/hidden, T2I-CompBench++'s 3-D relations): the nearer
  object is drawn larger and with the nearer disparity; "in front of" and "behind" side by side
  (boxes apart), "hidden" with the nearer B painted over a corner of the farther A, so A's
  colour box (its bounding box) keeps its full extent and meets B's. The corrected 3-D rule then
  gives the drawn relation: A's mean disparity is lower than B's (A's box holds only FAR pixels
  and B's corner), and the boxes meet only in hidden scenes;
* SR2D (``obj_1_attributes``, ``obj_2_attributes``, ``rel_type``): A left of / right of B at the
  same height, or above / below B at the same x (VISOR's centroid sign);
* anything else (an SR2D ``and`` or single-object prompt, a plain line naming two objects): the
  objects it names side by side, with no relation to score; a prompt naming none is background.

``error_rate`` P: each image is drawn with its relation reversed (larger<->smaller,
taller<->shorter, above<->below, inside<->beside, left<->right) when a draw from the image's own
seed falls below P; ``miss_rate`` Q: likewise, with one object (seeded) left out. Both draws use
the image's seed alone, so batching, resuming and Ray give the same images. Each image's row
records what was drawn (``drawn``: relation, reversed, missed, boxes, disparities).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

from spatialprobe.detectors.colour import draw_scene
from spatialprobe.errors import UsageError
from spatialprobe.synthesis.jobs import Job, JobResult

MODEL = "shapes (UNTRAINED colour-coded test scenes)"
REVERSED = {"larger": "smaller", "smaller": "larger", "taller": "shorter", "shorter": "taller",
            "above": "below", "below": "above", "inside": "beside", "beside": "inside",
            "to the left of": "to the right of", "to the right of": "to the left of",
            "left of": "right of", "right of": "left of"}  # posrel2d (benchmark prompt files)
FAR, NEAR = 0.5, 0.9
"""Disparities (blue channel / 255): depth 2.0 for the farther object, 1.11 for the nearer."""
REVERSED.update({"in front of": "behind", "behind": "in front of", "hidden": "in front of"})  # posrel3d

Box = tuple[int, int, int, int]


def scene_relation(meta: Mapping[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(object A, object B, relation to draw) of a prompt's metadata; None where it has none."""
    if "obj_1_attributes" in meta and "rel_type" in meta:  # SR2D / VISOR prompt
        b = (meta.get("obj_2_attributes") or [None])[0]
        rel = meta["rel_type"] if meta["rel_type"] in REVERSED else None
        return meta["obj_1_attributes"][0], b, rel
    label = meta.get("label")
    rel = label if isinstance(label, str) and label in REVERSED else None
    return meta.get("obj_a"), meta.get("obj_b"), rel


def layout(relation: str | None, side: int, flip: bool) -> tuple[Box, float, Box, float]:
    """Boxes (pixels, in a ``side`` x ``side`` canvas) and disparities of A and B for a relation.

    ``flip`` puts A on the right in side-by-side scenes whose relation says nothing of left and right.
    """
    u = side / 16  # layouts are laid out on a 16 x 16 grid, then scaled
    px = lambda *v: tuple(round(c * u) for c in v)  # noqa: E731
    pair = None
    if relation in ("larger", "smaller"):
        big, small = px(1, 5, 7, 11), px(10, 6.5, 13, 9.5)
        pair = (big, FAR, small, NEAR) if relation == "larger" else (small, NEAR, big, FAR)
    elif relation in ("taller", "shorter"):
        tall, short = px(2, 4, 4, 12), px(9, 7, 15, 10)
        pair = (tall, FAR, short, NEAR) if relation == "taller" else (short, NEAR, tall, FAR)
    elif relation in ("in front of", "behind", "hidden"):
        pair = depth_pair(relation, px)
    if pair is not None:
        box_a, disp_a, box_b, disp_b = pair
        if flip:  # mirror the scene: sizes and heights do not depend on the side
            box_a, box_b = mirror(box_a, side), mirror(box_b, side)
        return box_a, disp_a, box_b, disp_b
    boxes: dict[str | None, tuple[Box, Box]] = {
        "above": (px(6, 1, 10, 6), px(4, 9, 12, 15)),
        "below": (px(6, 10, 10, 15), px(4, 1, 12, 7)),
        "inside": (px(6, 6, 10, 10), px(2, 2, 14, 14)),
        "to the left of": (px(1, 5, 6, 11), px(9, 5, 15, 11)),
        "to the right of": (px(10, 5, 15, 11), px(1, 5, 7, 11)),
    }
    boxes["left of"], boxes["right of"] = boxes["to the left of"], boxes["to the right of"]
    box_a, box_b = boxes.get(relation) or boxes["to the left of"]  # beside / no relation
    if relation not in boxes and flip:
        box_a, box_b = mirror(box_a, side), mirror(box_b, side)
    return box_a, NEAR, box_b, NEAR


def depth_pair(relation: str, px) -> tuple[Box, float, Box, float]:
    """posrel3d: the nearer object larger; boxes apart, but for hidden, where B covers A's corner."""
    big, small = px(1, 4, 8, 12), px(10, 6, 14, 10)
    if relation == "in front of":
        return big, NEAR, small, FAR
    if relation == "behind":
        return small, FAR, big, NEAR
    return px(2, 2, 9, 9), FAR, px(6, 6, 14, 14), NEAR


def mirror(box: Box, side: int) -> Box:
    return (side - box[2], box[1], side - box[0], box[3])


def check(error_rate: float, miss_rate: float, size: int) -> None:
    """Refuse settings that cannot be drawn, in one sentence."""
    for option, value in (("--error-rate", error_rate), ("--miss-rate", miss_rate)):
        if not 0.0 <= value <= 1.0:
            raise UsageError(f"{option} is a share of the images, between 0 and 1; got {value}.")
    if size < 32:
        raise UsageError(f"--size for the shapes backend is at least 32 pixels; got {size}.")


class ShapesSynthesizer:
    """UNTRAINED: colour-coded boxes in the prompt's relation (see the module docstring)."""

    name = "shapes"

    def __init__(self, error_rate: float = 0.0, miss_rate: float = 0.0, size: int = 64,
                 model: str = MODEL, device: str = "cpu", precision: str = "auto"):
        check(error_rate, miss_rate, size)
        self.error_rate, self.miss_rate, self.size = float(error_rate), float(miss_rate), int(size)
        # device and precision: a uniform signature; the command line refuses them here (no model)

    @classmethod
    def resolve_generation(cls, generation: dict[str, Any]) -> dict[str, Any]:
        """What decides the images, with defaults filled in and the UNTRAINED label as the model."""
        error_rate = float(generation.get("error_rate", 0.0))
        miss_rate = float(generation.get("miss_rate", 0.0))
        size = int(generation.get("size", 64))
        check(error_rate, miss_rate, size)
        return {"error_rate": error_rate, "miss_rate": miss_rate, "size": size, "model": MODEL}

    def describe(self) -> dict[str, Any]:
        return {"model": MODEL, "weights_hash": None, "untrained": True,
                "settings": {"error_rate": self.error_rate, "miss_rate": self.miss_rate,
                             "size": self.size}}

    def generate(self, jobs: Sequence[Job]) -> list[JobResult]:
        results = []
        for job in jobs:
            start = time.perf_counter()
            image, drawn = self.draw(job)
            results.append(JobResult(job, image, time.perf_counter() - start, drawn=drawn))
        return results

    def draw(self, job: Job) -> tuple[Any, dict[str, Any]]:
        """The image of one job and what was drawn (the row's ``drawn``)."""
        rng = random.Random(job.seed)
        reversed_ = rng.random() < self.error_rate  # the draws come in a fixed order, always made
        missed = rng.random() < self.miss_rate
        left_out = rng.choice("ab")
        flip = rng.random() < 0.5
        a, b, relation = scene_relation(job.meta)
        drawn_relation = REVERSED[relation] if reversed_ and relation else relation
        box_a, disp_a, box_b, disp_b = layout(drawn_relation, self.size, flip)
        objects = [(name, box, disp, key) for name, box, disp, key in
                   ((b, box_b, disp_b, "b"), (a, box_a, disp_a, "a"))  # A last: painted over B
                   if name and not (missed and b and key == left_out)]
        if drawn_relation == "hidden":  # the nearer B covers a corner of A
            objects.reverse()
        image = draw_scene([(name, box, disp) for name, box, disp, _ in objects], (self.size, self.size))
        return image, {
            "relation": relation, "drawn_relation": drawn_relation,
            "reversed": bool(reversed_ and relation), "missed": left_out if missed and b else None,
            "objects": {key: {"name": name, "box": list(box), "disparity": disp}
                        for name, box, disp, key in objects}}
