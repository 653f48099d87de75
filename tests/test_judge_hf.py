"""Tiny OWL-ViT, DETR, DPT and Depth Anything models built here, run through the real adapters."""

import json
import random

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

pytest.importorskip("transformers")

from judge_helpers import tiny_depth_anything_metric, tiny_detr, tiny_dpt, tiny_owlvit, write_run

from spatialprobe.cli import app
from spatialprobe.detectors.base import Detection, best_per_object, nms
from spatialprobe.detectors.hf import classes_for, load_aliases
from spatialprobe.registry import Spec, build


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {"owlvit": tiny_owlvit(root / "owlvit"), "dpt": tiny_dpt(root / "dpt"),
            "da": tiny_depth_anything_metric(root / "da"), "detr": tiny_detr(root / "detr")}


def test_owlvit_adapter_batches_queries_and_drops_padding(models):
    detector = build("detector", Spec("owlvit", {"model": str(models["owlvit"]), "threshold": 0.0}))
    images = [Image.new("RGB", (40, 30), "white"), Image.new("RGB", (32, 32), "black")]
    found = detector.detect(images, [["cat", "dog"], ["cat"]])
    # 32x32 input, 16-px patches: 4 predicted boxes per image, each named by one of its queries;
    # the second image's padding query (added by the processor) never takes a box.
    assert [len(f) for f in found] == [4, 4]
    assert {d.label for d in found[0]} <= {"cat", "dog"}
    assert {d.label for d in found[1]} == {"cat"}
    assert all(0.0 < d.score <= 1.0 for f in found for d in f)
    assert detector.detect(images, [["cat"], ["cat"]]) != [[], []]
    strict = build("detector", Spec("owlvit", {"model": str(models["owlvit"]), "threshold": 0.999}))
    assert strict.detect(images[:1], [["cat"]]) == [[]]
    assert detector.describe()["model"] == str(models["owlvit"])


@pytest.mark.parametrize("version,detector,expected", [
    # OWL-ViT stretches the 40x30 image to its square input: boxes scale by (40, 30).
    (1, "owlvit", {(10, 7.5, 30, 22.5), (30, 7.5, 50, 22.5), (10, 22.5, 30, 37.5), (30, 22.5, 50, 37.5)}),
    # OWLv2 pads it to 40x40 first: boxes are relative to the padded square.
    (2, "owlv2", {(10, 10, 30, 30), (30, 10, 50, 30), (10, 30, 30, 50), (30, 30, 50, 50)}),
])
def test_owl_boxes_are_scaled_back_to_the_image(tmp_path, version, detector, expected):
    model = tiny_owlvit(tmp_path / "owl", version=version, cell_boxes=True)
    adapter = build("detector", Spec(detector, {"model": str(model), "threshold": 0.0}))
    assert adapter.describe()["name"] == detector
    found = adapter.detect([Image.new("RGB", (40, 30), "gray")], [["cat"]])[0]
    boxes = {tuple(round(v * 2) / 2 for v in d.box) for d in found}
    assert boxes == expected


def test_detr_adapter_maps_classes_through_aliases(models, tmp_path):
    detector = build("detector", Spec("detr", {"model": str(models["detr"])}))
    found = detector.detect([Image.new("RGB", (40, 30))], [["tyre", "human", "cup"]])[0]
    assert {d.label for d in found} == {"tyre"}  # the model predicts class "tire" for all queries
    assert all(d.score > 0.99 for d in found)
    aliases = tmp_path / "aliases.json"
    aliases.write_text(json.dumps({"wheel": ["tire"]}))
    edited = build("detector", Spec("detr", {"model": str(models["detr"]), "aliases": str(aliases)}))
    assert {d.label for d in edited.detect([Image.new("RGB", (40, 30))], [["tyre", "wheel"]])[0]} == {"wheel"}


def test_alias_map():
    aliases = load_aliases()
    assert classes_for("tyre", aliases) == ["tire"]
    assert classes_for("human", aliases) == ["person"]
    assert classes_for("Woman", aliases) == ["person"]
    assert classes_for("dog", aliases) == ["dog"]  # absent names are looked up as themselves


def test_dpt_adapter_converts_disparity_to_depth(models):
    estimator = build("depth", Spec("dpt", {"model": str(models["dpt"])}))
    depth = estimator.estimate([Image.new("RGB", (40, 30)), Image.new("RGB", (32, 32))])
    assert [d.shape for d in depth] == [(30, 40), (32, 32)]  # resized back to each image
    assert np.allclose(depth[0], 1 / 4.0, atol=1e-5)          # disparity 4 -> depth 0.25
    assert estimator.describe()["predicts"] == "disparity"
    raw = build("depth", Spec("dpt", {"model": str(models["dpt"]), "predicts": "depth"}))
    assert np.allclose(raw.estimate([Image.new("RGB", (32, 32))])[0], 4.0, atol=1e-4)


