"""Tiny models for the synthesis tests, built here and loaded through ``from_pretrained``."""

from __future__ import annotations

from pathlib import Path

import pytest

TINY_IMAGE = 32        # pixels; the tiny VQModel downsamples by 2 -> 16x16 latents
TINY_CLIP_IMAGE = 16   # CLIP input side; patch 8 -> 4 patches


def write_tiny_clip_tokenizer(folder: Path) -> None:
    """A character-level CLIP BPE vocabulary (no merges): every byte, alone or word-final."""
    from spatialprobe.tiny.vocab import clip_characters

    clip_characters(folder, 32)


def tiny_clip(folder: Path, seed: int = 0) -> Path:
    """Save a random tiny CLIPModel and its tokenizer to ``folder``."""
    from spatialprobe.tiny.image_text import clip

    return clip(folder, seed, hidden=32, image_size=TINY_CLIP_IMAGE, patch=8, max_length=32, processor=False)


def tiny_vqmodel(folder: Path, seed: int = 0) -> Path:
    """Save a random tiny VQModel (f=2, 32 codes of dim 4) to ``folder``."""
    from spatialprobe.tiny.image_generators import vqmodel

    return vqmodel(folder, seed)


def tiny_settings(**changes) -> dict:
    """VQGAN+CLIP settings for tests: the paper recipe, scaled down."""
    settings = {"size": TINY_IMAGE, "iterations": 4, "cutouts": 4, "large_cutouts": 1}
    settings.update(changes)
    return settings


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Tiny models gain nothing from threads, and on a shared, busy CPU a second torch thread
    makes them many times slower; restore the setting for whatever runs next."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_stable_diffusion(folder: Path, seed: int = 0) -> Path:
    """Save a random tiny StableDiffusionPipeline (16x16 images, 2 blocks) to ``folder``."""
    from spatialprobe.tiny.image_generators import stable_diffusion

    return stable_diffusion(folder, seed)


PROMPTS = ["An ant and a bird.", "A man washes the car.", "A girl sits on the chair."]
SEEDS = [11, 22, 33]
