"""The narrow interface every cloze scorer implements: a batch of requests in, a list out.

A :class:`ClozeRequest` is one filled prompt with a single mask position, split into the text
before and after the mask, and the answer words to read at that position. A scorer returns, for
each request, one score per word: the **mean log-probability of the word's pieces**, each piece
at its own mask position (a word of ``n`` pieces is scored with ``n`` consecutive masks). Higher
is better; scores of different words are comparable because they are per-piece averages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ClozeRequest:
    """One filled prompt and the words to score at its mask."""

    prefix: str
    """Text before the mask, e.g. ``An ant is``."""
    suffix: str
    """Text after the mask, e.g. `` than a bird.`` (keeps its leading space)."""
    words: tuple[str, ...]
    """Answer words to score at the mask position."""
    image: Any = None
    """Optional image input for vision-language scorers (a PIL image or a path)."""


Progress = Callable[[int], None]
"""Called with the number of requests just finished, for progress bars."""


@runtime_checkable
class Scorer(Protocol):
    name: str

    def describe(self) -> dict[str, Any]:
        """Model id, weights hash and settings, for the run's configuration."""

    def score(self, requests: Sequence[ClozeRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        """Mean log-probability of each word of each request, aligned with ``request.words``."""
