"""Device choice shared by every model-running component."""

from __future__ import annotations


def resolve_device(device: str = "auto"):
    """``auto`` -> cuda when available, else cpu; ``cuda`` without a GPU is a clear error."""
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for, but PyTorch sees no CUDA GPU here; use --device cpu.")
    return torch.device(device)
