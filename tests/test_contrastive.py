"""The contrastive image-text adapter: CLIP, SigLIP and SigLIP 2 built here (no download), chosen
from the config, scored as the model scores, and run through VQGAN+CLIP guidance and VSR."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch
from synthesis_helpers import one_torch_thread, tiny_settings, tiny_vqmodel  # noqa: F401
from vl_helpers import solid_image, tiny_clip

from spatialprobe.contrastive import ContrastiveModel, is_contrastive
from spatialprobe.loading import ModelLoadError

CHARS = "abcdefghijklmnopqrstuvwxyz.,' "
TEXTS = ["a cat is left of the dog.", "the dog is on the table.", "a car."]


def tiny_siglip(folder, version: int = 1, seed: int = 0):
    """A random SigLIP (or SigLIP 2) with 16x16 images in 8x8 patches and a tokenizer of :data:`CHARS`
    (:func:`spatialprobe.tiny.image_text.siglip`)."""
    from spatialprobe.tiny.image_text import siglip

    return siglip(folder, seed, version, CHARS)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """The directory names lie on purpose: the family comes from the config."""
    root = tmp_path_factory.mktemp("contrastive")
    return {"siglip": str(tiny_siglip(root / "clip-vit-tiny")),
            "siglip2": str(tiny_siglip(root / "clip-large", version=2)),
            "clip": str(tiny_clip(root / "siglip-base"))}


@pytest.mark.parametrize("kind", ["clip", "siglip", "siglip2"])
def test_scores_equal_the_model_own_logits(checkpoints, kind, tmp_path):
    from transformers import AutoProcessor

    from spatialprobe.models.clip_scoring import ClipSimilarity

    clip = ClipSimilarity(checkpoints[kind], device="cpu")  # the VSR / SpatialMQA scorer
    assert clip.contrastive.kind == kind and clip.describe()["model_type"] == kind
    pictures = [solid_image(tmp_path / "a.png", (200, 30, 30)), solid_image(tmp_path / "b.png", (20, 90, 220))]
    got = torch.tensor(clip.batch_scores([(pictures[0], TEXTS), (pictures[1], TEXTS)]))

    from PIL import Image

    model, processor = clip.contrastive.model, AutoProcessor.from_pretrained(checkpoints[kind])
    padding = "max_length" if kind != "clip" else True
    # Siglip2Processor's call defaults (256 patches of 16) override its image processor's own
    images = {"max_num_patches": 4, "patch_size": 8} if kind == "siglip2" else {}
    inputs = processor(text=TEXTS, images=[Image.open(p).convert("RGB") for p in pictures],
                       padding=padding, return_tensors="pt", **images)
    with torch.no_grad():
        expected = model(**inputs).logits_per_image
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
    probabilities = clip.contrastive.probabilities(expected)
    if kind == "clip":  # CLIP compares the texts of an image; SigLIP judges each pair alone
        torch.testing.assert_close(probabilities, expected.softmax(-1))
    else:
        torch.testing.assert_close(probabilities, torch.sigmoid(expected))
        assert float(model.logit_bias.detach()) == pytest.approx(-0.7)


def test_family_and_rules_come_from_the_config_not_the_name(checkpoints, tmp_path):
    siglip = ContrastiveModel.load(checkpoints["siglip"], "cpu")
    assert "clip" in checkpoints["siglip"] and siglip.kind == "siglip"
    assert siglip.text_padding() == {"padding": "max_length", "max_length": 64}
    assert (siglip.image_mean, siglip.image_std, siglip.image_size) == ((0.5,) * 3, (0.5,) * 3, 16)
    assert siglip.describe()["similarity"] == "sigmoid(logit_scale * cos + logit_bias)"
    clip = ContrastiveModel.load(checkpoints["clip"], "cpu")
    assert "siglip" in checkpoints["clip"] and clip.kind == "clip"
    assert clip.text_padding() == {"padding": True, "max_length": 77}
    assert clip.image_mean == pytest.approx((0.48145466, 0.4578275, 0.40821073)) and clip.image_size == 32
    assert ContrastiveModel.load(checkpoints["siglip2"], "cpu").image_size == 16  # 2x2 patches of 8
    assert all(is_contrastive(path) for path in checkpoints.values())
    from transformers import BertConfig

    BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
               intermediate_size=8).save_pretrained(str(tmp_path / "clip-bert"))
    assert not is_contrastive(str(tmp_path / "clip-bert"))
    with pytest.raises(ModelLoadError, match="is a 'bert' checkpoint, not a contrastive"):
        ContrastiveModel.load(str(tmp_path / "clip-bert"), "cpu")


@pytest.mark.parametrize("kind", ["clip", "siglip", "siglip2"])
def test_guidance_preprocessing_on_tensors_equals_the_image_processor(checkpoints, kind):
    """The differentiable path (mean/std, SigLIP 2's patch layout) gives the processor's features."""
    model = ContrastiveModel.load(checkpoints[kind], "cpu")
    side = model.image_size
    pixels = torch.rand(2, 3, side, side, generator=torch.Generator().manual_seed(0))
    pixels = (pixels * 255).round() / 255  # exactly representable as 8-bit images
    from PIL import Image

    pil = [Image.fromarray((p.permute(1, 2, 0) * 255).round().byte().numpy(), "RGB") for p in pixels]
    expected = model.processed_image_features(pil)
    got = model.image_features(pixels.requires_grad_(True))
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
    got.sum().backward()
    assert pixels.grad.abs().sum() > 0


def test_vqgan_guidance_with_siglip_through_the_command(checkpoints, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from spatialprobe.cli import app
    from spatialprobe.imagestore import ImageStore
    from spatialprobe.synthesis.vqgan_clip import VQGANCLIP

    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))
    vq = str(tiny_vqmodel(tmp_path / "vq"))
    plain = {"cutouts": 2, "large_cutouts": 0, "cutout_scale_min": 2.0, "cutout_scale_max": 2.0,
             "flip_probability": 0.0, "max_rotation_degrees": 0.0, "max_translate": 0.0, "noise": 0.0}
    for kind in ("siglip", "siglip2"):  # without augmentation the objective is fixed: it must fall
        synth = VQGANCLIP(vq, checkpoints[kind], settings=tiny_settings(**plain, iterations=20, lr=0.05),
                          device="cpu")
        assert synth.cut_size == 16 and synth.contrastive.kind == kind
        _, history, _ = synth.optimize(TEXTS[:2], [1, 2])
        assert history.shape == (20, 2) and (history[-3:].mean(0) < history[:3].mean(0) - 0.05).all()
    (tmp_path / "p.txt").write_text("A cat on the mat.\n", encoding="utf-8")
    result = CliRunner().invoke(app, [
        "synthesize", "--prompts", str(tmp_path / "p.txt"), "--backend", "vqgan-clip", "--vqgan", vq,
        "--clip", checkpoints["siglip"], "--size", "32", "--iterations", "2", "--cutouts", "4",
        "--set", "large_cutouts=1", "--seed", "7", "--device", "cpu", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    records = list(ImageStore(tmp_path / "run").images())
    assert [r.path.name for r in records] == ["line-0001_00.png"]
    assert records[0].model == f"vqgan={vq};clip={checkpoints['siglip']}"
    assert records[0].clip_score is not None and -1.0 <= records[0].clip_score <= 1.0


def test_vsr_command_with_siglip(checkpoints, tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app
    from spatialprobe.models.clip_scoring import ClipSimilarity

    record = {"image": "000000000001.jpg", "caption": "The cat is left of the dog.", "label": 1,
              "relation": "left of", "annotator_id": 3, "vote_true_validator_id": "[2]",
              "vote_false_validator_id": "[]"}
    (tmp_path / "vsr" / "random").mkdir(parents=True)
    (tmp_path / "vsr" / "random" / "test.jsonl").write_text(json.dumps(record) + "\n")
    picture = solid_image(tmp_path / "coco" / "000000000001.jpg")
    result = CliRunner().invoke(app, ["vsr", "--model", checkpoints["siglip"], "--data", str(tmp_path / "vsr"),
                                      "--images", str(tmp_path / "coco"), "--out", str(tmp_path / "run"),
                                      "--device", "cpu"])
    assert result.exit_code == 0, result.output
    row = json.loads((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()[0])
    expected = ClipSimilarity(checkpoints["siglip"], device="cpu").batch_scores(
        [(picture, ["The cat is left of the dog.", "The cat is right of the dog."])])[0]
    assert row["scores"][::-1] == pytest.approx(expected, abs=1e-6)  # the ask kind's order: (negation, caption)
    info = json.loads((tmp_path / "run" / "summary.json").read_text())["details"]["model_info"]
    assert info["model_type"] == "siglip" and info["text_padding"]["padding"] == "max_length"


@pytest.mark.skipif(importlib.util.find_spec("sentencepiece") is not None, reason="sentencepiece installed")
def test_siglip_tokenizer_without_sentencepiece_is_one_sentence(checkpoints, tmp_path):
    import shutil

    folder = tmp_path / "siglip-spm"
    shutil.copytree(checkpoints["siglip"], folder)
    for name in ("tokenizer.json", "processor_config.json"):
        (folder / name).unlink()
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "SiglipTokenizer"}))
    (folder / "spiece.model").write_bytes(b"not read")
    with pytest.raises(ModelLoadError, match=r"needs a library that is not installed.*pip install sentencepiece"):
        ContrastiveModel.load(str(folder), "cpu")
