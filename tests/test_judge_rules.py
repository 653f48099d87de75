import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from spatialprobe import registry
from spatialprobe.detectors import rules


def box_at(cx, cy, half=2.0):
    return (cx - half, cy - half, cx + half, cy + half)


B = box_at(50, 50)


# ---- size and height: hand-computed -------------------------------------------------------------

def test_size_rule_uses_area_times_depth_squared():
    # A: 10x10 box at depth 3 -> 100*9 = 900; B: 20x20 at depth 1 -> 400. A larger despite its box.
    answer, why = rules.size_rule((0, 0, 10, 10), 3.0, (0, 0, 20, 20), 1.0)
    assert answer == "larger"
    assert "900" in why and "400" in why
    assert rules.size_rule((0, 0, 10, 10), 2.0, (0, 0, 20, 20), 1.0)[0] == "smaller"  # 400 vs 400: tie


def test_height_rule_uses_box_height_times_depth():
    # A: height 10 at depth 3 -> 30; B: height 25 at depth 1 -> 25.
    assert rules.height_rule((0, 0, 50, 10), 3.0, (0, 0, 1, 25), 1.0)[0] == "taller"
    assert rules.height_rule((0, 0, 50, 10), 2.0, (0, 0, 1, 25), 1.0)[0] == "shorter"  # 20 < 25


def test_mean_depth_inside_box():
    depth = np.arange(16, dtype=float).reshape(4, 4)  # depth[r, c] = 4r + c
    assert rules.mean_depth(depth, (1, 1, 3, 3)) == pytest.approx((5 + 6 + 9 + 10) / 4)
    # the release's region truncates to whole pixels; "covered" takes every pixel the box touches
    assert rules.mean_depth(depth, (0.5, 0, 1.5, 1)) == 0.0
    assert rules.mean_depth(depth, (0.5, 0, 1.5, 1), region="covered") == pytest.approx((0 + 1) / 2)
    assert rules.mean_depth(depth, (2, 2, 2, 2)) == 10.0  # degenerate box: the pixel it sits on
    assert rules.mean_depth(depth, (-5, -5, 100, 100)) == pytest.approx(7.5)  # clipped to the image


# ---- VDG position ------------------------------------------------------------------------------

@pytest.mark.parametrize("angle,expected", [
    (0, "beside"), (44.9, "beside"), (45, "above"), (90, "above"), (135, "above"),
    (135.1, "beside"), (180, "beside"), (224.9, "beside"), (225, "below"), (270, "below"),
    (315, "below"), (315.1, "beside"), (359, "beside"),
])
def test_vdg_boundary_angles(angle, expected):
    # Place A's centre at `angle` (counter-clockwise, y up) from B's centre; image y points down.
    r = 20.0
    cx = 50 + r * math.cos(math.radians(angle))
    cy = 50 - r * math.sin(math.radians(angle))
    # exact boundaries: nudge by float rounding only, not by design
    a = box_at(cx, cy)
    measured = rules.centre_angle(a, B)
    assert measured == pytest.approx(angle % 360, abs=1e-9)
    if abs(measured - angle) < 1e-9 or angle not in (45, 135, 225, 315):
        assert rules.vdg_position(a, B)[0] == expected


def test_vdg_exact_diagonals():
    # Integer geometry, so the angle is exactly 45/135/225/315 degrees.
    assert rules.vdg_position(box_at(60, 40), B)[0] == "above"    # up-right: 45
    assert rules.vdg_position(box_at(40, 40), B)[0] == "above"    # up-left: 135
    assert rules.vdg_position(box_at(40, 60), B)[0] == "below"    # down-left: 225
    assert rules.vdg_position(box_at(60, 60), B)[0] == "below"    # down-right: 315


def test_vdg_image_y_points_down_and_legacy_sign_swaps():
    a = box_at(50, 10)  # smaller y = higher in the image
    assert rules.vdg_position(a, B)[0] == "above"
    assert rules.vdg_position(a, B, legacy_sign=True)[0] == "below"
    assert rules.vdg_position(box_at(90, 50), B, legacy_sign=True)[0] == "beside"


