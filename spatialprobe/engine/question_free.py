"""Does a model's choice depend on the question? Each item's options scored without it.

For size and height the multimodal question's options are the pair's own objects ("Which is
larger, an ant or a bird?" -> "An ant" / "A bird"), so a model that ranks the names alone, whatever
it is asked, answers every pair in both orders consistently: 100 % symmetry and transitivity
with no knowledge at all. After lm-eval's ``acc_mutual_info`` (each option's log-likelihood
given the context minus given none), the run also scores each item's options as the reply to an
empty user turn (:data:`PROMPT`, no image) and reports, beside the model's own figures, the
question-free model's accuracy, symmetry and transitivity and how often the two choose alike; it
warns where every choice is the question-free one (:func:`warning`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PROMPT = ""
"""The user's turn without the question (and without an image): the options scored as its reply."""
CONDITION = "question-free"
"""The cache key prefix and row condition of the question-free scores."""
PRED = "pred_question_free"
"""The row field of the question-free choice."""


def details(rows: Sequence[Mapping[str, Any]], first_label: str) -> dict[str, Any]:
    """The model's and the question-free model's symmetry and transitivity (within folds,
    pooled: :func:`spatialprobe.metrics.consistency.consistency`) and the share of rows where
    both chose alike (percent)."""
    from spatialprobe.metrics.consistency import consistency

    free = [{**row, "pred": row[PRED]} for row in rows]
    same = sum(row["pred"] == row[PRED] for row in rows)
    out: dict[str, Any] = {"prompt": PROMPT, "agreement": 100.0 * same / len(rows) if rows else None,
                           "same": same, "n": len(rows)}
    for who, part in (("model", rows), ("question_free", free)):
        measured = consistency(part, first_label)
        out[who] = {k: measured[k] for k in ("symmetry", "transitivity", "symmetry_pairs", "transitivity_triples")}
    return out


def warning(found: Mapping[str, Any] | None) -> str | None:
    """One sentence where every choice of the model is its question-free choice, else None."""
    if not found or not found.get("n") or found["same"] < found["n"]:
        return None
    return (f"the model chose the same option without the question on all {found['n']:,} items: its choices "
            "do not depend on the question (a fixed ranking of the options' names), so its accuracy, symmetry "
            "and transitivity measure that ranking, not spatial knowledge.")


def table_lines(found: Mapping[str, Any] | None, accuracy: Mapping[str, Any] | None) -> list[str]:
    """table.md rows: the question-free accuracy, the two models' consistency, their agreement."""
    from spatialprobe.reports.tables import pm

    if not found:
        return []

    def share(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f} %"

    model, free = found["model"], found["question_free"]
    return [f"| accuracy (question-free: options scored without the question) | "
            f"{pm(accuracy) if accuracy else '–'} |",
            f"| symmetry: model / question-free | {share(model['symmetry'])} / {share(free['symmetry'])} |",
            f"| transitivity: model / question-free | {share(model['transitivity'])} / "
            f"{share(free['transitivity'])} |",
            f"| same choice with and without the question | {share(found['agreement'])} |"]
