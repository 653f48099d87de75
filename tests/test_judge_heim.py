"""HEIM's (DALL-Eval's) spatial rule: ``--mode reference`` equals HELM's ``compute_score_spatial``
(tests/judge_reference.py) on random detections; the corrected rule on known boxes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from judge_reference import heim_spatial
from modes_helpers import config, random_detections, released

from spatialprobe.detectors.base import Detection
from spatialprobe.detectors.rules_heim import HEIM_WORDS, heim_judge, heim_reference
from spatialprobe.judging.box import judge_image

LABELS = ("above", "below", "inside", "beside")  # posrel's, in its order


@pytest.mark.parametrize("objects", [("cat", "dog"), ("cat", "cat")])
def test_reference_is_helm_compute_score_spatial_on_random_detections(objects):
    """Exactly one box per class, top-left corners, its own sign, same-class pairs by axis only;
    half the images on whole pixels, so equal offsets (HEIM's ties go vertical) occur."""
    rng = np.random.default_rng(11)
    a, b = objects
    meta = {"obj_a": a, "obj_b": b}
    judged = 0
    for k in range(500):
        dets = random_detections(rng, tuple(dict.fromkeys(objects)), 40, 30, most=1 + k % 3 // 2)
        if k % 2:
            dets = [dataclasses.replace(d, box=tuple(float(round(v)) for v in d.box)) for d in dets]
        for gold, word in HEIM_WORDS.items():
            row = judge_image(config("posrel", "heim"), dets, None, {**meta, "label": gold})
            assert row["heim_correct"] == (heim_spatial(released(dets), a, b, word) == 1), (k, gold)
        expected = next((label for label in LABELS if label in HEIM_WORDS
                         and heim_spatial(released(dets), a, b, HEIM_WORDS[label]) == 1), None)
        assert row["pred"] == expected, (k, row)
        judged += row["boxes_found"] == [1, 1]
    assert judged > 100  # the draws reach the judged branch, not only count mismatches


def test_reference_needs_exactly_one_box_per_class_and_uses_its_own_sign():
    above_b = [Detection("cat", (10, 0, 20, 10), 0.9), Detection("dog", (10, 20, 20, 30), 0.9)]
    # A's corner is higher in the image (y 0 < 20): HEIM names that "below"
    assert heim_reference([above_b[0].box], [above_b[1].box], "below")[0] == 1.0
    assert heim_reference([above_b[0].box], [above_b[1].box], "above")[0] == 0.0
    assert heim_judge(above_b[0].box, above_b[1].box, "above")[0] == 1.0  # corrected: image y points down
    two_cats = [*above_b, Detection("cat", (0, 0, 2, 2), 0.1)]
    row = judge_image(config("posrel", "heim"), two_cats, None, {"obj_a": "cat", "obj_b": "dog", "label": "below"})
    assert (row["pred"], row["heim_correct"], row["boxes_found"]) == (None, False, [2, 1])
    assert row["explanation"].endswith("2 and 1 boxes, not one each -> obj_count_mismatch)")
    fixed = judge_image(config("posrel", "heim", "corrected"), two_cats, None,
                        {"obj_a": "cat", "obj_b": "dog", "label": "above"})
    assert (fixed["pred"], fixed["heim_correct"], fixed["box_a"]) == ("above", True, [10, 0, 20, 10])


def test_corrected_heim_compares_centres_not_corners():
    """A wide box whose centre is right of a small one's, though its top-left corner is further left."""
    wide, small = (0, 10, 40, 20), (15, 12, 18, 18)
    assert heim_judge(wide, small, "right of")[0] == 1.0 and heim_judge(wide, small, "beside")[0] == 1.0
    assert heim_reference([wide], [small], "left of")[0] == 0.0  # corner 0 < 15: HEIM says "right"
    assert heim_reference([wide], [small], "right of")[0] == 1.0