def test_vdg_thresholds_are_arguments():
    a = box_at(70, 30)  # 45 degrees
    assert rules.vdg_position(a, B, above=(60, 120))[0] == "beside"


def test_vdg_nested_boxes():
    outer, inner = (10, 10, 90, 90), (20, 20, 30, 30)
    assert rules.vdg_position(inner, outer)[0] == "inside"
    assert rules.vdg_position(outer, outer)[0] == "inside"      # edges may touch
    assert rules.vdg_position(outer, inner)[0] != "inside"      # B inside A is not A inside B
    assert rules.vdg_position((5, 20, 30, 30), outer)[0] != "inside"  # sticks out on the left


def test_vdg_shared_centre_has_no_angle():
    # A wide and flat, B tall and thin, same centre: neither lies within the other.
    wide, tall = (0, 45, 100, 55), (45, 0, 55, 100)
    assert rules.vdg_position(wide, tall)[0] == "none"
    assert rules.vdg_position(wide, tall, legacy_sign=True)[0] == "none"
    vdg = registry.lookup("position-judge", "vdg")
    assert rules.classify_position(vdg, wide, tall, ("above", "below", "inside", "beside"))[0] == "none"


def test_vdg_judge_left_right():
    assert rules.vdg_judge(box_at(10, 50), B, "left of")[0] == 1.0
    assert rules.vdg_judge(box_at(10, 50), B, "right of")[0] == 0.0
    assert rules.vdg_judge(box_at(50, 10), B, "left of")[0] == 0.0  # above, not beside


# ---- VISOR, GenEval, T2I-CompBench -------------------------------------------------------------

def test_visor_sign_rule():
    assert rules.visor_sign((10, 50), (50, 50), "left of")
    assert not rules.visor_sign((10, 50), (50, 50), "right of")
    assert rules.visor_sign((50, 10), (50, 50), "above")
    assert rules.visor_sign((50, 90), (50, 50), "below")
    assert not rules.visor_sign((50, 50), (50, 50), "above")  # equal centres: strict sign
    assert rules.visor_any_pair([(90, 0), (10, 0)], [(50, 0)], "left of")  # one pair suffices
    assert not rules.visor_any_pair([], [(50, 0)], "left of")


def test_geneval_margin():
    a, b = (0, 0, 10, 10), (12, 0, 22, 10)  # centres 12 apart on x; dims sum 20 -> margin 2
    assert rules.geneval_relations(a, b) == {"left of"}
    assert rules.geneval_relations(a, b, margin=0.6) == set()  # 12 - 0.6*20 = 0 -> no relation
    # diagonal at 45 degrees: each axis 10/14.1 = 0.71 > 0.5 before the margin -> two relations
    assert rules.geneval_relations((0, 0, 2, 2), (10, 10, 12, 12), margin=0.0) == {"left of", "above"}
    # margin 0.1 x 4 = 0.4 per axis: 9.6/14.14 = 0.68 -> still both
    assert rules.geneval_relations((0, 0, 2, 2), (10, 10, 12, 12)) == {"left of", "above"}
    assert rules.geneval_judge(a, b, "beside")[0] == 1.0


def test_t2i_compbench_iou_damping():
    a, b = (0, 0, 10, 10), (20, 0, 30, 10)  # disjoint, B to the right: A left of B
    assert rules.t2i_compbench_judge(a, b, "left of")[0] == 1.0
    assert rules.t2i_compbench_judge(a, b, "right of")[0] == 0.0
    # overlapping: A=(0,0,10,10), B=(5,0,15,10): IoU = 50/150 = 1/3 -> score 0.1/(1/3) = 0.3
    score, why = rules.t2i_compbench_judge(a, (5, 0, 15, 10), "left of")
    assert score == pytest.approx(0.3)
    assert "IoU 0.333" in why
    assert rules.t2i_compbench_judge((0, 0, 10, 10), (0, 20, 10, 30), "above")[0] == 1.0
    # "beside" uses next-to: far apart on both axes -> 150 / max distance
    assert rules.t2i_compbench_judge((0, 0, 2, 2), (300, 400, 302, 402), "beside")[0] == pytest.approx(150 / 400)


def test_iou():
    assert rules.iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(1 / 3)
    assert rules.iou((0, 0, 1, 1), (2, 2, 3, 3)) == 0.0


