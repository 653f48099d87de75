"""The paper's cutout augmentation in plain torch ops (no torchvision, no kornia).

Per image and step, as in the released code: the image in [0, 1] is zero-padded by half its
side on every edge, flipped horizontally with probability ``flip_probability`` and moved by a
random affine map (rotation up to +-``max_rotation_degrees``, translation up to
+-``max_translate`` of the padded side); then ``cutouts`` square crops are taken, their side
drawn from N(mean, std) clipped to [min, max] times the image side (the last
``large_cutouts`` crops are ``large_cutout_scale`` times the side), each resized to CLIP's
input size, and noise ``noise * U(0,1) * N(0,1)`` is added per crop.

Pad, flip, affine, crop and resize compose into one affine map per crop, so all crops of all
images come from a single ``grid_sample`` (bilinear, zeros outside the image). Every random
draw comes from the image's own generator, so an image's augmentations do not depend on which
other images share its batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from spatialprobe.synthesis.settings import VQGANCLIPSettings


def _draw_crop_maps(settings: VQGANCLIPSettings, side: int, generator: torch.Generator,
                    device: torch.device) -> torch.Tensor:
    """(cutouts, 2, 3) maps from crop coordinates to the image's normalized coordinates."""
    s = settings
    n = s.cutouts

    def uniform(*shape):
        return torch.rand(shape, generator=generator, device=device, dtype=torch.float64)

    padded = 2.0 * side
    scales = (torch.randn((n,), generator=generator, device=device, dtype=torch.float64)
              * s.cutout_scale_std + s.cutout_scale_mean).clamp(s.cutout_scale_min, s.cutout_scale_max)
    if s.large_cutouts > 0:
        scales[n - min(s.large_cutouts, n):] = s.large_cutout_scale
    crop = torch.floor(scales * side).clamp(max=padded - 1)            # crop side in padded pixels
    offset = torch.floor(uniform(2, n) * (padded - crop))               # top-left corner (x, y)
    mirror = 1.0 - 2.0 * (uniform(1)[0] < s.flip_probability).double()  # -1 flips; no host sync
    angle = (uniform(1)[0] * 2 - 1) * math.radians(s.max_rotation_degrees)
    shift = (uniform(2) * 2 - 1) * s.max_translate * padded             # in padded pixels

    # crop output v in [-1, 1] -> padded-augmented pixel q = offset + (v + 1) * (crop - 1) / 2
    half = (crop - 1) / 2
    centre = (padded - 1) / 2
    cos, sin = torch.cos(angle), torch.sin(angle)
    rot = torch.stack([torch.stack([cos, -sin]) * mirror, torch.stack([sin, cos])])
    # augmented pixel q -> padded pixel p = centre + rot @ (q - centre - shift)
    # padded pixel p -> image pixel p - side/2 -> normalized x = 2 * pixel / (side - 1) - 1
    to_norm = 2.0 / (side - 1)
    linear = torch.einsum("ij,n->nij", rot, half) * to_norm             # (n, 2, 2)
    q0 = offset.T + half[:, None] - centre - shift                      # q at v = 0, centred
    bias = (centre + q0 @ rot.T - side // 2) * to_norm - 1              # (n, 2)
    return torch.cat([linear, bias[:, :, None]], dim=2)


def draw_cutouts(settings: VQGANCLIPSettings, side: int, cut_size: int,
                 generators: Sequence[torch.Generator], device: torch.device,
                 channels: int = 3) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One step's random draws for every image: (B * cutouts, 2, 3) crop maps and the
    (B * cutouts, channels, cut_size, cut_size) noise (None without noise), image-major. Drawn
    apart from the images so a compiled step sees plain tensors, never a generator."""
    n = settings.cutouts
    maps, noise = [], []
    for g in generators:  # the order of draws per generator is the recipe's: maps, then noise
        maps.append(_draw_crop_maps(settings, side, g, device))
        if settings.noise > 0:
            noise.append(settings.noise * torch.rand((n, 1, 1, 1), generator=g, device=device)
                         * torch.randn((n, channels, cut_size, cut_size), generator=g,
                                       device=device))
    return torch.cat(maps), (torch.cat(noise) if noise else None)


def apply_cutouts(images: torch.Tensor, maps: torch.Tensor, noise: torch.Tensor | None,
                  cut_size: int) -> torch.Tensor:
    """Every crop of every image in one ``affine_grid`` + ``grid_sample``, plus the noise."""
    channels = images.shape[1]
    cutouts = len(maps) // len(images)
    grid = F.affine_grid(maps.to(images.dtype), [len(maps), channels, cut_size, cut_size],
                         align_corners=True)
    source = images.repeat_interleave(cutouts, dim=0)
    crops = F.grid_sample(source, grid, mode="bilinear", padding_mode="zeros", align_corners=True)
    return crops if noise is None else crops + noise.to(crops.dtype)


def make_cutouts(images: torch.Tensor, settings: VQGANCLIPSettings, cut_size: int,
                 generators: Sequence[torch.Generator]) -> torch.Tensor:
    """(B, 3, H, W) images in [0, 1] -> (B * cutouts, 3, cut_size, cut_size), image-major."""
    _, channels, side, _ = images.shape
    maps, noise = draw_cutouts(settings, side, cut_size, generators, images.device, channels)
    return apply_cutouts(images, maps, noise, cut_size)
