"""Any diffusers text-to-image pipeline (Stable Diffusion 1.x/2.x, SDXL, ...) by id or path."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from spatialprobe.extras import require
from spatialprobe.fingerprints import weights_hash
from spatialprobe.loading import (
    dtype_name,
    load_pretrained,
    resolve_device,
    resolve_precision,
)
from spatialprobe.synthesis.jobs import Job, JobResult


class DiffusersPipeline:
    """``DiffusionPipeline.from_pretrained(model)`` called with one seeded generator per image.

    Generators live on the CPU (diffusers' advice for reproducibility), so a seed gives the
    same initial noise on any device and in any batch.
    """

    name = "diffusers"

    def __init__(self, model: str, steps: int = 50, guidance: float = 7.5,
                 height: int | None = None, width: int | None = None, negative_prompt: str = "",
                 device: str = "auto", precision: str = "auto"):
        require("diffusers", "synthesis", "The diffusers backend")
        from diffusers import DiffusionPipeline

        self.model_id = model
        self.device = resolve_device(device)
        dtype = resolve_precision(precision, self.device, "diffusion")
        self.pipe = load_pretrained(DiffusionPipeline, model, "the diffusion pipeline",
                                    dtype=dtype).to(self.device)
        self.pipe.set_progress_bar_config(disable=True)
        self.settings = {"steps": int(steps), "guidance": float(guidance), "height": height,
                         "width": width, "negative_prompt": negative_prompt,
                         "dtype": dtype_name(dtype), "device": self.device.type}
        self._hash: str | None = None

    def describe(self) -> dict[str, Any]:
        if self._hash is None:
            self._hash = weights_hash(self.model_id) or "unknown"
        return {"model": self.model_id, "weights_hash": self._hash, "settings": dict(self.settings)}

    def generate(self, jobs: Sequence[Job]) -> list[JobResult]:
        import torch

        s = self.settings
        start = time.perf_counter()
        kwargs: dict[str, Any] = {
            "prompt": [j.prompt for j in jobs],
            "num_inference_steps": s["steps"],
            "guidance_scale": s["guidance"],
            "generator": [torch.Generator("cpu").manual_seed(j.seed) for j in jobs],
            "output_type": "pil",
        }
        if s["negative_prompt"]:
            kwargs["negative_prompt"] = [s["negative_prompt"]] * len(jobs)
        if s["height"]:
            kwargs["height"] = s["height"]
        if s["width"]:
            kwargs["width"] = s["width"]
        with torch.no_grad():
            images = self.pipe(**kwargs).images
        share = (time.perf_counter() - start) / len(jobs)
        return [JobResult(job, image.convert("RGB"), share) for job, image in zip(jobs, images, strict=True)]
