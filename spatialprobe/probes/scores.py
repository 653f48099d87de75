"""The score cache: every (template x instance x answer word) scored once, kept in ``run.sqlite``.

Prompt selection over folds is arithmetic on this cache, so a 5-fold search costs no more
forward passes than one fold, and an interrupted run resumes where it stopped: scores are
committed in chunks as they are computed, and only missing (template, instance) cells are
scored again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..prompts.templates import fill
from ..records import Instance
from ..store import RunDir
from .base import ClozeRequest, Scorer

SCHEMA = """CREATE TABLE IF NOT EXISTS scores (
    template TEXT NOT NULL, instance_id TEXT NOT NULL, word TEXT NOT NULL, score REAL NOT NULL,
    PRIMARY KEY (template, instance_id, word))"""


@dataclass(frozen=True)
class ScoreGrid:
    """``values[t, i, w]``: score of ``words[w]`` for ``instances[i]`` under ``templates[t]``."""

    templates: tuple[str, ...]
    instance_ids: tuple[str, ...]
    words: tuple[str, ...]
    values: np.ndarray

    def word_index(self, word: str) -> int:
        return self.words.index(word)


def compute_scores(run: RunDir, scorer: Scorer, templates: Sequence[str], instances: Sequence[Instance],
                   words: Sequence[str], *, chunk: int = 512,
                   on_progress: Callable[[int, int], None] | None = None) -> ScoreGrid:
    """Fill the cache for every cell that is missing, then return the full grid."""
    words = tuple(dict.fromkeys(words))
    with run.db() as conn:
        conn.execute(SCHEMA)
        have = {}
        for template, iid, word, score in conn.execute("SELECT * FROM scores"):
            have[(template, iid, word)] = score
    todo = [(t, inst) for t in templates for inst in instances
            if any((t, inst.id, w) not in have for w in words)]
    total = len(templates) * len(instances)
    done = total - len(todo)
    if on_progress:
        on_progress(done, total)
    for start in range(0, len(todo), chunk):
        part = todo[start:start + chunk]
        requests = [ClozeRequest(*fill(t, inst), words=words) for t, inst in part]
        finished, end = [done], done + len(part)

        # Scorers report requests finished since the last call; this chunk's counters are bound
        # as defaults so a callback kept past this iteration still counts against its own chunk.
        def tick(n: int, finished: list[int] = finished, end: int = end) -> None:
            finished[0] += n
            if on_progress:
                on_progress(min(finished[0], end), total)

        results = scorer.score(requests, progress=tick)
        rows = [(t, inst.id, w, float(s)) for (t, inst), scores in zip(part, results, strict=True)
                for w, s in zip(words, scores, strict=True)]
        with run.db() as conn:
            conn.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?)", rows)
        for t, iid, w, s in rows:
            have[(t, iid, w)] = s
        done += len(part)
        if on_progress:
            on_progress(done, total)
    values = np.array([[[have[(t, inst.id, w)] for w in words] for inst in instances] for t in templates])
    return ScoreGrid(tuple(templates), tuple(inst.id for inst in instances), words, values)
