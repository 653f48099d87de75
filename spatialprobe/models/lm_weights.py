"""A transformers language model's weights as the text scorers hold them (``hf-mlm``,
``hf-causal``): loaded and placed, on one device or spread by ``--device-map``
(:func:`load_lm`), and hashed as the model a run describes (:func:`weights_hash`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, NamedTuple

from spatialprobe.sharding import load_placed, state_tensors


def weights_hash(model) -> str:
    """sha256 over the model's parameters and buffers (names, shapes, bytes), first 16 hex digits;
    a model spread by ``--device-map`` hashes as the same model on one device."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in state_tensors(model):
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


class PlacedLM(NamedTuple):
    """A text scorer's model, loaded (:func:`load_lm`)."""

    model: Any
    device: Any
    """Where its inputs go (a spread model's first device)."""
    sharded: bool
    """Whether ``--device-map`` spread it over devices (a model given as an object never is)."""
    half: bool
    """Whether its weights are below float32."""
    weights_hash: str
    """:func:`weights_hash` of its weights."""


def load_lm(loader: Any, name_or_path: str, what: str, dtype: Any, device: Any, device_map: str | None,
            max_memory: Mapping[str, str] | None, model_obj: Any = None) -> PlacedLM:
    """The model ``loader`` (an ``AutoModelFor...`` class) loads from ``name_or_path`` in ``dtype``
    (or ``model_obj`` itself), placed on ``device`` or spread as ``device_map`` asks."""
    import torch

    model, where = load_placed(loader, name_or_path, what, dtype, device, "text scorers", device_map, max_memory,
                               model_obj)
    return PlacedLM(model, where, model is not model_obj and hasattr(model, "hf_device_map"),
                    dtype != torch.float32, weights_hash(model))
