"""Loading pretrained models the same way everywhere: one clear sentence when it fails, one device rule.

Every component loads through ``loader.from_pretrained(name_or_path)``, so a user with the
Hugging Face hub gets real models by id and anyone else passes a local directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ModelLoadError(RuntimeError):
    """A pretrained model, tokenizer or processor could not be loaded; the message says what to do."""


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub's host (``HF_ENDPOINT`` or huggingface.co) answers on its port."""
    import os
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        with socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)),
                                      timeout=timeout):
            return True
    except OSError:
        return False


def load_pretrained(loader: Any, name_or_path: str, what: str, **kwargs) -> Any:
    """``loader.from_pretrained(name_or_path)`` with one clear sentence when it cannot be had.

    A hub id is first looked up in the local cache; only when it is not there and the hub can be
    reached is it downloaded, so an offline machine gets the answer at once instead of after the
    hub client's retries."""
    try:
        if not Path(str(name_or_path)).exists():
            try:
                return loader.from_pretrained(str(name_or_path), local_files_only=True, **kwargs)
            except (OSError, ValueError, KeyError):
                if not hub_reachable():
                    raise OSError("not in the local Hugging Face cache, and the hub cannot be reached") from None
        return loader.from_pretrained(str(name_or_path), **kwargs)
    except (OSError, ValueError, KeyError) as err:
        hint = ("the directory exists but does not hold a loadable checkpoint"
                if Path(str(name_or_path)).exists()
                else "it is not a local directory, and the Hugging Face hub could not provide it")
        detail = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise ModelLoadError(
            f"Could not load {what} {str(name_or_path)!r} ({hint}): check the name, or download it "
            f"where the hub is reachable (`huggingface-cli download {name_or_path}`) and pass the "
            f"local directory. (details: {detail})"
        ) from None


def resolve_device(device: str = "auto"):
    """``auto`` -> cuda when available, else cpu; asking for cuda without a GPU is a clear error."""
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(f"--device {device} was asked for, but PyTorch sees no CUDA GPU here; "
                             "use --device cpu.")
    return torch.device(device)


def place_model(model: Any, device: Any, half: bool | None = None) -> bool:
    """Put a text scorer's model in eval mode on ``device``; in float16 when ``half`` (default:
    on CUDA). Returns whether it is half precision (recorded in the scorer's description)."""
    half = (device.type == "cuda") if half is None else half
    model.eval().to(device)
    if half:
        model.half()
    return half
