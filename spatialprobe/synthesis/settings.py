"""VQGAN+CLIP settings as a frozen dataclass; presets are JSON files in ``presets/``.

A preset file names only the fields it changes from the dataclass defaults (which are the
paper's recipe); ``_about`` is a one-line description. A new preset needs no code.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from spatialprobe.errors import UsageError

SPEEDS = ("auto", "fast", "plain")


@dataclass(frozen=True)
class VQGANCLIPSettings:
    """Every knob of the VQGAN+CLIP optimisation, defaulting to the paper's recipe."""

    size: int = 512
    """Side of the square image in pixels (a multiple of the VQGAN's downsampling factor)."""
    iterations: int = 600
    """Optimisation steps per image."""
    lr: float = 0.5
    """AdamW learning rate on the latent."""
    cutouts: int = 32
    """Random crops per image and step that CLIP sees."""
    large_cutouts: int = 3
    """How many of the last cutouts have the fixed large size ``large_cutout_scale``."""
    large_cutout_scale: float = 1.4
    """Side of the large cutouts relative to the image side (the image is zero-padded by half)."""
    cutout_scale_mean: float = 1.2
    """Mean of the normal distribution of the other cutouts' side, relative to the image side."""
    cutout_scale_std: float = 0.3
    """Standard deviation of that distribution."""
    cutout_scale_min: float = 0.43
    """Lower clip of the relative cutout side."""
    cutout_scale_max: float = 1.9
    """Upper clip of the relative cutout side (at most 2: the padded image)."""
    flip_probability: float = 0.5
    """Probability of a horizontal flip of the padded image, drawn per image and step."""
    max_rotation_degrees: float = 24.0
    """Random affine: rotation drawn uniformly from +-this many degrees."""
    max_translate: float = 0.1
    """Random affine: translation drawn uniformly from +-this fraction of the padded side."""
    noise: float = 0.11
    """Gaussian noise on each cutout, scaled by ``noise`` times a uniform draw per cutout."""
    text_weight: float = 10.0
    """Loss weight of the cosine similarity with the prompt (the loss uses its negative)."""
    negative_prompt: str = "incoherent, confusing, cropped, watermarks"
    """Text whose similarity is penalised; empty to switch it off."""
    negative_weight: float = 5.0
    """Loss weight of the cosine similarity with ``negative_prompt``."""
    init_std: float = 0.5
    """Standard deviation of the random initial latent."""
    init_sinh_gain: float = 1.9
    """Initial latent x is reshaped as sinh(gain * asinh(x)), widening its tails."""
    latent_clip: float = 6.0
    """The latent is clipped to +-this before decoding."""
    weight_decay: float = 0.1
    """AdamW weight decay, applied to an image's latent while its largest entry exceeds the threshold."""
    weight_decay_threshold: float = 5.0
    """Threshold on max |latent| that switches the weight decay on for the next step."""
    quantize: bool = False
    """Decode through the codebook (straight-through) instead of the raw latent."""
    snapshots: tuple[int, ...] = ()
    """Iterations after which to save an intermediate image under ``RUN/snapshots/``."""
    speed: str = "auto"
    """``plain`` (fp32 weights under autocast, eager), ``fast`` (half-precision weights when
    autocast is on, channels-last, a compiled step on CUDA): the same recipe, pixels equal up
    to rounding (bound in docs/synthesis.md). ``auto`` is fast on CUDA, plain elsewhere; each
    image records the speed that made it."""

    def __post_init__(self) -> None:
        if self.speed not in SPEEDS:
            raise UsageError(f"speed takes {', '.join(SPEEDS)}, got {self.speed!r}")

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["snapshots"] = list(self.snapshots)
        return data


def preset_names() -> list[str]:
    folder = resources.files("spatialprobe.synthesis") / "presets"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def load_preset(name: str) -> VQGANCLIPSettings:
    """The named preset (``paper``, ``fast``, ...)."""
    path = resources.files("spatialprobe.synthesis") / "presets" / f"{name}.json"
    if not path.is_file():
        raise UsageError(f"Unknown VQGAN+CLIP preset {name!r}. Available: {', '.join(preset_names())}.")
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("_about", None)
    return with_overrides(VQGANCLIPSettings(), data)


def _coerce(name: str, value: Any, kind: Any) -> Any:
    if not isinstance(value, str):
        return tuple(int(v) for v in value) if name == "snapshots" else value
    if name == "snapshots":
        return tuple(int(v) for v in value.replace(" ", "").split(",") if v)
    if kind in ("bool", bool):
        if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise UsageError(f"setting {name!r} takes true/false, got {value!r}")
        return value.lower() in ("true", "1", "yes")
    if kind in ("int", int):
        return int(value)
    if kind in ("float", float):
        return float(value)
    return value


def with_overrides(settings: VQGANCLIPSettings, overrides: Mapping[str, Any]) -> VQGANCLIPSettings:
    """A copy with the named fields changed; values may be strings (from ``--set key=value``)."""
    fields = {f.name: f.type for f in dataclasses.fields(VQGANCLIPSettings)}
    changes = {}
    for name, value in overrides.items():
        if name not in fields:
            raise UsageError(f"Unknown VQGAN+CLIP setting {name!r}. Known: {', '.join(fields)}.")
        try:
            changes[name] = _coerce(name, value, fields[name])
        except ValueError as err:
            raise UsageError(f"setting {name}={value!r}: {err}") from None
    return dataclasses.replace(settings, **changes)
