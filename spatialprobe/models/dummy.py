"""An UNTRAINED smoke-test scorer: deterministic pseudo-random scores, no model, no download.

It lets a newcomer see the whole pipeline run offline (``--model dummy``). Its numbers mean
nothing: every output that uses it is labelled ``untrained``.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from typing import Any, ClassVar

from spatialprobe.models.base import Declared, Option, Progress, ScoreRequest
from spatialprobe.registry import component


@component("model", "dummy", "UNTRAINED smoke-test scorer: deterministic pseudo-random scores, no download")
class DummyScorer(Declared):
    gpus: ClassVar[int] = 0
    reads_config: ClassVar[bool] = False
    name = "dummy"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("cloze",)
    options: ClassVar[dict[str, Option]] = {
        "seed": Option(int, 0, "seed of its pseudo-random scores (default: the run's --seed)")}

    def __init__(self, seed: int = 0, **_: Any):
        self.seed = seed

    def describe(self) -> dict[str, Any]:
        return {"scorer": self.name, "model": "dummy", "untrained": True, "seed": self.seed,
                "weights_sha256": None,
                "score": "sha256 of (seed, prompt, word) mapped to (-10, 0]: NOT a model"}

    def _score(self, req: ScoreRequest, word: str) -> float:
        key = f"{self.seed}\x1f{req.prefix}\x1f{word}\x1f{req.suffix}".encode()
        (value,) = struct.unpack(">Q", hashlib.sha256(key).digest()[:8])
        return -10.0 * value / 2**64

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        out = [tuple(self._score(req, w) for w in req.options) for req in requests]
        if progress:
            progress(len(requests))
        return out
