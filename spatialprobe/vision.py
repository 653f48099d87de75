"""Small pieces the vision-language models share: device as a string, fp16 autocast on CUDA, images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spatialprobe.extras import require
from spatialprobe.loading import ModelLoadError, load_pretrained  # noqa: F401 (re-exported)
from spatialprobe.loading import resolve_device as _resolve_device


def resolve_device(device: str = "auto") -> str:
    """The shared device rule (:func:`spatialprobe.loading.resolve_device`), as a string."""
    return str(_resolve_device(device))


def autocast(device: str):
    """Mixed precision on CUDA (fp16), plain fp32 elsewhere."""
    import contextlib

    import torch

    if device.startswith("cuda"):
        return torch.autocast("cuda", dtype=torch.float16)
    return contextlib.nullcontext()


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