def test_judge_registry_classifies_posrel():
    labels = ("above", "below", "inside", "beside")
    for name in registry.names("position-judge"):
        judge = registry.lookup("position-judge", name)
        label, why = rules.classify_position(judge, box_at(50, 10), B, labels)
        expected = "below" if name == "vdg-legacy" else "above"
        assert label == expected, (name, why)
        assert isinstance(why, str) and why
    vdg = registry.lookup("position-judge", "vdg")
    assert rules.classify_position(vdg, (45, 45, 55, 55), (0, 0, 100, 100), labels)[0] == "inside"
    geneval = registry.lookup("position-judge", "geneval")
    assert rules.classify_position(geneval, B, B, labels)[0] == "none"  # same box: no relation


# ---- properties --------------------------------------------------------------------------------

coord = st.floats(0, 500, allow_nan=False)
size = st.floats(0.5, 200, allow_nan=False)
depth = st.floats(0.1, 50, allow_nan=False)


@st.composite
def boxes(draw):
    x, y, w, h = draw(coord), draw(coord), draw(size), draw(size)
    return (x, y, x + w, y + h)


@given(boxes(), depth, boxes(), depth)
def test_swapping_objects_flips_size(box_a, da, box_b, db):
    assume(not math.isclose(rules.area(box_a) * da ** 2, rules.area(box_b) * db ** 2, rel_tol=1e-9))
    assert rules.size_rule(box_a, da, box_b, db)[0] != rules.size_rule(box_b, db, box_a, da)[0]


@given(boxes(), depth, boxes(), depth)
def test_swapping_objects_flips_height(box_a, da, box_b, db):
    assume(not math.isclose(rules.box_height(box_a) * da, rules.box_height(box_b) * db, rel_tol=1e-9))
    assert rules.height_rule(box_a, da, box_b, db)[0] != rules.height_rule(box_b, db, box_a, da)[0]


@given(boxes(), boxes())
def test_swapping_objects_mirrors_vdg(box_a, box_b):
    assume(not rules.contains(box_a, box_b) and not rules.contains(box_b, box_a))
    ab, ba = rules.vdg_position(box_a, box_b)[0], rules.vdg_position(box_b, box_a)[0]
    assert {"above": "below", "below": "above", "beside": "beside", "none": "none"}[ab] == ba


@given(boxes(), depth, boxes(), depth, st.floats(0.1, 10))
def test_common_depth_scale_cancels(box_a, da, box_b, db, scale):
    # Relative depth models know depth only up to scale: the rules must not depend on it.
    assume(not math.isclose(rules.area(box_a) * da ** 2, rules.area(box_b) * db ** 2, rel_tol=1e-6))
    assume(not math.isclose(rules.box_height(box_a) * da, rules.box_height(box_b) * db, rel_tol=1e-6))
    assert rules.size_rule(box_a, da, box_b, db)[0] == rules.size_rule(box_a, da * scale, box_b, db * scale)[0]
    assert rules.height_rule(box_a, da, box_b, db)[0] == rules.height_rule(box_a, da * scale, box_b, db * scale)[0]


def test_mean_depth_follows_the_release_on_half_pixel_box_edges():
    """spatial-commonsense code/size/image_probing_box.py: depth[int(y1):int(y2), int(x1):int(x2)]."""
    depth = np.arange(36, dtype=float).reshape(6, 6)
    box = (0.5, 1.5, 3.5, 4.5)  # float edges at .5, as detectors give them
    release = depth[int(box[1]):int(box[3]), int(box[0]):int(box[2])].mean()  # the release's own expression
    assert rules.mean_depth(depth, box) == release == depth[1:4, 0:3].mean()
    assert rules.depth_region(depth.shape, box) == (1, 4, 0, 3)
    assert rules.depth_region(depth.shape, box, "covered") == (1, 5, 0, 4)
    assert rules.mean_depth(depth, box, region="covered") == depth[1:5, 0:4].mean()
    assert rules.mean_depth(depth, box) != rules.mean_depth(depth, box, region="covered")
    with pytest.raises(ValueError, match="depth region"):
        rules.mean_depth(depth, box, region="touched")
