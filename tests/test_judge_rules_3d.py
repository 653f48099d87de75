"""T2I-CompBench++'s 3-D spatial rule (judge posrel3d): ``--mode reference`` equals
``UniDet_eval/3D_spatial_eval.py`` (tests/judge_reference.py) on random boxes and depth maps; the
corrected rule on known scenes; shapes' 3-D scenes score 100 and ``--error-rate`` exactly."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from judge_reference import t2i_3d_image, t2i_normalise
from modes_helpers import random_detections, released

from spatialprobe.detectors import rules_3d as r3
from spatialprobe.detectors.base import Detection
from spatialprobe.imagestore import ImageStore, PromptItem
from spatialprobe.judging.box import JudgeConfig, judge_image, judge_run
from spatialprobe.registry import Spec
from spatialprobe.synthesis import synthesize
from spatialprobe.synthesis.prompt_sets import PromptSet

pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
COLOUR = Spec("colour", {})
META = {"obj_a": "cat", "obj_b": "dog"}


def cfg3d(mode="corrected", **more):
    return JudgeConfig(**{"task": "posrel3d", "detector": COLOUR, "depth": COLOUR, "rule": "t2i-compbench-3d",
                          "mode": mode, **more})


def test_reference_is_the_script_on_random_boxes_and_depth_maps():
    """Its transposed box slice, NaN means of empty slices (thin boxes), overlap credit, object
    lookup over the detector's list and image score; a non-square map so the transposition shows."""
    rng = np.random.default_rng(7)
    credited = 0
    for k in range(400):
        depth = rng.uniform(0.5, 10.0, size=(32, 40))
        dets = random_detections(rng, ("cat", "dog"), 40, 32, most=2)
        if k % 2:  # a dog box near the first cat box, so that boxes overlap (the credited branch)
            cat = next((d.box for d in dets if d.label == "cat"), (10.0, 5.0, 30.0, 20.0))
            shift = rng.uniform(-2, 2, size=2)
            dets.insert(0, Detection("dog", (cat[0] + shift[0], cat[1] + shift[1], cat[2] + shift[0] + 3,
                                          cat[3] + shift[1] + 2), 0.7))
        positions = {}
        for gold in r3.RELATIONS_3D:
            row = judge_image(cfg3d("reference"), dets, depth, {**META, "label": gold})
            score, positions[gold] = t2i_3d_image(released(dets), "cat", "dog", gold, t2i_normalise(depth))
            assert row["t2i_compbench_3d_score"] == pytest.approx(score, rel=1e-12, abs=1e-15), (k, gold)
        best = max(positions.values(), key=lambda v: v or 0.0)
        expected = None if not best else next(g for g in r3.RELATIONS_3D if positions[g] == best)
        assert row["pred"] == expected, (k, row, positions)
        credited += bool(best)
    assert credited == 35  # images whose relation gets credit (the rest: no overlap, NaN or missing boxes)


def test_in_front_of_without_overlap_scores_0_in_reference_and_1_corrected():
    """T2I-CompBench's issue #23: "a mouse in front of a car", boxes apart, the mouse nearer."""
    depth = np.full((20, 40), 8.0)
    depth[:, :10] = 2.0  # the mouse's side is nearer
    mouse, car = Detection("mouse", (2, 5, 8, 15), 1.0), Detection("car", (15, 2, 38, 18), 1.0)
    meta = {"obj_a": "mouse", "obj_b": "car", "label": "in front of"}
    ref = judge_image(cfg3d("reference"), [mouse, car], depth, meta)
    fixed = judge_image(cfg3d(), [mouse, car], depth, meta)
    assert (ref["pred"], ref["t2i_compbench_3d_score"]) == (None, 0.5)  # 0.25 + 0.25 + 0 / 2
    assert (fixed["pred"], fixed["t2i_compbench_3d_score"]) == ("in front of", 1.0)


def test_hidden_needs_the_boxes_to_meet_and_behind_is_then_the_weaker_answer():
    disparity = np.zeros((20, 20))
    disparity[10:, 10:] = 1.0  # B's box is near
    far, near = (2, 2, 12, 12), (10, 10, 20, 20)
    assert r3.t2i_3d_judge(far, near, "hidden", disparity)[0] == 1.0
    assert r3.t2i_3d_judge(far, near, "behind", disparity)[0] == 0.5
    assert r3.t2i_3d_judge((2, 2, 8, 8), near, "hidden", disparity)[0] == 0.0
    assert r3.t2i_3d_judge((2, 2, 8, 8), near, "behind", disparity)[0] == 1.0
    # the script credits hidden as behind, by overlap: IoU 4/196 -> (4/196) / 0.5
    score, _ = r3.t2i_3d_reference(far, near, "hidden", disparity.T)  # its slice is transposed
    assert score == pytest.approx((4 / 196) / 0.5)


def test_normalised_disparity_is_min_max_of_inverse_depth_and_zero_without_contrast():
    depth = np.array([[1.0, 2.0], [4.0, 4.0]])
    assert r3.normalised_disparity(depth).tolist() == [[1.0, 1 / 3], [0.0, 0.0]]
    assert r3.normalised_disparity(np.full((3, 3), 2.0)).tolist() == [[0.0] * 3] * 3


