"""Prompt selection on cached scores: pick the best configuration on a fold's dev set.

For every configuration (template ``t``, answer set ``s``) the prediction for instance ``i`` is
the label whose answer word scores highest; the configuration with the highest dev accuracy is
chosen (ties: higher dev macro-F1, then the earlier configuration, so the hand-written prompt
wins ties). All of it is array arithmetic on the score grid: no forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spatialprobe.errors import UsageError
from spatialprobe.metrics.weighted import STATISTICS
from spatialprobe.probing.scores import ScoreGrid
from spatialprobe.records import Fold, PromptConfig


@dataclass(frozen=True)
class Choice:
    """The configuration a fold chose, with its dev figures."""

    template_index: int
    answer_set_index: int
    config: PromptConfig
    dev_accuracy: float
    dev_macro_f1: float


def predictions(grid: ScoreGrid, answer_sets: list[tuple[str, ...]]) -> np.ndarray:
    """``pred[t, s, i]``: index of the predicted label under template t and answer set s."""
    word_idx = np.array([[grid.word_index(w) for w in answers] for answers in answer_sets])  # [S, L]
    per_set = grid.values[:, :, word_idx]  # [T, N, S, L]
    return per_set.argmax(axis=-1).transpose(0, 2, 1)  # [T, S, N]


def choose(grid: ScoreGrid, answer_sets: list[tuple[str, ...]], pred: np.ndarray, gold: np.ndarray,
           labels: tuple[str, ...], fold: Fold) -> Choice:
    index = {iid: n for n, iid in enumerate(grid.instance_ids)}
    dev = np.array([index[i] for i in fold.dev], dtype=int)
    if dev.size == 0:
        raise UsageError(f"Fold {fold.index} has an empty dev set: too few objects for {len(labels)} labels.")
    ones = np.ones((1, dev.size))
    n_t, n_s = pred.shape[:2]
    correct = STATISTICS["accuracy"](gold[dev], pred[:, :, dev].reshape(n_t * n_s, dev.size), ones,
                                     len(labels)).reshape(n_t, n_s)  # [T, S], every configuration at once
    best_acc = correct.max()
    best = None
    for t, s in zip(*np.nonzero(np.isclose(correct, best_acc)), strict=True):
        figures = {name: float(STATISTICS[name](gold[dev], pred[t, s, dev], ones, len(labels))[0])
                   for name in ("accuracy", "macro_f1")}  # label codes: the registry's statistics
        key = (figures["macro_f1"], -t, -s)
        if best is None or key > best[0]:
            best = (key, int(t), int(s), figures)
    assert best is not None  # correct.max() itself is among the isclose() matches
    _, t, s, figures = best
    return Choice(t, s, PromptConfig(grid.templates[t], answer_sets[s]),
                  figures["accuracy"], figures["macro_f1"])
