"""The VQA judge's blind floor and its contrast questions.

A judge that asks only the claim a prompt makes ("Is the man above the bus?") scores 100 if it
says yes to everything, and it can score well from the question's wording alone. Two additions,
each asked of the same judge beside the judged score:

* **Blind floor** (``floor``): every claim asked again with a blank (mid-gray) image of the same
  size and with no image at all. ``accuracy_blank`` / ``accuracy_none`` (claims affirmed) and
  ``soft_tifa_blank`` / ``soft_tifa_none`` are what the judge gives without seeing anything: its
  prior. A judged score near its floor measures the judge's wording bias, not the image.
* **Contrast question** (``contrast``): every image also asked the opposite claim (the opposite
  relation, :data:`OPPOSITE`: above ↔ below, left ↔ right, in front of ↔ behind, larger ↔ smaller,
  taller ↔ shorter; posrel's exclusive inside ↔ beside). ``contrast_accuracy`` scores each image
  50 for affirming the claim plus 50 for denying the contrast, so a judge that answers yes to
  everything scores exactly 50 (chance), one that sees scores 100; ``contrast_soft_tifa`` is
  50·(P(yes | claim) + P(no | contrast)). A claim without an opposite is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling

OPPOSITE = {"above": "below", "below": "above", "to the left of": "to the right of",
            "to the right of": "to the left of", "in front of": "behind", "behind": "in front of",
            "larger": "smaller", "smaller": "larger", "taller": "shorter", "shorter": "taller",
            "inside": "beside", "beside": "inside"}
"""The contrast claim of each relation: one that cannot hold with it."""
BLIND = ("blank", "none")


def variants(floor: bool | None, contrast: bool | None) -> tuple[str, ...]:
    """The extra askings of every image: ``blank`` and ``none`` (the floor), ``contrast``."""
    return (*(BLIND if floor else ()), *(("contrast",) if contrast else ()))


def check_contrast(labels: Sequence[str]) -> None:
    """Refuse, in one sentence, claims that have no opposite to ask."""
    missing = sorted({label for label in labels if label not in OPPOSITE})
    if missing:
        raise UsageError(f"--contrast asks each claim's opposite relation, and {', '.join(map(repr, missing))} "
                         f"has none (those that do: {', '.join(OPPOSITE)}).")


def image_for(variant: str, path: Any) -> Any:
    """The image a variant shows: a blank one of the image's size, none, or the image itself."""
    if variant == "none":
        return None
    if variant == "blank":
        from spatialprobe.vision import blank_image, open_image

        size = open_image(path).size
        return blank_image(size[0]).resize(size)
    return path


def fields(variant: str, result: Mapping[str, Any], claim: Mapping[str, Any]) -> dict[str, Any]:
    """The row fields of one extra asking (``claim``: the main answer's result)."""
    affirmed = result["answer"] == "yes"
    if variant != "contrast":
        return {f"{variant}_answer": result["answer"], f"{variant}_correct": affirmed,
                f"{variant}_soft_score": 100.0 * result["yes_probability"]}
    return {"contrast_question": result["question"], "contrast_answer": result["answer"],
            "contrast_yes_probability": result["yes_probability"],
            "contrast_score": 50.0 * (claim["answer"] == "yes") + 50.0 * (not affirmed),
            "contrast_soft_score": 50.0 * (claim["yes_probability"] + 1.0 - result["yes_probability"])}


def resamplings(base: Resampling, asked: Sequence[str]) -> tuple[Resampling, ...]:
    """The metrics of the extra askings, resampled as the judged score."""
    out = []
    for variant in asked:
        if variant == "contrast":
            out += [replace(base, pred="contrast_score", metrics={"contrast_accuracy": "mean"}),
                    replace(base, pred="contrast_soft_score", metrics={"contrast_soft_tifa": "mean"})]
        else:
            out += [replace(base, pred=f"{variant}_correct", metrics={f"accuracy_{variant}": "share"}),
                    replace(base, pred=f"{variant}_soft_score", metrics={f"soft_tifa_{variant}": "mean"})]
    return tuple(out)


def table_lines(metrics: Mapping[str, Any]) -> str:
    """The floor and contrast lines of the judge's table (empty where neither was asked)."""
    from spatialprobe.reports.tables import pm

    lines = [f"| {name} | {pm(metrics[key])} | {pm(metrics[soft])} |" for name, key, soft in (
        ("judged (the image)", "accuracy", "soft_tifa"), ("blind floor: blank image", "accuracy_blank",
                                                          "soft_tifa_blank"),
        ("blind floor: no image", "accuracy_none", "soft_tifa_none"),
        ("with contrast questions (a yes-sayer: 50)", "contrast_accuracy", "contrast_soft_tifa"))
        if key in metrics and key != "accuracy"]
    if not lines:
        return ""
    head = ["", "| the same judge | claims affirmed / contrast (hard, %) | Soft-TIFA (%) |", "|---|---:|---:|",
            f"| judged (the image) | {pm(metrics['accuracy'])} | {pm(metrics['soft_tifa'])} |"]
    return "\n".join(head + lines) + "\n"
