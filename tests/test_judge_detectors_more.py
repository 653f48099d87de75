"""GenEval's Mask2Former and Grounding DINO through transformers: tiny models built here, model
outputs stubbed where the answer must be known, and the judge CLI on a tiny image run."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

pytest.importorskip("transformers")

import torch
from detector_helpers import tiny_grounding_dino, tiny_mask2former
from judge_helpers import write_run

from spatialprobe.cli import app
from spatialprobe.detectors.base import Detection, best_per_object
from spatialprobe.detectors.hf_more import grounding_prompt, mask_to_box, phrase_words, query_of_phrase
from spatialprobe.imagestore import ImageStore
from spatialprobe.registry import Spec, build


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {"mask2former": tiny_mask2former(root / "m2f"),
            "bus": tiny_mask2former(root / "m2f-bus", predicted_class=2),
            "grounding-dino": tiny_grounding_dino(root / "gd")}


def mmdet_mask2bbox(masks):
    """mmdetection's ``mask2bbox`` (mmdet/core/mask/utils.py, 2.x), as GenEval's detector runs it."""
    N = masks.shape[0]
    bboxes = masks.new_zeros((N, 4), dtype=torch.float32)
    x_any = torch.any(masks, dim=1)
    y_any = torch.any(masks, dim=2)
    for i in range(N):
        x = torch.where(x_any[i, :])[0]
        y = torch.where(y_any[i, :])[0]
        if len(x) > 0 and len(y) > 0:
            bboxes[i, :] = bboxes.new_tensor([x[0], y[0], x[-1] + 1, y[-1] + 1])
    return bboxes


def hand_made_masks():
    masks = np.zeros((5, 6, 8), dtype=bool)
    masks[0, 2, 3] = True                    # one pixel
    masks[1, 1:4, 2:7] = True                # a rectangle
    masks[2, 0, 0] = masks[2, 5, 7] = True   # two far corners: the box spans the image
    masks[3, 2:5, 1] = masks[3, 4, 1:6] = True  # an L
    return masks                             # masks[4] stays empty


def test_mask_to_box_equals_mmdetections_mask2bbox():
    masks = hand_made_masks()
    expected = mmdet_mask2bbox(torch.from_numpy(masks)).tolist()
    assert [list(mask_to_box(m)) for m in masks] == expected
    assert expected == [[3, 2, 4, 3], [2, 1, 7, 4], [0, 0, 8, 6], [1, 2, 6, 5], [0, 0, 0, 0]]


def stub_forward(detector, outputs):
    detector._forward = lambda inputs: outputs


def test_mask2former_crops_the_padding_and_cuts_scores_strictly(models):
    """An 80x60 image is resized to a 96x64 input and a 64x64 one padded to it; a mask over the
    left half of the 64x64 image's own region must come back as its left half (uncropped, the
    padding would be stretched over the image and the box shrink to 21 px)."""
    detector = build("detector", Spec("mask2former", {"model": str(models["mask2former"]), "threshold": 0.5}))
    images = [Image.new("RGB", (80, 60)), Image.new("RGB", (64, 64))]
    inputs = detector.processor(images=images, return_tensors="pt")
    assert tuple(inputs["pixel_values"].shape[2:]) == (64, 96)
    assert [int(m.any(dim=0).sum()) for m in inputs["pixel_mask"]] == [96, 64]
    classes = torch.zeros(2, 4, 4)
    classes[:, :, 3] = 100.0                   # every query: "no object" ...
    classes[:, 0, 3], classes[:, 0, 2] = 0.0, 100.0  # ... but query 0: bus, probability 1
    classes[1, 1, 3] = classes[1, 1, 0] = 50.0       # image 1, query 1: person with probability 0.5
    masks = torch.full((2, 4, 64, 96), -100.0)
    masks[0, 0] = 100.0                        # image 0: everywhere
    masks[1, 0, :, :32] = 100.0                # image 1: the left half of its 64 columns
    masks[1, 1, :, :64] = 100.0                # image 1: its whole region
    stub_forward(detector, SimpleNamespace(class_queries_logits=classes, masks_queries_logits=masks))
    found = detector.detect(images, [["bus", "man"], ["bus", "man"]])
    assert found == [[Detection("bus", (0.0, 0.0, 80.0, 60.0), 1.0)],
                     [Detection("bus", (0.0, 0.0, 32.0, 64.0), 1.0)]]  # the 0.5 person is not > 0.5
    detector.threshold = 0.49
    assert detector.detect(images, [["bus"], ["man"]]) == [
        [Detection("bus", (0.0, 0.0, 80.0, 60.0), 1.0)], [Detection("man", (0.0, 0.0, 64.0, 64.0), 0.5)]]


def test_mask2former_tiny_model_names_classes_through_the_alias_map(models):
    detector = build("detector", Spec("mask2former", {"model": str(models["bus"]), "threshold": 0.0}))
    images = [Image.new("RGB", (40, 30), "white"), Image.new("RGB", (32, 32), "gray")]
    found = detector.detect(images, [["bus", "man"], ["motorcycle"]])
    # every query predicts "bus": the first image's detections are all buses, the second has none
    assert found[0] and {d.label for d in found[0]} == {"bus"} and found[1] == []
    assert all(0 <= d.box[0] < d.box[2] <= 40 and 0 <= d.box[1] < d.box[3] <= 30 for d in found[0])
    assert detector.describe() == {"name": "mask2former", "model": str(models["bus"]), "threshold": 0.0,
                                   "aliases": "builtin:coco_aliases.json", "box": "tight box of the mask"}


def test_phrases_map_back_to_the_queried_names():
    queries = ["cat", "traffic light", "T-shirt"]
    assert grounding_prompt(queries) == "cat. traffic light. t-shirt."
    assert phrase_words("Traffic-light. [SEP]") == "traffic light sep"
    assert query_of_phrase("traffic light", queries) == "traffic light"
    assert query_of_phrase("t - shirt", queries) == "T-shirt"  # BERT decodes punctuation spaced
    assert query_of_phrase("cat traffic light", queries) == "cat"  # first contained, as upstream
    assert query_of_phrase("traffic", queries) is None  # part of a name names nothing
    assert query_of_phrase("bobcat", queries) is None   # whole words only
    assert query_of_phrase("", queries) is None


def test_grounding_dino_thresholds_and_phrases(models):
    """Stubbed logits over the prompt's tokens ([CLS] cat . traffic light . [SEP]) and boxes."""
    detector = build("detector", Spec("grounding-dino", {"model": str(models["grounding-dino"])}))
    assert (detector.threshold, detector.text_threshold) == (0.35, 0.25)
    images = [Image.new("RGB", (40, 30)), Image.new("RGB", (32, 32))]
    logits = torch.full((2, 5, 32), -100.0)
    logits[0, 0, 1] = 10.0                               # cat, surely
    logits[0, 1, 3] = logits[0, 1, 4] = 5.0              # traffic light
    logits[0, 2, 3], logits[0, 2, 4] = 5.0, -1.5         # only "traffic" passes 0.25: no name
    logits[0, 3, 1] = -0.5                               # cat at 0.378 > 0.35: kept
    logits[0, 4, 1] = -1.0                               # cat at 0.269 < 0.35: no box
    logits[1, 0, 1] = 10.0                               # dog
    boxes = torch.tensor([[0.5, 0.5, 0.5, 0.5], [0.25, 0.25, 0.5, 0.5]]).repeat(2, 3, 1)[:, :5]
    stub_forward(detector, SimpleNamespace(logits=logits, pred_boxes=boxes))
    found = detector.detect(images, [["cat", "traffic light"], ["dog"]])
    assert [(d.label, d.box) for d in found[0]] == [
        ("cat", (10.0, 7.5, 30.0, 22.5)), ("traffic light", (0.0, 0.0, 20.0, 15.0)),
        ("cat", (0.0, 0.0, 20.0, 15.0))]
    assert [d.score for d in found[0]] == pytest.approx([1 / (1 + np.exp(-10)), 1 / (1 + np.exp(-5)),
                                                         1 / (1 + np.exp(0.5))])
    assert [(d.label, d.box) for d in found[1]] == [("dog", (8.0, 8.0, 24.0, 24.0))]


