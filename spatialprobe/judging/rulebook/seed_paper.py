"""The spatial-commonsense paper's rules (ISM (Box)): size, height and VDG position, each with the
release's code as its reference (``xxxiaol/spatial-commonsense`` ``code/*/image_probing_box.py``).

Size and height compare area x depth^2 and box height x depth; position is VDG (Elliott & Keller
2013): inside, else the angle between the box centres. The geometry is
:mod:`spatialprobe.detectors.rules`; the release's own comparisons, box choice and mean depth are
:mod:`spatialprobe.detectors.rules_reference`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

from spatialprobe.detectors import rules
from spatialprobe.detectors import rules_reference as ref
from spatialprobe.detectors.base import Detection
from spatialprobe.judging.rulebook.record import Image, JudgeRule, Mode, pair_row, unrecognized

RELEASE = "xxxiaol/spatial-commonsense"


def release_pair(detections, a: str, b: str) -> tuple[Detection | None, Detection | None]:
    """The release's box of each object (:func:`rules_reference.release_best`)."""
    return ref.release_best(detections, a), ref.release_best(detections, b)


def judge_scale(mode: Mode, image: Image, measure: Callable[[Any], float], what: str, release: bool
                ) -> dict[str, Any]:
    """size / height: area x depth^2 or height x depth of each object's box. The release counts a
    best box without area (size) or height (height) as not recognized
    (code/size/image_probing_box.py: ``if size_a>0 and size_b>0``; height: ``height_a>0 and ...``).
    The corrected mode averages depth over ``image.depth_region``; the reference (``release``) as
    the release (a NaN mean of a box with no pixel answers "smaller" / "shorter", written as null)."""
    a, b = image.obj_a, image.obj_b
    det_a, det_b = mode.boxes(image.detections, a, b)
    row = pair_row(det_a, det_b)
    if det_a is None or det_b is None:
        return unrecognized(row, ((a, det_a), (b, det_b)))
    flat = [n for n, d in ((a, det_a), (b, det_b)) if measure(d.box) <= 0]
    if flat:
        row["explanation"] = f"not recognized: box of zero {what} for {', '.join(flat)}"
        return row
    depth_of: Callable[[Any], float]
    if release:
        depth_of = partial(ref.release_mean_depth, image.depth)
    else:
        depth_of = lambda box: rules.mean_depth(image.depth, box, image.depth_region)  # noqa: E731
    row["depth_a"], row["depth_b"] = depth_of(det_a.box), depth_of(det_b.box)
    row["pred"], row["explanation"] = mode.geometry(det_a.box, row["depth_a"], det_b.box, row["depth_b"],
                                                    labels=image.labels)
    return without_nan(row) if release else row


def without_nan(row: dict[str, Any]) -> dict[str, Any]:
    """A NaN depth (the release's mean of a box with no pixel) is written as null, with the reason
    (predictions.jsonl stays standard JSON)."""
    nan = [key for key in ("depth_a", "depth_b") if key in row and math.isnan(row[key])]
    for key in nan:
        row[key] = None
    if nan:
        row["explanation"] = (f"{' and '.join(nan)}: the release's mean over a box with no pixel is NaN, and "
                              f"no comparison with NaN holds -> {row['pred']}")
    return row


def _scale(name: str, task: str, geometry, measure, what: str, script: str) -> JudgeRule:
    def image(release: bool):
        return partial(judge_scale, measure=measure, what=what, release=release)

    return JudgeRule(
        name=name, tasks=(task,), default_for=(task,), judges=f"the {task} of two objects",
        corrected=Mode(geometry, image=image(False)),
        reference=Mode(geometry, boxes=release_pair, image=image(True), follows=f"{RELEASE} {script}"),
        reads_depth=True, depth_region=True)


SIZE = _scale("area*depth^2", "size", rules.size_rule, rules.area, "area", "code/size/image_probing_box.py")
"""size: A larger when area(A) x depth(A)^2 > area(B) x depth(B)^2."""
HEIGHT = _scale("height*depth", "height", rules.height_rule, rules.box_height, "height",
                "code/height/image_probing_box.py")
"""height: A taller when height(A) x depth(A) > height(B) x depth(B)."""

POSREL_RELEASE = Mode(ref.release_position_judge, boxes=release_pair, takes_thresholds=False,
                      follows=f"{RELEASE} code/posrel/image_probing_box.py")
"""The release's posrel comparisons: no angle, its own sign, no arguments."""
VDG = JudgeRule(name="vdg", tasks=("posrel", "posrel2d"), default_for=("posrel", "posrel2d"),
                corrected=Mode(rules.vdg_judge), reference=POSREL_RELEASE, thresholds=("above", "below"))
"""VDG: inside if box A lies within box B, else the angle of A's centre seen from B's."""
VDG_LEGACY = JudgeRule(name="vdg-legacy", tasks=("posrel", "posrel2d"), corrected=Mode(rules.vdg_legacy_judge),
                       reference=POSREL_RELEASE, thresholds=("above", "below"))
"""VDG with the released code's opposite vertical sign (above and below swapped), on purpose."""
