"""Simulated runs of many models with planted mislabelled items (for ``audit data``'s suspect
items), written as Every Eval Ever instance logs; and images re-saved and resized (for its overlap)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OPTIONS = ("left", "right", "above", "below")


def simulate(rng: np.random.Generator, items: int = 300, models: int = 19, mislabelled: int = 15, hard: int = 30
             ) -> dict[str, np.ndarray]:
    """A test set whose gold is wrong on ``mislabelled`` items (the true answer is another option),
    answered by ``models`` models of accuracy 35-85 % on the true answer; ``hard`` items have a
    popular distractor that models that miss them mostly choose, and are missed more often (the
    items that fool many models honestly, against which the suspects must stand out)."""
    n = len(OPTIONS)
    true = rng.integers(0, n, items)
    gold = true.copy()
    planted = rng.choice(items, mislabelled, replace=False)
    gold[planted] = (true[planted] + rng.integers(1, n, mislabelled)) % n
    is_hard = np.zeros(items, dtype=bool)
    is_hard[rng.choice(np.setdiff1d(np.arange(items), planted), hard, replace=False)] = True
    distractor = (true + rng.integers(1, n, items)) % n
    skill = np.linspace(0.35, 0.85, models)[:, None] * np.where(is_hard, 0.6, 1.0)[None]
    right = rng.random((models, items)) < skill
    other = (true + rng.integers(1, n, (models, items))) % n
    lured = is_hard[None] & (rng.random((models, items)) < 0.5)
    answers = np.where(right, true, np.where(lured, distractor, other))
    return {"true": true, "gold": gold, "planted": planted, "answers": answers, "hard": is_hard}


def recall_precision(flagged: set[int], planted: np.ndarray) -> tuple[float, float]:
    hits = len(flagged & {int(p) for p in planted})
    return hits / len(planted), hits / len(flagged) if flagged else 1.0


def write_eee(folder: Path, sim: dict[str, np.ndarray]) -> list[Path]:
    """One Every Eval Ever 0.3 instance log per model (the options kept in ``input.choices``, the
    gold as its option's text, the answer as its letter, the image in ``metadata``)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for m, answers in enumerate(sim["answers"]):
        lines = []
        for i, answer in enumerate(answers):
            gold = int(sim["gold"][i])
            lines.append(json.dumps({
                "schema_version": "0.3.0", "evaluation_id": f"sim-{m}", "model_id": f"lab/model-{m:02d}",
                "evaluation_name": "simulated-blink", "sample_id": f"item{i:03d}", "interaction_type": "single_turn",
                "input": {"raw": f"Where is object {i} relative to the table?", "reference": [OPTIONS[gold]],
                          "choices": list(OPTIONS)},
                "output": {"raw": [f"({'ABCD'[int(answer)]})"]},
                "answer_attribution": [{"extracted_value": "ABCD"[int(answer)]}],
                "evaluation": {"score": float(answer == gold), "is_correct": bool(answer == gold)},
                "metadata": {"image": f"img{i // 2:03d}"}}))
        path = folder / f"model-{m:02d}_samples.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def pattern(seed: int, size: tuple[int, int] = (256, 256)):
    """A distinct image: a random 8 × 8 grid of grey levels, smoothly upscaled."""
    from PIL import Image

    grid = np.random.default_rng(seed).integers(0, 256, (8, 8), dtype=np.uint8)
    return Image.fromarray(grid).resize(size, Image.BICUBIC).convert("RGB")
