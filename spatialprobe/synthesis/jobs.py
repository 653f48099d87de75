"""What a synthesizer is asked to do and what it hands back."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Job:
    """One image to generate."""

    prompt_id: str
    """Id of the prompt in the image store."""
    prompt: str
    """Text given to the model."""
    image_index: int
    """Index among this prompt's images (0-based)."""
    seed: int
    """Seed of this image alone; batches never share random draws between images."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """The prompt's metadata (task instance, SR2D fields); the shapes backend draws from it."""


@dataclass
class JobResult:
    """A finished image and what its row in the run records about it."""

    job: Job
    """The job it answers."""
    image: Any
    """PIL image."""
    seconds: float
    """This image's share of its batch's wall time."""
    clip_score: float | None = None
    """Final CLIP cosine similarity with the prompt (VQGAN+CLIP), else None."""
    snapshots: dict[int, Any] = field(default_factory=dict)
    """Intermediate PIL images by iteration, where asked for."""
    drawn: dict[str, Any] | None = None
    """What a scene-drawing backend (shapes) drew, recorded in the image's row as ``drawn``."""


class Synthesizer(Protocol):
    name: str

    def describe(self) -> dict[str, Any]:
        """``model`` (ids), ``weights_hash`` and ``settings`` for the image rows."""

    def generate(self, jobs: Sequence[Job]) -> list[JobResult]:
        """Generate a batch; results aligned with ``jobs``."""


def image_seed(base_seed: int, prompt_id: str, image_index: int) -> int:
    """A per-image seed that depends only on the run seed, the prompt id and the image index,
    so sharding, batching and resuming never change which image a job produces."""
    digest = hashlib.sha256(f"{base_seed}:{prompt_id}:{image_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