def prompts_3d(n_each=6) -> PromptSet:
    pairs = [("dog", "desk"), ("car", "mouse"), ("sheep", "key"), ("cat", "boy"), ("chair", "lamp"), ("bird", "cup")]
    items = [PromptItem(f"p{i}-{j}", f"a {a} {rel} a {b}", {"task": "posrel3d", "obj_a": a, "obj_b": b, "label": rel})
             for i, rel in enumerate(r3.RELATIONS_3D) for j, (a, b) in enumerate(pairs[:n_each])]
    return PromptSet(tuple(items), "posrel3d-test")


def shapes(tmp_path, n=1, **generation):
    return synthesize(prompts_3d(), tmp_path / "images", "shapes",
                      {"size": 64, "device": "cpu", "precision": "auto", **generation},
                      images_per_prompt=n, batch_size=16)


def test_shapes_3d_scenes_score_100_corrected(tmp_path):
    shapes(tmp_path, n=2)
    summary = judge_run(str(tmp_path / "images"), str(tmp_path / "judge"), cfg3d(device="cpu"))
    assert summary["accuracy"] == {"mean": 100.0, "std": None, "n": 36, "ci": [84.491392, 100.0]}  # Wilson, all right
    assert summary["details"]["mode"] == "corrected" and summary["details"]["depth"]["name"] == "colour"
    rows = [json.loads(line) for line in (tmp_path / "judge" / "predictions.jsonl").open()]
    # both objects found with full confidence and the position credited, but the hidden object:
    # its colour fills 40 of the 49 cells of its box (B covers a 3 x 3 corner)
    hidden = 0.25 * (40 / 49 + 1.0) + 0.5
    assert [r["t2i_compbench_3d_score"] for r in rows] == [hidden if r["gold"] == "hidden" else 1.0 for r in rows]


def test_error_rate_reverses_exactly_the_drawn_share_of_3d_scenes(tmp_path):
    shapes(tmp_path, n=4, error_rate=0.3)
    made = ImageStore(tmp_path / "images").rows()
    flags = {(r["prompt_id"], r["image_index"]): r["drawn"]["reversed"] for r in made}
    assert list(flags.values()) == [random.Random(r["seed"]).random() < 0.3 for r in made]
    summary = judge_run(str(tmp_path / "images"), str(tmp_path / "judge"), cfg3d(device="cpu"))
    reversed_ = sum(flags.values())
    assert summary["accuracy"]["mean"] == pytest.approx(100 * (1 - reversed_ / 72))
    for p in map(json.loads, (tmp_path / "judge" / "predictions.jsonl").open()):
        assert (p["pred"] != p["gold"]) == flags[(p["instance_id"], p["image_index"])]
        assert p["recognized"]


def test_judge_posrel3d_command_reads_depth_and_records_the_mode(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe import registry
    from spatialprobe.cli import app

    assert registry.names("position-judge-3d") == ["t2i-compbench-3d"] and "heim" in registry.names("position-judge")
    shapes(tmp_path)
    run = CliRunner().invoke
    base = ["judge", "posrel3d", str(tmp_path / "images"), "--detector", "colour", "--depth", "colour", "--no-gallery"]
    refused = run(app, [*base, "--rule", "vdg", "--out", str(tmp_path / "x")])
    assert refused.exit_code == 2 and refused.stderr == (
        "Error: judge posrel3d needs a rule that reads depth (t2i-compbench-3d); vdg judges 2-D relations only.\n")
    region = run(app, [*base, "--depth-region", "covered", "--out", str(tmp_path / "x")])
    assert region.exit_code == 2 and not (tmp_path / "x").exists()
    assert region.stderr == ("Error: --depth-region applies to judge size and height only; posrel3d's rule "
                             "averages the box as its script does.\n")
    done = run(app, [*base, "--mode", "reference", "--out", str(tmp_path / "j")])
    assert done.exit_code == 0, done.output
    settings = json.loads((tmp_path / "j" / "config.json").read_text())["settings"]
    assert (settings["mode"], settings["rule"]) == ("reference", "t2i-compbench-3d")
    assert settings["depth"]["name"] == "colour"
    table = (tmp_path / "j" / "table.md").read_text()
    assert "T2I-CompBench++ 3-D spatial score (mean over 18 images, 0-1; its UniDet_eval/3D_spatial_eval.py)" in table


def test_posrel3d_reads_a_transformers_depth_model_through_the_depth_adapter(tmp_path):
    """A tiny DPT whose head predicts one disparity everywhere: the normalised map has no contrast,
    so no 3-D relation holds and every image is unrecognized (the colour scenes' boxes are found)."""
    from judge_helpers import tiny_dpt

    shapes(tmp_path)
    model = tiny_dpt(tmp_path / "dpt")
    cfg = cfg3d(device="cpu", depth=Spec("dpt", {"model": str(model)}))
    summary = judge_run(str(tmp_path / "images"), str(tmp_path / "judge"), cfg)
    assert summary["metrics"]["recognized_ratio"]["mean"] == 0.0 and summary["accuracy"]["n"] == 18
    assert summary["details"]["depth"]["predicts"] == "disparity"
    rows = [json.loads(line) for line in (tmp_path / "judge" / "predictions.jsonl").open()]
    assert all(r["found_a"] and r["found_b"] and "disparity A 0 vs B 0" in r["explanation"] for r in rows)
