"""Devices, precision, model loading with one-sentence errors, and weight hashes."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spatialprobe.extras import require
from spatialprobe.loading import ModelLoadError, resolve_device  # noqa: F401 (re-exported)

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".ckpt", ".pt", ".pth")


def resolve_precision(precision: str, device) -> Any:
    """``auto`` is bfloat16 autocast on CUDA and float32 elsewhere; returns a torch dtype."""
    import torch

    names = {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16,
             "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16}
    if precision == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if precision not in names:
        raise ValueError(f"Unknown precision {precision!r}; use auto, fp32, bf16 or fp16.")
    return names[precision]


def autocast_enabled(device, dtype) -> bool:
    """Autocast runs on CUDA for either half type and on the CPU for bfloat16 (the CPU's
    float16 autocast covers few ops, so there fp16 stays float32)."""
    import torch

    if device.type == "cuda":
        return dtype != torch.float32
    return device.type == "cpu" and dtype == torch.bfloat16


def autocast(device, dtype):
    """Mixed precision context where ``autocast_enabled``; a no-op otherwise."""
    import torch

    if autocast_enabled(device, dtype):
        return torch.autocast(device_type=device.type, dtype=dtype)
    return contextlib.nullcontext()


def grad_scaler(device, dtype):
    """A loss scaler, enabled for fp16 (whose gradients underflow without one); a pass-through
    otherwise. ``torch.amp.GradScaler`` exists from torch 2.3, the CUDA one before that."""
    import torch

    enabled = dtype == torch.float16
    if hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device.type, enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled and device.type == "cuda")


def load_model(loader: Callable[..., Any], name_or_path: str, what: str, **kwargs) -> Any:
    """``loader(name_or_path, **kwargs)`` with a clear sentence when the files cannot be had."""
    try:
        return loader(name_or_path, **kwargs)
    except (OSError, ValueError) as err:
        hint = ("no such directory" if not Path(name_or_path).exists() else "the directory lacks "
                "the expected files")
        raise ModelLoadError(
            f"Could not load the {what} {name_or_path!r} ({hint}: {str(err).splitlines()[0][:200]}). "
            "Pass a local directory saved with save_pretrained, or download the model where the "
            f"Hugging Face Hub is reachable (`hf download {name_or_path}`) and check the name."
        ) from None


def local_dir(name_or_path: str) -> Path | None:
    """The local directory of a model: the path itself, or its Hub cache snapshot if present."""
    path = Path(name_or_path)
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name_or_path, local_files_only=True))
    except Exception:  # not cached, not a repo id
        return None


def weights_hash(name_or_path: str) -> str | None:
    """sha256 (first 16 hex digits) over the weight files of a model directory, or None."""
    folder = local_dir(name_or_path)
    if folder is None:
        return None
    digest = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)
    if not files:
        return None
    for path in files:
        digest.update(str(path.relative_to(folder)).encode())
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def to_pil(images):
    """(B, 3, H, W) tensor in [0, 1] -> list of PIL RGB images."""
    Image = require("PIL.Image", "synthesis", "Saving generated images")
    array = (images.detach().float().clamp(0, 1) * 255).round().to("cpu").byte()
    return [Image.fromarray(a.permute(1, 2, 0).numpy(), "RGB") for a in array]
