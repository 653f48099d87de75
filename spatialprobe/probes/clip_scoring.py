"""Image-text similarity with any transformers CLIP-style checkpoint (CLIP, SigLIP, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .vl_common import autocast, load_pretrained, open_image, resolve_device


class ClipSimilarity:
    """``scores(image, texts)``: the model's image-text logits for one image and its texts."""

    def __init__(self, model: str = "openai/clip-vit-base-patch32", device: str = "auto"):
        from transformers import AutoModel, AutoProcessor

        self.model_name = str(model)
        self.device = resolve_device(device)
        self.processor = load_pretrained(AutoProcessor, self.model_name, "CLIP processor")
        self.model = load_pretrained(AutoModel, self.model_name, "CLIP model").to(self.device).eval()

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_name, "device": self.device,
                "weights_revision": getattr(self.model.config, "_commit_hash", None)}

    def batch_scores(self, items: Sequence[tuple[Any, Sequence[str]]]) -> list[list[float]]:
        """For each (image, texts): the logit of every text with that image."""
        import torch

        images = [open_image(image) for image, _ in items]
        texts = [t for _, group in items for t in group]
        # SigLIP was trained on texts padded to the full length (64); its scores assume that padding
        padding: dict[str, Any] = {"padding": True}
        if "siglip" in self.model.config.model_type:
            padding = {"padding": "max_length",
                       "max_length": self.model.config.text_config.max_position_embeddings}
        inputs = self.processor(images=images, text=texts, return_tensors="pt", truncation=True,
                                **padding)
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with torch.no_grad(), autocast(self.device):
            logits = self.model(**inputs).logits_per_image.float()  # (images, all texts)
        out, start = [], 0
        for row, (_, group) in enumerate(items):
            out.append(logits[row, start:start + len(group)].tolist())
            start += len(group)
        return out
