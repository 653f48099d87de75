"""Small pieces the vision-language probes share: loading, devices, images."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ModelLoadError(RuntimeError):
    """A pretrained model or processor could not be loaded; the message says what to do."""


def load_pretrained(loader: Any, name_or_path: str, what: str, **kwargs) -> Any:
    """``loader.from_pretrained(name_or_path)`` with one clear sentence when it fails."""
    try:
        return loader.from_pretrained(str(name_or_path), **kwargs)
    except (OSError, ValueError, KeyError) as err:
        hint = ("the directory exists but does not hold a loadable checkpoint"
                if Path(str(name_or_path)).exists()
                else "no such local directory, and the Hugging Face hub could not provide it")
        raise ModelLoadError(
            f"Could not load {what} {name_or_path!r} ({hint}): download the checkpoint on a "
            f"machine with network access and pass its local directory instead "
            f"(details: {str(err).splitlines()[0] if str(err) else type(err).__name__})."
        ) from None


def resolve_device(device: str = "auto") -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but torch sees no CUDA GPU; use --device cpu")
    return device


def autocast(device: str):
    """Mixed precision on CUDA (fp16), plain fp32 elsewhere."""
    import contextlib

    import torch

    if device.startswith("cuda"):
        return torch.autocast("cuda", dtype=torch.float16)
    return contextlib.nullcontext()


def blank_image(size: int = 384, gray: int = 128):
    """A neutral mid-gray RGB image: gives a vision-language model an image that shows nothing."""
    from PIL import Image

    return Image.new("RGB", (size, size), (gray, gray, gray))


def open_image(image: Any):
    """A PIL RGB image from a PIL image or a path."""
    from PIL import Image

    if isinstance(image, (str, Path)):
        with Image.open(image) as handle:
            return handle.convert("RGB")
    return image.convert("RGB")