def test_grounding_dino_tiny_model_labels_are_queries(models):
    detector = build("detector", Spec("grounding-dino", {"model": str(models["grounding-dino"]),
                                                         "threshold": 0.0, "text_threshold": 0.0}))
    images = [Image.new("RGB", (40, 30), "white"), Image.new("RGB", (32, 32), "gray")]
    found = detector.detect(images, [["cat", "traffic light"], ["dog"]])
    assert [len(f) for f in found] == [5, 5]  # 5 queries, every token above 0: the first name
    assert {d.label for d in found[0]} == {"cat"} and {d.label for d in found[1]} == {"dog"}
    assert detector.describe()["text_threshold"] == 0.0


@pytest.mark.parametrize("name,args", [("mask2former", ["--threshold", "0.0"]),
                                       ("grounding-dino", ["--threshold", "0.0", "--detector-arg",
                                                           "text_threshold=0.0"])])
def test_judge_posrel_with_the_new_detectors(models, tmp_path, name, args):
    metas = write_run(tmp_path / "images", "posrel", [("above", "above", True), ("beside", "beside", True)])
    out = tmp_path / "j"
    result = CliRunner().invoke(app, ["judge", "posrel", str(tmp_path / "images"), "--detector", name,
                                      "--detector-model", str(models[name]), *args, "--out", str(out),
                                      "--no-gallery", "--device", "cpu"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    config = json.loads((out / "config.json").read_text())
    assert config["settings"]["detector"]["name"] == name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["details"]["detector"]["name"] == name
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    # the run's boxes are the adapter's best box per object on the same images
    detector = build("detector", Spec(name, {"model": str(models[name]), "threshold": 0.0,
                                             **({"text_threshold": 0.0} if name == "grounding-dino" else {})}))
    records = list(ImageStore(tmp_path / "images").images())
    for meta, record, row in zip(metas, records, rows, strict=True):
        assert record.prompt_id == meta["id"]
        image = Image.open(record.path)
        best = best_per_object(detector.detect([image], [[meta["obj_a"], meta["obj_b"]]])[0],
                               [meta["obj_a"], meta["obj_b"]])
        for key, obj in (("a", meta["obj_a"]), ("b", meta["obj_b"])):
            det = best[obj]
            assert row[f"box_{key}"] == (pytest.approx(list(det.box)) if det else None)
    assert sum(r["found_a"] or r["found_b"] for r in rows) > 0
