"""VQGAN+CLIP with a tiny VQModel and a tiny CLIP built here (save_pretrained -> from_pretrained)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F
from synthesis_helpers import PROMPTS, SEEDS, one_torch_thread, tiny_settings  # noqa: F401

from spatialprobe.synthesis import VQGANCLIPSettings, load_preset, with_overrides
from spatialprobe.synthesis.augment import make_cutouts
from spatialprobe.synthesis.jobs import Job


def make(vqgan_clip, **settings):
    from spatialprobe.synthesis.vqgan_clip import VQGANCLIP

    return VQGANCLIP(vqgan_clip[0], vqgan_clip[1], settings=tiny_settings(**settings), device="cpu")


def test_paper_preset_is_the_default():
    paper = load_preset("paper")
    assert paper == VQGANCLIPSettings()
    assert (paper.size, paper.iterations, paper.lr, paper.cutouts, paper.large_cutouts) == \
        (512, 600, 0.5, 32, 3)
    assert (paper.large_cutout_scale, paper.noise, paper.text_weight, paper.negative_weight) == \
        (1.4, 0.11, 10.0, 5.0)
    assert paper.negative_prompt == "incoherent, confusing, cropped, watermarks"
    assert paper.quantize is False
    fast = load_preset("fast")
    assert fast.size == 256 and fast.lr == 0.5  # a preset names only what it changes


def test_overrides_coerce_strings_and_reject_unknown_names():
    s = with_overrides(VQGANCLIPSettings(), {"iterations": "7", "quantize": "true",
                                             "snapshots": "2,5", "lr": "0.1"})
    assert (s.iterations, s.quantize, s.snapshots, s.lr) == (7, True, (2, 5), 0.1)
    with pytest.raises(ValueError, match="Unknown VQGAN\\+CLIP setting 'iters'"):
        with_overrides(s, {"iters": 3})
    with pytest.raises(ValueError, match="Unknown VQGAN\\+CLIP preset"):
        load_preset("nope")


PLAIN = {"cutouts": 2, "large_cutouts": 0, "cutout_scale_min": 2.0, "cutout_scale_max": 2.0,
         "flip_probability": 0.0, "max_rotation_degrees": 0.0, "max_translate": 0.0, "noise": 0.0}
"""Augmentations off: every cutout is the whole zero-padded image."""


def _plain(**changes) -> VQGANCLIPSettings:
    return with_overrides(VQGANCLIPSettings(), {**PLAIN, **changes})


def test_cutouts_without_augmentation_are_the_padded_image():
    image = torch.rand(1, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    padded = F.pad(image, (4, 4, 4, 4))[:, :, :15, :15]  # crop side clamps to 2*8-1
    expected = F.interpolate(padded, size=(6, 6), mode="bilinear", align_corners=True)
    got = make_cutouts(image, _plain(), 6, [torch.Generator().manual_seed(1)])
    torch.testing.assert_close(got, expected.expand(2, -1, -1, -1), atol=1e-5, rtol=0)
    flipped = make_cutouts(image, _plain(flip_probability=1.0), 6,
                           [torch.Generator().manual_seed(1)])
    mirror = F.interpolate(F.pad(image, (4, 4, 4, 4)).flip(-1)[:, :, :15, :15], size=(6, 6),
                           mode="bilinear", align_corners=True)
    torch.testing.assert_close(flipped[:1], mirror, atol=1e-5, rtol=0)


def test_cutouts_draw_from_each_image_own_generator():
    s = _plain(cutouts=4, cutout_scale_min=0.43, cutout_scale_max=1.9, flip_probability=0.5,
               max_rotation_degrees=24.0, max_translate=0.1, noise=0.11, large_cutouts=1)
    images = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    both = make_cutouts(images, s, 6, [torch.Generator().manual_seed(5),
                                       torch.Generator().manual_seed(6)])
    second = make_cutouts(images[1:], s, 6, [torch.Generator().manual_seed(6)])
    assert both.shape == (8, 3, 6, 6)
    torch.testing.assert_close(both[4:], second)


def test_clip_loss_falls(vqgan_clip):
    # A random tiny CLIP has no augmentation-invariant notion of the prompt, so under the
    # paper's random cutouts its loss only wanders; with augmentations switched off the
    # objective is fixed and the optimiser must lower it.
    synth = make(vqgan_clip, **PLAIN, iterations=25, lr=0.05)
    _, history, _ = synth.optimize(PROMPTS[:2], SEEDS[:2])
    assert history.shape == (25, 2)
    first, last = history[:3].mean(0), history[-3:].mean(0)
    assert (last < first - 0.05).all(), (first, last)


def test_batch_gives_the_same_images_as_one_at_a_time(vqgan_clip):
    synth = make(vqgan_clip, iterations=4)  # the paper's augmentations, lr 0.5
    batch, _, batch_sim = synth.optimize(PROMPTS, SEEDS)
    for i, (prompt, seed) in enumerate(zip(PROMPTS, SEEDS, strict=True)):
        alone, _, alone_sim = synth.optimize([prompt], [seed])
        torch.testing.assert_close(batch[i:i + 1], alone, atol=1e-4, rtol=0)
        assert abs(float(batch_sim[i]) - float(alone_sim[0])) < 1e-3
    other, _, _ = synth.optimize(PROMPTS[:1], [SEEDS[0] + 1])
    assert (other - batch[:1]).abs().max() > 0.05  # the seed matters


def test_quantized_decoding_goes_through_the_codebook(vqgan_clip):
    synth = make(vqgan_clip, quantize=True)
    z = synth.initial_latents([torch.Generator().manual_seed(0)]).requires_grad_(True)
    image = synth.decode(z)
    codes = synth.vq.quantize.embedding.weight
    flat = z.detach().permute(0, 2, 3, 1).reshape(-1, codes.shape[1])
    q = codes[torch.cdist(flat, codes).argmin(1)].reshape(1, 16, 16, -1).permute(0, 3, 1, 2)
    with torch.no_grad():
        expected = (synth.vq.decode(q, force_not_quantize=True).sample.clamp(-1, 1) + 1) / 2
    torch.testing.assert_close(image, expected, atol=1e-5, rtol=0)
    image.mean().backward()
    assert z.grad.abs().sum() > 0  # straight-through: the latent still learns


def test_generate_returns_images_scores_and_snapshots(vqgan_clip):
    synth = make(vqgan_clip, iterations=3, snapshots=(1, 3))
    results = synth.generate([Job("a", PROMPTS[0], 0, 1), Job("b", PROMPTS[1], 1, 2)])
    assert [r.job.prompt_id for r in results] == ["a", "b"]
    assert results[0].image.size == (32, 32) and results[0].image.mode == "RGB"
    assert sorted(results[1].snapshots) == [1, 3]
    assert all(-1.0 <= r.clip_score <= 1.0 for r in results)
    described = synth.describe()
    assert described["model"].startswith("vqgan=") and "clip=" in described["model"]
    assert len(described["weights_hash"].split(";")[0]) == 16
    assert described["settings"]["iterations"] == 3
    assert (described["settings"]["device"], described["settings"]["dtype"]) == ("cpu", "float32")
    assert dataclasses.asdict(synth.settings)["snapshots"] == (1, 3)


def test_fp16_loss_scaling_leaves_the_optimisation_unchanged(vqgan_clip, monkeypatch):
    # On CUDA, fp16 autocast needs a GradScaler; its power-of-two scaling is exact, so on the
    # CPU (where autocast is off) the scaled path must give the fp32 images bit for bit.
    from spatialprobe.synthesis.vqgan_clip import VQGANCLIP

    scales = []

    class SpyScaler(torch.amp.GradScaler):
        def scale(self, outputs):
            scales.append(self.is_enabled())
            return super().scale(outputs)

    monkeypatch.setattr(torch.amp, "GradScaler", SpyScaler)
    plain = make(vqgan_clip, iterations=3)
    scaled = VQGANCLIP(vqgan_clip[0], vqgan_clip[1], settings=tiny_settings(iterations=3), device="cpu",
                       precision="fp16")
    a, _, _ = plain.optimize(PROMPTS[:2], SEEDS[:2])
    assert scales == [False] * 3
    b, _, _ = scaled.optimize(PROMPTS[:2], SEEDS[:2])
    assert scales[3:] == [True] * 3  # fp16 scales the loss
    torch.testing.assert_close(a, b, atol=1e-6, rtol=0)
    start = plain.decode(plain.initial_latents([torch.Generator().manual_seed(SEEDS[0])]))
    assert (a[:1] - start).abs().max() > 0  # it did optimise
