"""The VQGAN+CLIP fast path against the plain one, and the batched cutouts against a loop.

Bound (docs/synthesis.md, "Fast path"), 50 iterations of the paper's recipe on the tiny models,
three prompts: in float32 the fast path (channels-last) stays within 100 dB PSNR and 1e-4 CLIP
score of the plain path (measured: 113 dB, equal to 4 decimals); under bfloat16 autocast,
holding the weights in bfloat16 is exact, and channels-last rounding, amplified by 50 steps at
lr 0.5, stays above 20 dB and within 0.01 CLIP score (measured: 24.4 dB, 0.005), closer than
bfloat16 is to float32 on the plain path (17.7 dB).
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from synthesis_helpers import PROMPTS, SEEDS, one_torch_thread, tiny_settings  # noqa: F401

from spatialprobe.synthesis import with_overrides
from spatialprobe.synthesis.augment import make_cutouts
from spatialprobe.synthesis.settings import VQGANCLIPSettings


def make(vqgan_clip, speed, precision="fp32", iterations=50, **kwargs):
    from spatialprobe.synthesis.vqgan_clip import VQGANCLIP

    return VQGANCLIP(vqgan_clip[0], vqgan_clip[1], settings=tiny_settings(iterations=iterations, speed=speed),
                     device="cpu", precision=precision, **kwargs)


def psnr(a: torch.Tensor, b: torch.Tensor) -> list[float]:
    mse = ((a - b) ** 2).mean(dim=(1, 2, 3))
    return [10 * math.log10(1 / float(m)) if m > 0 else math.inf for m in mse]


def test_fast_float32_stays_within_the_bound_of_plain(vqgan_clip):
    plain, _, plain_sim = make(vqgan_clip, "plain").optimize(PROMPTS, SEEDS)
    fast_synth = make(vqgan_clip, "fast")
    fast, _, fast_sim = fast_synth.optimize(PROMPTS, SEEDS)
    assert min(psnr(fast, plain)) >= 100
    assert (fast_sim - plain_sim).abs().max() <= 1e-4
    assert fast_synth.describe()["settings"]["speed"] == "fast"
    assert fast_synth._step.compiled is None  # auto: no torch.compile on the CPU
    checkpointed, _, _ = make(vqgan_clip, "fast", checkpoint=True).optimize(PROMPTS, SEEDS)
    assert torch.equal(checkpointed, fast)  # recomputation changes nothing


def test_fast_bfloat16_holds_weights_exactly_and_stays_within_the_bound(vqgan_clip, monkeypatch):
    plain, _, plain_sim = make(vqgan_clip, "plain", "bf16").optimize(PROMPTS, SEEDS)
    fast_synth = make(vqgan_clip, "fast", "bf16")
    assert fast_synth.vq.decoder.conv_out.weight.dtype == torch.bfloat16
    assert fast_synth.clip.text_model.final_layer_norm.weight.dtype == torch.float32
    assert fast_synth.describe()["settings"]["dtype"] == "bfloat16"
    fast, _, fast_sim = fast_synth.optimize(PROMPTS, SEEDS)
    assert min(psnr(fast, plain)) >= 20
    assert (fast_sim - plain_sim).abs().max() <= 0.01
    monkeypatch.setattr("spatialprobe.synthesis.vqgan_clip.use_channels_last", lambda vq: None)
    held, _, _ = make(vqgan_clip, "fast", "bf16").optimize(PROMPTS, SEEDS)
    assert torch.equal(held, plain)  # weights held in bf16 = autocast's per-step copies


def test_a_failing_compiler_warns_once_and_runs_eagerly(vqgan_clip, monkeypatch):
    calls = []

    def broken_compile(step, **kwargs):
        def compiled(*args):
            calls.append(1)
            raise RuntimeError("no C++ compiler")
        return compiled

    monkeypatch.setattr(torch, "compile", broken_compile)
    eager, _, _ = make(vqgan_clip, "fast", iterations=3).optimize(PROMPTS[:1], SEEDS[:1])
    synth = make(vqgan_clip, "fast", iterations=3, compile="on")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        images, _, _ = synth.optimize(PROMPTS[:1], SEEDS[:1])
    assert len(calls) == 1 and len(caught) == 1
    assert "no C++ compiler" in str(caught[0].message)
    assert torch.equal(images, eager)
    with pytest.raises(ValueError, match="compile takes auto, on, off"):
        make(vqgan_clip, "fast", compile="yes")


def test_speed_is_a_setting_with_three_values():
    assert VQGANCLIPSettings().speed == "auto"
    assert with_overrides(VQGANCLIPSettings(), {"speed": "plain"}).speed == "plain"
    with pytest.raises(ValueError, match="speed takes auto, fast, plain"):
        with_overrides(VQGANCLIPSettings(), {"speed": "quick"})


def per_cutout_loop(image, s, cut_size, generator):
    """The cutouts one at a time by explicit image operations, drawing in the recipe's order:
    zero-pad by half the side, flip, slice the square, resize, add noise (no rotation or
    translation: those have no slicing equivalent)."""
    n, side = s.cutouts, image.shape[-1]
    padded_side = 2 * side

    def uniform(*shape):
        return torch.rand(shape, generator=generator, dtype=torch.float64)

    scales = (torch.randn((n,), generator=generator, dtype=torch.float64) * s.cutout_scale_std
              + s.cutout_scale_mean).clamp(s.cutout_scale_min, s.cutout_scale_max)
    scales[n - s.large_cutouts:] = s.large_cutout_scale
    crops = torch.floor(scales * side).clamp(max=padded_side - 1).long().tolist()
    offsets = torch.floor(uniform(2, n) * (padded_side - torch.tensor(crops))).long().T.tolist()
    flip = bool(uniform(1)[0] < s.flip_probability)
    uniform(1), uniform(2)  # the rotation and translation draws, zero-range here
    strength = s.noise * torch.rand((n, 1, 1, 1), generator=generator)
    noise = strength * torch.randn((n, 3, cut_size, cut_size), generator=generator)
    padded = F.pad(image, (side // 2,) * 4)
    padded = padded.flip(-1) if flip else padded
    out = []
    for crop, (x, y) in zip(crops, offsets, strict=True):
        window = padded[:, :, y:y + crop, x:x + crop]
        out.append(F.interpolate(window, size=(cut_size, cut_size), mode="bilinear",
                                 align_corners=True))
    return torch.cat(out) + noise


def test_batched_cutouts_equal_the_per_cutout_loop():
    s = with_overrides(VQGANCLIPSettings(), {"cutouts": 6, "large_cutouts": 1,
                                             "max_rotation_degrees": 0.0, "max_translate": 0.0})
    images = torch.rand(3, 3, 10, 10, generator=torch.Generator().manual_seed(0))
    seeds = [3, 4, 5]
    batched = make_cutouts(images, s, 7, [torch.Generator().manual_seed(x) for x in seeds])
    looped = torch.cat([per_cutout_loop(images[i:i + 1], s, 7, torch.Generator().manual_seed(x))
                        for i, x in enumerate(seeds)])
    torch.testing.assert_close(batched, looped, atol=1e-5, rtol=0)
