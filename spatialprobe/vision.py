"""Images as the vision-language models and the image synthesis models see them.

(Devices, precision and model loading are :mod:`spatialprobe.loading`'s.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spatialprobe.extras import require


def blank_image(size: int = 384, gray: int = 128):
    """A neutral mid-gray RGB image: gives a vision-language model an image that shows nothing."""
    Image = require("PIL.Image", "vl")
    return Image.new("RGB", (size, size), (gray, gray, gray))


def open_image(image: Any):
    """A PIL RGB image from a PIL image or a path."""
    Image = require("PIL.Image", "vl")
    if isinstance(image, (str, Path)):
        with Image.open(image) as handle:
            return handle.convert("RGB")
    return image.convert("RGB")


def to_pil(images):
    """(B, 3, H, W) tensor in [0, 1] -> list of PIL RGB images."""
    Image = require("PIL.Image", "synthesis", "Saving generated images")
    array = (images.detach().float().clamp(0, 1) * 255).round().to("cpu").byte()
    return [Image.fromarray(a.permute(1, 2, 0).numpy(), "RGB") for a in array]
