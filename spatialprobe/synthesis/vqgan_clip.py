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

from spatialprobe.errors import UsageError
from spatialprobe.extras import require
from spatialprobe.fingerprints import weights_hash
from spatialprobe.loading import (
    autocast,
    autocast_enabled,
    dtype_name,
    grad_scaler,
    load_pretrained,
    resolve_device,
    resolve_precision,
)
from spatialprobe.synthesis.augment import apply_cutouts, draw_cutouts
from spatialprobe.synthesis.fastpath import (
    CompiledStep,
    checkpoint_decoder,
    hold_weights_in,
    image_side,
    resolve_compile,
    use_channels_last,
)
from spatialprobe.synthesis.jobs import Job, JobResult
from spatialprobe.synthesis.settings import VQGANCLIPSettings, load_preset, with_overrides
from spatialprobe.vision import to_pil


class VQGANCLIP:
    """A VQGAN (diffusers ``VQModel`` directory or id) steered by a contrastive image-text model
    (CLIP, LAION CLIP, SigLIP, SigLIP 2: :mod:`spatialprobe.contrastive`, chosen from its config).
    The loss is the recipe's, on cosines, whatever the family's trained similarity."""

    name = "vqgan-clip"

    def __init__(self, vqgan: str, clip: str = "openai/clip-vit-base-patch32",
                 preset: str = "paper", settings: Mapping[str, Any] | None = None,
                 device: str = "auto", precision: str = "auto", compile: str = "auto",
                 checkpoint: bool = False):
        require("diffusers", "synthesis", "VQGAN+CLIP")
        from diffusers import VQModel

        from spatialprobe.contrastive import ContrastiveModel

        self.settings: VQGANCLIPSettings = with_overrides(load_preset(preset), settings or {})
        self.vqgan_id, self.clip_id = vqgan, clip
        self.device = resolve_device(device)
        self.amp_dtype = resolve_precision(precision, self.device, "vqgan-clip")
        self.vq = load_pretrained(VQModel, vqgan, "the VQGAN", dtype="fp32").to(self.device).eval()
        self.contrastive = ContrastiveModel.load(clip, self.device)
        self.clip = self.contrastive.model
        for module in (self.vq, self.clip):
            module.requires_grad_(False)
        self.cut_size = self.contrastive.image_size  # the processor's size, else the config's
        self.factor = 2 ** (len(self.vq.config.block_out_channels) - 1)
        if self.settings.size % self.factor:
            raise UsageError(f"size {self.settings.size} is not a multiple of the VQGAN's "
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

    def describe(self) -> dict[str, Any]:
        if self._hash is None:
            parts = [weights_hash(self.vqgan_id), weights_hash(self.clip_id)]
            self._hash = ";".join(p or "unknown" for p in parts)
        # device and precision may change on resume, so each image records what made it
        autocast_dtype = dtype_name(self.amp_dtype) \
            if autocast_enabled(self.device, self.amp_dtype) else "float32"
        return {"model": f"vqgan={self.vqgan_id};clip={self.clip_id}", "weights_hash": self._hash,
                "settings": {**self.settings.to_dict(), "speed": self.speed,
                             "device": self.device.type, "dtype": autocast_dtype}}

    # ---- pieces ------------------------------------------------------------------------------
    def encode_texts(self, texts: Sequence[str]):
        """Unit text embeddings, one text at a time so padding never depends on the batch
        (the family's padding rule: none for CLIP, full length for SigLIP)."""
        import torch

        return torch.cat([self.contrastive.text_features([text]) for text in texts])

    def image_embeddings(self, images):
        """Unit embeddings of images in [0, 1] already at the model's input size, through the
        model's own normalisation (and SigLIP 2's patch layout), differentiably."""
        return self.contrastive.image_features(images)

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
