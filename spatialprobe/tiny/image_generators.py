"""Tiny untrained text-to-image parts: a VQGAN (diffusers ``VQModel``) for VQGAN+CLIP and a Stable
Diffusion pipeline, saved with ``save_pretrained`` (the CLIP they are guided by or encode text
with: :func:`spatialprobe.tiny.image_text.clip`)."""

from __future__ import annotations

from pathlib import Path

from spatialprobe.tiny import vocab as vocabularies

VQ_IMAGE = 32
"""Pixels of the tiny VQModel's images; it downsamples by 2 (16x16 latents)."""


def vqmodel(folder: Path, seed: int = 0) -> Path:
    """A random VQModel (f=2, 32 codes of dim 4)."""
    import torch

    from spatialprobe.extras import require

    VQModel = require("diffusers", "synthesis").VQModel

    torch.manual_seed(seed)
    VQModel(down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), block_out_channels=(8, 16),
            layers_per_block=1, latent_channels=4, vq_embed_dim=4, num_vq_embeddings=32, norm_num_groups=4,
            sample_size=VQ_IMAGE).save_pretrained(str(folder))
    return folder


def stable_diffusion(folder: Path, seed: int = 0) -> Path:
    """A random StableDiffusionPipeline (16x16 images, 2 blocks) in ``folder / "pipeline"``."""
    import torch
    from transformers import CLIPTextConfig, CLIPTextModel

    from spatialprobe.extras import require

    diffusers = require("diffusers", "synthesis")
    AutoencoderKL, DDIMScheduler = diffusers.AutoencoderKL, diffusers.DDIMScheduler
    StableDiffusionPipeline, UNet2DConditionModel = diffusers.StableDiffusionPipeline, diffusers.UNet2DConditionModel

    torch.manual_seed(seed)
    tokenizer = vocabularies.clip_characters(folder / "_tokenizer", 32)
    text = CLIPTextModel(CLIPTextConfig(
        vocab_size=514, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        max_position_embeddings=32, bos_token_id=512, eos_token_id=513, pad_token_id=513))
    unet = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(8, 16),
        norm_num_groups=4, cross_attention_dim=16, attention_head_dim=2,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
    vae = AutoencoderKL(block_out_channels=(8, 8), norm_num_groups=4, latent_channels=4,
                        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                        sample_size=16)
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=tokenizer, unet=unet,
                                   scheduler=DDIMScheduler(clip_sample=False), safety_checker=None,
                                   feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(str(folder / "pipeline"))
    return folder / "pipeline"
