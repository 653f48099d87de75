"""VQGAN+CLIP: optimise VQGAN latents so that CLIP finds the decoded image close to the prompt.

The paper's recipe (``presets/paper.json``): a random latent, decoded without the codebook,
pushed by AdamW (lr 0.5) for 600 steps on ``-10 cos(text) + 5 cos(negative prompt)`` averaged
over 32 augmented cutouts. A batch holds independent latents, one per image, optimised in one
forward/backward: the loss is the *sum* of the per-image losses and every random draw comes from
the image's own generator, so an image is the same whether it is generated alone or in a batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..extras import require
from .augment import apply_cutouts, draw_cutouts
from .fastpath import CompiledStep, checkpoint_decoder, hold_weights_in, image_side, resolve_compile, use_channels_last
from .jobs import Job, JobResult
from .loading import (
    autocast,
    autocast_enabled,
    grad_scaler,
    load_model,
    resolve_device,
    resolve_precision,
    to_pil,
    weights_hash,
)
from .settings import VQGANCLIPSettings, load_preset, with_overrides

OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def _features(output):
    """transformers 5 returns a model output from ``get_*_features``; older ones a tensor."""
    return output if hasattr(output, "norm") else output.pooler_output


class VQGANCLIP:
    """A VQGAN (diffusers ``VQModel`` directory or id) steered by a transformers CLIP."""

    name = "vqgan-clip"

    def __init__(self, vqgan: str, clip: str = "openai/clip-vit-base-patch32",
                 preset: str = "paper", settings: Mapping[str, Any] | None = None,
                 device: str = "auto", precision: str = "auto", compile: str = "auto",
                 checkpoint: bool = False):
        require("diffusers", "synthesis", "VQGAN+CLIP")
        import torch
        from diffusers import VQModel
        from transformers import CLIPModel, CLIPTokenizer

        self.settings: VQGANCLIPSettings = with_overrides(load_preset(preset), settings or {})
        self.vqgan_id, self.clip_id = vqgan, clip
        self.device = resolve_device(device)
        self.amp_dtype = resolve_precision(precision, self.device)
        self.vq = load_model(VQModel.from_pretrained, vqgan, "VQGAN").to(self.device).eval()
        self.clip = load_model(CLIPModel.from_pretrained, clip, "CLIP model").to(self.device).eval()
        self.tokenizer = load_model(CLIPTokenizer.from_pretrained, clip, "CLIP tokenizer")
        for module in (self.vq, self.clip):
            module.requires_grad_(False)
        self.cut_size = int(self.clip.config.vision_config.image_size)
        mean, std = self._normalization(clip)
        self.mean = torch.tensor(mean, device=self.device).view(1, 3, 1, 1)
        self.std = torch.tensor(std, device=self.device).view(1, 3, 1, 1)
        self.factor = 2 ** (len(self.vq.config.block_out_channels) - 1)
        if self.settings.size % self.factor:
            raise ValueError(f"size {self.settings.size} is not a multiple of the VQGAN's "
                             f"downsampling factor {self.factor}.")
        self._hash: str | None = None
        self._arrange(compile, checkpoint)

    def _arrange(self, compile: str, checkpoint: bool) -> None:
        """Apply the speed setting (see ``fastpath``); checkpointing is independent of it."""
        speed = self.settings.speed
        self.speed = speed if speed != "auto" else ("fast" if self.device.type == "cuda" else "plain")
        fast = self.speed == "fast"
        if fast and autocast_enabled(self.device, self.amp_dtype):
            hold_weights_in(self.amp_dtype, self.vq, *image_side(self.clip))
        if fast:
            use_channels_last(self.vq)
        if checkpoint:
            checkpoint_decoder(self.vq)
        self._step = CompiledStep(self._per_image_loss, fast and resolve_compile(compile, self.device))

    @staticmethod
    def resolve_generation(args: Mapping[str, Any]) -> dict[str, Any]:
        """The constructor arguments with the preset and overrides resolved to full settings,
        so a run's config names the whole recipe and a changed preset is noticed on resume."""
        resolved = dict(args)
        settings = with_overrides(load_preset(args.get("preset", "paper")), args.get("settings") or {})
        resolved["settings"] = settings.to_dict()
        return resolved

    @staticmethod
    def _normalization(clip: str) -> tuple[Sequence[float], Sequence[float]]:
        try:
            from transformers import CLIPImageProcessor

            proc = CLIPImageProcessor.from_pretrained(clip)
            return proc.image_mean, proc.image_std
        except Exception:  # no preprocessor_config.json: CLIP's published statistics
            return OPENAI_CLIP_MEAN, OPENAI_CLIP_STD

    def describe(self) -> dict[str, Any]:
        if self._hash is None:
            parts = [weights_hash(self.vqgan_id), weights_hash(self.clip_id)]
            self._hash = ";".join(p or "unknown" for p in parts)
        # device and precision may change on resume, so each image records what made it
        autocast_dtype = str(self.amp_dtype).replace("torch.", "") \
            if autocast_enabled(self.device, self.amp_dtype) else "float32"
        return {"model": f"vqgan={self.vqgan_id};clip={self.clip_id}", "weights_hash": self._hash,
                "settings": {**self.settings.to_dict(), "speed": self.speed,
                             "device": self.device.type, "dtype": autocast_dtype}}

    # ---- pieces ------------------------------------------------------------------------------
    def encode_texts(self, texts: Sequence[str]):
        """Unit CLIP text embeddings, one text at a time so padding never depends on the batch."""
        import torch

        limit = min(self.tokenizer.model_max_length,
                    self.clip.config.text_config.max_position_embeddings)
        rows = []
        with torch.no_grad():
            for text in texts:
                tokens = self.tokenizer([text], truncation=True, max_length=limit,
                                        return_tensors="pt").to(self.device)
                rows.append(_features(self.clip.get_text_features(**tokens)).float())
        emb = torch.cat(rows)
        return emb / emb.norm(dim=-1, keepdim=True)

    def image_embeddings(self, images):
        """Unit CLIP embeddings of images in [0, 1] already at CLIP's input size."""
        emb = _features(self.clip.get_image_features(pixel_values=(images - self.mean) / self.std))
        emb = emb.float()
        return emb / emb.norm(dim=-1, keepdim=True)

    def initial_latents(self, generators):
        import torch

        s = self.settings
        channels = self.vq.config.vq_embed_dim or self.vq.config.latent_channels
        side = s.size // self.factor
        z = torch.cat([torch.randn((1, channels, side, side), generator=g, device=self.device)
                       for g in generators]) * s.init_std
        return torch.sinh(s.init_sinh_gain * torch.asinh(z))

    def decode(self, z):
        """Latents -> images in [0, 1]; through the codebook (straight-through) if ``quantize``."""
        z = z.clamp(-self.settings.latent_clip, self.settings.latent_clip)
        out = self.vq.decode(z, force_not_quantize=not self.settings.quantize).sample
        return (out.float().clamp(-1, 1) + 1) / 2

    # ---- the optimisation --------------------------------------------------------------------
    def _per_image_loss(self, z, maps, noise, text, negative):
        """decode -> cutouts -> CLIP -> (B,) losses: the step ``torch.compile`` sees (no
        generators inside). The loss itself is float32, outside autocast."""
        s = self.settings
        with autocast(self.device, self.amp_dtype):
            crops = apply_cutouts(self.decode(z), maps, noise, self.cut_size)
            emb = self.image_embeddings(crops).view(len(z), s.cutouts, -1)
        per_image = -s.text_weight * (emb * text[:, None]).sum(-1).mean(1)
        if negative is not None:
            per_image = per_image + s.negative_weight * (emb @ negative).mean(1)
        return per_image

    def optimize(self, prompts: Sequence[str], seeds: Sequence[int],
                 on_snapshot: Callable[[int, Any], None] | None = None):
        """Optimise one latent per prompt. Returns (images (B,3,H,W) in [0,1], per-step losses
        (steps, B), final CLIP similarity (B,))."""
        import torch

        s = self.settings
        generators = [torch.Generator(device=self.device).manual_seed(int(x)) for x in seeds]
        text = self.encode_texts(prompts)
        negative = self.encode_texts([s.negative_prompt])[0] if s.negative_prompt else None
        z = self.initial_latents(generators).requires_grad_(True)
        optimizer = torch.optim.Adam([z], lr=s.lr)  # AdamW with per-image decay, applied below
        decay = torch.ones(len(prompts), device=self.device)  # AdamW starts with decay on
        # fp16 gradients through the decoder underflow without loss scaling (bf16 needs none)
        scaler = grad_scaler(self.device, self.amp_dtype)
        snapshots, history = set(s.snapshots), []

        def backward(per_image):
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(per_image.sum()).backward()

        for step in range(1, s.iterations + 1):
            maps, noise = draw_cutouts(s, s.size, self.cut_size, generators, self.device)
            per_image = self._step.run(backward, z, maps, noise, text, negative)
            with torch.no_grad():  # decoupled weight decay, as AdamW applies it before its step
                z.mul_(1 - s.lr * s.weight_decay * decay.view(-1, 1, 1, 1))
            scaler.step(optimizer)  # a plain optimizer.step() unless fp16
            scaler.update()
            with torch.no_grad():
                decay = (z.abs().amax(dim=(1, 2, 3)) > s.weight_decay_threshold).float()
            history.append(per_image.detach().float())  # stays on the device: no sync
            if on_snapshot is not None and step in snapshots:
                with torch.no_grad(), autocast(self.device, self.amp_dtype):
                    on_snapshot(step, self.decode(z))
        with torch.no_grad(), autocast(self.device, self.amp_dtype):
            images = self.decode(z)
            small = torch.nn.functional.interpolate(images, size=(self.cut_size, self.cut_size),
                                                    mode="bilinear", antialias=True)
            similarity = (self.image_embeddings(small) * text).sum(-1)
        losses = torch.stack(history).cpu() if history else None
        return images.float(), losses, similarity.float().cpu()

    def generate(self, jobs: Sequence[Job]) -> list[JobResult]:
        start = time.perf_counter()
        snaps: dict[int, list] = {}
        images, _, similarity = self.optimize(
            [j.prompt for j in jobs], [j.seed for j in jobs],
            on_snapshot=lambda step, imgs: snaps.__setitem__(step, to_pil(imgs)))
        share = (time.perf_counter() - start) / len(jobs)
        return [JobResult(job, image, share, float(similarity[i]),
                          {step: pics[i] for step, pics in snaps.items()})
                for i, (job, image) in enumerate(zip(jobs, to_pil(images), strict=True))]
