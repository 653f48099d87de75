"""Tiny models for the synthesis tests, built here and loaded through ``from_pretrained``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TINY_IMAGE = 32        # pixels; the tiny VQModel downsamples by 2 -> 16x16 latents
TINY_CLIP_IMAGE = 16   # CLIP input side; patch 8 -> 4 patches


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2/CLIP's reversible byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs), strict=True))


def write_tiny_clip_tokenizer(folder: Path) -> None:
    """A character-level CLIP BPE vocabulary (no merges): every byte, alone or word-final."""
    chars = list(bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    from transformers import CLIPTokenizer

    tok = CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"),
                        model_max_length=32)
    tok.save_pretrained(str(folder))


def tiny_clip(folder: Path, seed: int = 0) -> Path:
    """Save a random tiny CLIPModel and its tokenizer to ``folder``."""
    import torch
    from transformers import CLIPConfig, CLIPModel

    write_tiny_clip_tokenizer(folder)
    torch.manual_seed(seed)
    config = CLIPConfig(
        text_config={"vocab_size": 514, "hidden_size": 32, "intermediate_size": 64,
                     "num_hidden_layers": 1, "num_attention_heads": 2,
                     "max_position_embeddings": 32, "bos_token_id": 512, "eos_token_id": 513,
                     "pad_token_id": 513},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": TINY_CLIP_IMAGE, "patch_size": 8},
        projection_dim=16)
    CLIPModel(config).save_pretrained(str(folder))
    return folder


def tiny_vqmodel(folder: Path, seed: int = 0) -> Path:
    """Save a random tiny VQModel (f=2, 32 codes of dim 4) to ``folder``."""
    import torch
    from diffusers import VQModel

    torch.manual_seed(seed)
    VQModel(down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
            block_out_channels=(8, 16), layers_per_block=1, latent_channels=4,
            vq_embed_dim=4, num_vq_embeddings=32, norm_num_groups=4,
            sample_size=TINY_IMAGE).save_pretrained(str(folder))
    return folder


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
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    torch.manual_seed(seed)
    write_tiny_clip_tokenizer(folder / "_tokenizer")
    tokenizer = CLIPTokenizer.from_pretrained(str(folder / "_tokenizer"))
    text = CLIPTextModel(CLIPTextConfig(
        vocab_size=514, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, max_position_embeddings=32, bos_token_id=512, eos_token_id=513,
        pad_token_id=513))
    unet = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(8, 16), norm_num_groups=4, cross_attention_dim=16,
        attention_head_dim=2, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
    vae = AutoencoderKL(block_out_channels=(8, 8), norm_num_groups=4, latent_channels=4,
                        down_block_types=("DownEncoderBlock2D",) * 2,
                        up_block_types=("UpDecoderBlock2D",) * 2, sample_size=16)
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=tokenizer, unet=unet,
                                   scheduler=DDIMScheduler(clip_sample=False), safety_checker=None,
                                   feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(str(folder / "pipeline"))
    return folder / "pipeline"


PROMPTS = ["An ant and a bird.", "A man washes the car.", "A girl sits on the chair."]
SEEDS = [11, 22, 33]