def test_metric_depth_anything_passes_depth_through(models):
    estimator = build("depth", Spec("depth-anything", {"model": str(models["da"])}))
    assert estimator.describe()["predicts"] == "depth"
    depth = estimator.estimate([Image.new("RGB", (40, 30))])[0]
    assert depth.shape == (30, 40) and np.allclose(depth, 10.0, atol=1e-4)


def test_judge_cli_with_tiny_models(models, tmp_path):
    write_run(tmp_path / "images", "size", [("larger", "larger", True), ("smaller", "smaller", True)])
    result = CliRunner().invoke(app, [
        "judge", "size", str(tmp_path / "images"), "--detector", "owlvit", "--detector-model",
        str(models["owlvit"]), "--threshold", "0.0", "--depth", "dpt", "--depth-model",
        str(models["dpt"]), "--out", str(tmp_path / "j"), "--no-gallery"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    summary = json.loads((tmp_path / "j" / "summary.json").read_text())
    config = json.loads((tmp_path / "j" / "config.json").read_text())
    assert summary["details"]["depth"]["predicts"] == "disparity"
    assert config["settings"]["depth"] == {"name": "dpt", "args": {"model": str(models["dpt"])}}
    rows = [json.loads(line) for line in (tmp_path / "j" / "predictions.jsonl").read_text().splitlines()]
    assert all(r["depth_a"] == pytest.approx(0.25, abs=1e-4) for r in rows if r["recognized"])
    # the depth is the same everywhere, so the box areas decide; the guess is random.Random(0)'s
    rng = random.Random(0)
    area = lambda b: (b[2] - b[0]) * (b[3] - b[1])  # noqa: E731
    expected = [("larger" if area(r["box_a"]) > area(r["box_b"]) else "smaller") if r["recognized"]
                else rng.choice(["larger", "smaller"]) for r in rows]
    assert [r["pred"] for r in rows] == expected
    hits = sum(p == r["gold"] for p, r in zip(expected, rows, strict=True))
    # the two images are one pair of objects in both orders: one unit, nothing to resample, no interval
    assert {frozenset((r["obj_a"], r["obj_b"])) for r in rows} == {frozenset((rows[0]["obj_a"], rows[0]["obj_b"]))}
    assert summary["accuracy"] == {"mean": 100 * hits / 2, "std": None, "n": 2, "ci": None}


def test_tied_top_scores_keep_the_first_box_or_genevals_last():
    """Two boxes of one class with exactly the same top score: the release's strict '>' keeps the
    first; GenEval's np.argsort(scores)[::-1] (evaluation/evaluate_images.py) ranks the last first."""
    first, second = Detection("cat", (0, 0, 10, 10), 0.9), Detection("cat", (20, 20, 30, 30), 0.9)
    scores = np.array([first.score, second.score])
    assert np.argsort(scores)[::-1][0] == 1  # GenEval's own ordering picks index 1
    assert best_per_object([first, second], ["cat"])["cat"] is first
    assert best_per_object([first, second], ["cat"], ties="last")["cat"] is second
    lower = Detection("cat", (40, 40, 50, 50), 0.5)
    assert best_per_object([first, lower], ["cat"], ties="last")["cat"] is first


def test_best_per_object_and_nms():
    dets = [Detection("cat", (0, 0, 10, 10), 0.5), Detection("cat", (1, 1, 11, 11), 0.9),
            Detection("dog", (0, 0, 10, 10), 0.3), Detection("cat", (50, 50, 60, 60), 0.4)]
    best = best_per_object(dets, ["cat", "dog", "cow"])
    assert best["cat"].score == 0.9 and best["dog"].score == 0.3 and best["cow"] is None
    kept = nms(dets, iou_threshold=0.5)  # the 0.5 cat overlaps the 0.9 cat (IoU 81/119)
    assert [d.score for d in kept] == [0.9, 0.4, 0.3]


def test_detection_round_trips_and_refuses_a_box_that_is_not_four_numbers():
    det = Detection("cat", (1.0, 2.0, 3.0, 4.0), 0.5)
    assert Detection.from_dict(det.to_dict()) == det
    with pytest.raises(ValueError, match="not enough values to unpack"):
        Detection.from_dict({"label": "cat", "box": [1, 2, 3], "score": 0.5})
