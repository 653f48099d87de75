"""Image-text scores with any contrastive image-text checkpoint (CLIP, LAION CLIP, SigLIP, SigLIP 2).

The model, its padding rule and its similarity come from :mod:`spatialprobe.contrastive`, which
reads the family from the checkpoint's configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from spatialprobe.contrastive import FAMILIES
from spatialprobe.loading import autocast, device_name
from spatialprobe.models.base import Declared, Option, Progress, ScoreRequest
from spatialprobe.registry import component
from spatialprobe.vision import open_image


@component("model", "contrastive", "CLIP / SigLIP / SigLIP 2: each option's sentence scored against the image")
class ClipSimilarity(Declared):
    """``batch_scores(items)``: the model's image-text logits (``logits_per_image``) for each
    image and its texts; CLIP's scaled cosine, SigLIP's scaled cosine plus bias.

    As a ``model`` adapter, ``score(requests)`` scores each option's sentence (``prefix + option +
    suffix``) against the request's image."""
    sees_images: ClassVar[bool] = True
    specificity: ClassVar[int] = 30
    model_types: ClassVar[tuple[str, ...]] = tuple(FAMILIES)
    """A dual encoder of a contrastive family (:data:`spatialprobe.contrastive.FAMILIES`)."""

    name = "contrastive"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("contrastive",)
    options: ClassVar[dict[str, Option]] = {}

    def __init__(self, model: str = "openai/clip-vit-base-patch32", device: str = "auto"):
        from spatialprobe.contrastive import ContrastiveModel

        self.model_name = str(model)
        self.device = device_name(device)
        self.contrastive = ContrastiveModel.load(self.model_name, self.device)

    def describe(self) -> dict[str, Any]:
        return self.contrastive.describe()

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        """The logit of each option's sentence with the request's image."""
        from spatialprobe.errors import UsageError

        missing = [i for i, r in enumerate(requests) if r.image is None]
        if missing:
            raise UsageError(f"the contrastive model scores sentences against an image; request "
                             f"{missing[0]} has none.")
        rows = self.batch_scores([(r.image, [r.prefix + o + r.suffix for o in r.options]) for r in requests])
        if progress:
            progress(len(requests))
        return [tuple(row) for row in rows]

    def batch_scores(self, items: Sequence[tuple[Any, Sequence[str]]]) -> list[list[float]]:
        """For each (image, texts): the logit of every text with that image."""
        images = [open_image(image) for image, _ in items]
        texts = [t for _, group in items for t in group]
        with autocast(self.device):
            logits = self.contrastive.scores(images, texts)  # (images, all texts)
        out, start = [], 0
        for row, (_, group) in enumerate(items):
            out.append(logits[row, start:start + len(group)].tolist())
            start += len(group)
        return out
