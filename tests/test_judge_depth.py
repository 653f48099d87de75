import numpy as np
import pytest

from spatialprobe.detectors import rules
from spatialprobe.detectors.colour import ColourDepth, ColourDetector, draw_scene, object_colour
from spatialprobe.detectors.depth import predicts_of_config, to_depth


def test_disparity_is_inverted():
    disparity = np.array([[2.0, 0.5]])
    assert to_depth(disparity, "disparity").tolist() == [[0.5, 2.0]]
    assert to_depth(disparity, "disparity", shift=0.5).tolist() == [[1 / 1.5, 1 / 1e-6]]  # clamped
    assert to_depth(disparity, "depth").tolist() == [[2.0, 0.5]]
    with pytest.raises(ValueError, match="predicts"):
        to_depth(disparity, "inverse")


def test_disparity_used_as_depth_reverses_the_size_answer():
    # A: 10x10 box far away (disparity 0.25 -> depth 4); B: 20x20 box near (disparity 1 -> depth 1).
    # Real sizes: A = 100 * 16 = 1600 > B = 400 * 1 -> A larger. Raw disparity would say smaller.
    box_a, box_b = (0, 0, 10, 10), (0, 0, 20, 20)
    disp_a, disp_b = 0.25, 1.0
    depth_a, depth_b = to_depth(np.array(disp_a), "disparity"), to_depth(np.array(disp_b), "disparity")
    assert rules.size_rule(box_a, float(depth_a), box_b, float(depth_b))[0] == "larger"
    assert rules.size_rule(box_a, disp_a, box_b, disp_b)[0] == "smaller"


def test_predicts_of_config():
    class Cfg:
        depth_estimation_type = "metric"

    assert predicts_of_config(Cfg()) == "depth"
    assert predicts_of_config(object()) == "disparity"


def test_colour_detector_and_depth_read_back_a_drawn_scene():
    image = draw_scene([("dog", (10, 20, 30, 40), 0.5), ("cup", (40, 5, 50, 15), 1.0)], size=(64, 48))
    assert image.size == (64, 48)
    found = ColourDetector().detect([image], [["dog", "cup", "tiger"]])[0]
    boxes = {d.label: d.box for d in found}
    assert boxes == {"dog": (10.0, 20.0, 30.0, 40.0), "cup": (40.0, 5.0, 50.0, 15.0)}
    assert all(d.score == 1.0 for d in found)
    depth = ColourDepth().estimate([image])[0]
    assert depth.shape == (48, 64)
    assert rules.mean_depth(depth, boxes["dog"]) == pytest.approx(255 / 128)  # byte round(0.5*255)=128
    assert rules.mean_depth(depth, boxes["cup"]) == pytest.approx(1.0)
    assert object_colour("dog") != object_colour("cup")
