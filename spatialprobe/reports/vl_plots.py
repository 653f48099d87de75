"""Bar plots of accuracy by group (relation, category, question type) for VL evaluations."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from spatialprobe.files import atomic_path


def accuracy_bars(panels: Mapping[str, Mapping[str, Mapping[str, float]]], path: str | Path,
                  title: str, chance: float | None = 50.0) -> Path:
    """One horizontal bar panel per entry of ``panels`` ({panel: {group: {"accuracy", "n"}}})."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heights = [max(2.0, 0.22 * len(groups) + 1.0) for groups in panels.values()]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (name, groups) in zip(axes[:, 0], panels.items(), strict=True):
        ordered = sorted(groups.items(), key=lambda kv: kv[1]["accuracy"])
        labels = [f"{g} (n={v['n']})" for g, v in ordered]
        ax.barh(labels, [v["accuracy"] for _, v in ordered], color="#4c72b0")
        if chance is not None:
            ax.axvline(chance, color="gray", linestyle="--", linewidth=1)
        ax.set_xlim(0, 100)
        ax.set_xlabel("accuracy (%)")
        ax.set_title(name)
        ax.tick_params(axis="y", labelsize=7)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 1, 0.97))  # leave room for the title
    path = Path(path)
    with atomic_path(path) as tmp:  # creates the folder too
        fig.savefig(tmp, dpi=120)
    plt.close(fig)
    return path
