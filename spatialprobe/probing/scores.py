"""Score cells: every (template x instance) scored once for every answer word.

A *cell* is one filled prompt; its result is the score of each answer word at its mask. The run
spine caches cells (``results`` table of ``run.sqlite``), so prompt selection over folds is
arithmetic on the cache: a 5-fold search costs no more forward passes than one fold, and an
interrupted run scores only the cells it had not committed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from spatialprobe.models.base import Progress, Scorer, ScoreRequest
from spatialprobe.prompts.templates import fill
from spatialprobe.records import Instance


@dataclass(frozen=True)
class ScoreGrid:
    """``values[t, i, w]``: score of ``words[w]`` for ``instances[i]`` under ``templates[t]``."""

    templates: tuple[str, ...]
    instance_ids: tuple[str, ...]
    words: tuple[str, ...]
    values: np.ndarray

    def word_index(self, word: str) -> int:
        return self.words.index(word)


def cell_key(template: str, instance_id: str) -> str:
    """The cache key of one cell (content, not position: reordering candidates keeps the cache)."""
    return json.dumps([template, instance_id], ensure_ascii=False)


def score_cells(scorer: Scorer, cells: Sequence[tuple[str, Instance]], words: Sequence[str],
                progress: Progress | None = None) -> list[list[float]]:
    """Scores of ``words`` for each (template, instance) cell, in one call of the scorer."""
    requests = [ScoreRequest(*fill(template, inst), options=tuple(words)) for template, inst in cells]
    return [[float(s) for s in scores] for scores in scorer.score(requests, progress=progress)]


def grid_from(results: Mapping[str, Sequence[float]], templates: Sequence[str],
              instances: Sequence[Instance], words: Sequence[str]) -> ScoreGrid:
    values = np.array([[results[cell_key(t, inst.id)] for inst in instances] for t in templates],
                      dtype=float)
    return ScoreGrid(tuple(templates), tuple(inst.id for inst in instances), tuple(words), values)
