"""Plots (matplotlib, headless)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from spatialprobe.files import atomic_path


def object_bias_chart(objects: Mapping[str, Mapping[str, float | None]], order: Sequence[str], out: Path,
                      title: str = "", first_label: str = "larger", caption: str = "") -> str:
    """Per object: share of "object {first_label} than others" (object first) and of
    "others {first_label} than object" (object second). Returns the file name written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(order)
    first = [objects[o]["object_larger"] or 0.0 for o in names]
    second = [objects[o]["others_larger"] or 0.0 for o in names]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(6, 0.42 * len(names)), 3.6))
    ax.bar(x - 0.2, first, 0.4, label=f"object {first_label} than others (object first)")
    ax.bar(x + 0.2, second, 0.4, label=f"others {first_label} than object (object second)")
    ax.axhline(50, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(x, names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("% of predictions")
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    if caption:  # what produced the figure travels with it
        fig.text(0.01, 0.01, caption, fontsize=6, color="dimgrey")
    fig.tight_layout(rect=(0, 0.04 if caption else 0, 1, 1))
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=120)
    plt.close(fig)
    return Path(out).name
