"""The fast judge path (tensor preprocessing, batched decoding, prefetching) against today's.

The reference is the adapters' code before the fast path, kept verbatim in ``judge_plain``: the
processor preprocesses, its post-processing decodes, and every box is copied to Python on its
own; the run computes batch by batch without prefetching. The fixtures must come out identical:
the same predictions.jsonl, byte for byte, and the same metrics.
"""

import json

import numpy as np
import pytest
import torch
from PIL import Image

pytest.importorskip("transformers")

from judge_helpers import tiny_depth_anything_metric, tiny_detr, tiny_dpt, tiny_owlvit, write_run
from judge_plain import PlainDepth, PlainDetr, PlainOwl
from transformers import AutoImageProcessor, AutoProcessor

from spatialprobe.detectors.hf import DetrDetector, HFDepth, OwlDetector
from spatialprobe.detectors.preprocess import prefetch, resize_like_pil, tensor_preprocessor
from spatialprobe.judging.box import JudgeConfig, JudgeRun, JudgeRunSettings
from spatialprobe.registry import Spec
from spatialprobe.runner import RunKind, execute


class PlainJudge(JudgeRun):
    compute_stream = RunKind.compute_stream  # the base's hook: compute batch by batch, decoding in line


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {"owlvit": tiny_owlvit(root / "owlvit"), "dpt": tiny_dpt(root / "dpt"),
            "detr": tiny_detr(root / "detr"), "da": tiny_depth_anything_metric(root / "da")}


PLANS = {"size": [("larger", "larger", True), ("smaller", "smaller", True), ("larger", "smaller", True),
                  ("smaller", "smaller", False), ("larger", "larger", True)],
         "posrel": [("above", "above", True), ("below", "below", True), ("beside", "inside", True),
                    ("inside", "inside", False), ("above", "below", True)]}


def judged(kind, out):
    execute(kind, out)
    summary = json.loads((out / "summary.json").read_text())
    metrics = {k: v for k, v in summary.items() if isinstance(v, dict) and "mean" in v}
    return (out / "predictions.jsonl").read_bytes(), metrics, summary["details"]["per_object"]


@pytest.mark.parametrize("task,detector", [("size", "owlvit"), ("posrel", "owlvit"), ("size", "detr")])
def test_fast_judge_matches_the_plain_path_on_the_fixtures(models, tmp_path, task, detector):
    write_run(tmp_path / "images", task, PLANS[task])
    aliases = tmp_path / "aliases.json"  # the tiny DETR predicts "tire" everywhere
    metas = [json.loads(line) for line in (tmp_path / "images" / "prompts.jsonl").read_text().splitlines()]
    aliases.write_text(json.dumps({m["meta"][k]: ["tire"] for m in metas for k in ("obj_a", "obj_b")}))
    args = ({"model": str(models["owlvit"]), "threshold": 0.0} if detector == "owlvit"
            else {"model": str(models["detr"]), "aliases": str(aliases)})
    depth = Spec("dpt", {"model": str(models["dpt"])}) if task == "size" else None
    cfg = JudgeConfig(task=task, detector=Spec(detector, args), depth=depth, batch_size=2, device="cpu")
    plain_cls, fast_cls = (PlainOwl, OwlDetector) if detector == "owlvit" else (PlainDetr, DetrDetector)
    plain = PlainJudge(JudgeRunSettings.of(tmp_path / "images", cfg), detector=plain_cls(**args, device="cpu"),
                       depth=PlainDepth(str(models["dpt"]), device="cpu") if depth else None)
    fast = JudgeRun(JudgeRunSettings.of(tmp_path / "images", cfg),
                    detector=fast_cls(**args, device="cpu", preprocess="tensor"),
                    depth=HFDepth(str(models["dpt"]), device="cpu", preprocess="tensor") if depth else None)
    assert fast.detector._fast is not None and (depth is None or fast.depth._fast is not None)
    before, after = judged(plain, tmp_path / "plain"), judged(fast, tmp_path / "fast")
    assert after == before
    rows = [json.loads(line) for line in before[0].decode().splitlines()]
    # the random tiny OWL-ViT's boxes have zero area (size scenes: unrecognized, as the release counts
    # them) or no relation (posrel); the tiny DETR finds both objects in all 5 size scenes, so the
    # depth and rule path is compared there
    assert sum(r["recognized"] for r in rows) == (0 if detector == "owlvit" else 5)


@pytest.mark.parametrize("name,cls", [("owlvit", AutoProcessor), ("dpt", AutoImageProcessor),
                                      ("detr", AutoImageProcessor), ("da", AutoImageProcessor)])
def test_tensor_preprocessing_equals_the_processor_bit_for_bit(models, name, cls):
    processor = cls.from_pretrained(models[name])
    images = getattr(processor, "image_processor", processor)
    fast = tensor_preprocessor(images)
    assert fast is not None
    rng = np.random.default_rng(0)
    pictures = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
                for h, w in [(64, 64), (30, 40), (64, 80), (100, 300)]]
    expected, got = images(images=pictures, return_tensors="pt"), fast(pictures, "cpu")
    assert sorted(got) == sorted(expected)
    for key in expected:
        assert got[key].dtype == expected[key].dtype and torch.equal(got[key], expected[key])


def test_owlv2_keeps_its_processor(tmp_path):
    """OWLv2 pads to a square and resizes with a Gaussian pre-filter: not reproduced here."""
    processor = AutoProcessor.from_pretrained(tiny_owlvit(tmp_path / "owl2", version=2))
    assert tensor_preprocessor(processor.image_processor) is None


@pytest.mark.parametrize("source,size,resample,max_diff", [
    ((64, 64), (32, 32), 3, 0), ((480, 640), (768, 768), 3, 0), ((100, 37), (32, 32), 3, 0),
    ((333, 517), (800, 1202), 2, 0), ((7, 300), (50, 20), 3, 0), ((23, 18), (109, 103), 3, 0),
    # where the tensor path is known to differ from Pillow 13: both sides shrink, the pass order
    # (vertical first) is guessed wrong
    ((72, 70), (8, 12), 3, 1),
])
def test_resize_against_pillow(source, size, resample, max_diff):
    pixels = np.random.default_rng(1).integers(0, 256, (*source, 3), dtype=np.uint8)
    expected = np.asarray(Image.fromarray(pixels).resize(size[::-1], resample)).astype(np.float64)
    got = resize_like_pil(torch.from_numpy(pixels).permute(2, 0, 1)[None].double(), size, resample)
    assert np.abs(got[0].permute(1, 2, 0).numpy() - expected).max() == max_diff


def test_prefetch_keeps_order_and_raises_a_load_error_at_its_batch():
    batches = [[1, 2], [3, 4], [5]]
    assert list(prefetch(batches, lambda x: 10 * x)) == [([1, 2], [10, 20]), ([3, 4], [30, 40]), ([5], [50])]

    def load(x):
        if x == 4:
            raise ValueError("broken image 4")
        return x

    stream = prefetch(batches, load)
    assert next(stream) == ([1, 2], [1, 2])
    with pytest.raises(ValueError, match="broken image 4"):
        next(stream)
