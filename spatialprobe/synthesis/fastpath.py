"""The VQGAN+CLIP fast path: the same recipe, arranged for the hardware.

- Convolution and linear weights held in the autocast dtype (bfloat16/float16), so autocast
  does not copy them to half precision on every step (the same values: autocast would round
  them the same way); norms, embeddings, the codebook, the optimised latent and Adam's state
  stay float32.
- The VQGAN in ``channels_last``, the layout half-precision convolutions run fastest in.
- The decode -> cutouts -> CLIP step under ``torch.compile`` (CUDA by default: on the CPU its
  warm-up costs more than it saves), falling back to eager with one warning if compiling or
  running the compiled step fails.
- Optionally, activation checkpointing of the decoder's blocks (recomputed in the backward
  pass), which trades about a third more decoder compute for room for batch 32-64.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from spatialprobe.errors import UsageError

COMPILE_CHOICES = ("auto", "on", "off")
CAST_MODULES = (torch.nn.Conv2d, torch.nn.Linear)
"""Modules whose matrix products autocast runs in half precision."""


class Checkpointed(torch.nn.Module):
    """A decoder block whose activations are recomputed in the backward pass."""

    def __init__(self, inner: torch.nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        if torch.is_grad_enabled():
            return checkpoint(self.inner, *args, use_reentrant=False)
        return self.inner(*args)


def checkpoint_decoder(vq) -> None:
    """Wrap the mid block and every up block of a diffusers VQModel decoder (once)."""
    decoder = vq.decoder
    if not isinstance(decoder.mid_block, Checkpointed):
        decoder.mid_block = Checkpointed(decoder.mid_block)
    for i, block in enumerate(decoder.up_blocks):
        if not isinstance(block, Checkpointed):
            decoder.up_blocks[i] = Checkpointed(block)


def hold_weights_in(dtype, *models) -> int:
    """Cast the weights autocast would cast on every step (those of convolutions and linear
    layers) to ``dtype`` once; returns how many modules. Norms, embeddings and the codebook
    stay float32, as autocast runs them, so the step computes what the plain path computes."""
    cast = 0
    for model in models:
        for module in model.modules():
            if isinstance(module, CAST_MODULES):
                module.to(dtype)
                cast += 1
    return cast


def image_side(clip) -> list[torch.nn.Module]:
    """The parts of a CLIP-like model that see the images (under autocast, every step); the
    text side runs once per batch in float32 and keeps its weights."""
    parts = [clip.vision_model, getattr(clip, "visual_projection", None)]
    return [p for p in parts if p is not None]


def use_channels_last(vq) -> None:
    vq.to(memory_format=torch.channels_last)


def resolve_compile(choice: str, device) -> bool:
    if choice not in COMPILE_CHOICES:
        raise UsageError(f"compile takes {', '.join(COMPILE_CHOICES)}, got {choice!r}")
    return choice == "on" or (choice == "auto" and device.type == "cuda")


class CompiledStep:
    """``step(*args)`` (a forward that the caller differentiates) compiled once, or eager.

    ``run(backward, *args)`` calls the step and ``backward`` on its result; if either raises
    inside the compiled version, it warns once, switches to eager for good and redoes the step,
    so a failing compiler costs one step's time, never a wrong result."""

    def __init__(self, step: Callable[..., Any], enabled: bool):
        self.step = step
        self.compiled: Callable[..., Any] | None = None
        if enabled:
            if hasattr(torch, "compile"):
                try:
                    self.compiled = torch.compile(step, dynamic=False)
                except Exception as err:  # unsupported platform or Python
                    self._fall_back(err)
            else:
                self._fall_back(RuntimeError("this torch has no torch.compile"))

    def _fall_back(self, err: BaseException) -> None:
        warnings.warn(f"torch.compile failed ({type(err).__name__}: {str(err)[:200]}); the "
                      "VQGAN+CLIP step runs eagerly (same results, slower).", RuntimeWarning,
                      stacklevel=3)
        self.compiled = None

    def run(self, backward: Callable[[Any], None], *args):
        if self.compiled is not None:
            try:
                out = self.compiled(*args)
                backward(out)
                return out
            except Exception as err:  # a compiler error surfaces at the first call
                self._fall_back(err)
        out = self.step(*args)
        backward(out)
        return out
