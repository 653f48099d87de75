"""Plots of ``judge compare`` (matplotlib, headless, in the style of :mod:`.plots`): the pairwise
agreement and Cohen's kappa of each image run's judges as heatmaps (``agreement.png``), and,
given several models, each model's score under each judge as lines (``ranking.png``). Each figure
carries a caption saying what produced it."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.files import atomic_path


def caption(summary: Mapping[str, Any]) -> str:
    info, r = summary["provenance"], summary["details"]["resampling"]
    return (f"{info.get('toolkit')} {info.get('toolkit_version')} · judge compare {summary['identity'][:12]} · "
            f"compared on the {summary['details']['on']} · {r['resamples']} resamples, seed {r['seed']}")


def _matrix(group: Mapping[str, Any], what: str) -> list[list[float]]:
    judges = group["judges"]
    full = 100.0 if what == "agreement" else 1.0
    out = [[full if a == b else float("nan") for b in judges] for a in judges]
    for pair, entry in group[what].items():
        a, b = (judges.index(n) for n in pair.split(" | "))
        value = entry.get("value")
        out[a][b] = out[b][a] = float("nan") if value is None else value
    return out


def _save(fig: Any, out: Path, text: str) -> str:
    import matplotlib.pyplot as plt

    fig.text(0.01, 0.01, text, fontsize=6, color="dimgrey")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=120)
    plt.close(fig)
    return out.name


def agreement_heatmaps(groups: Sequence[Mapping[str, Any]], out: Path, text: str) -> str:
    """One row per image run: agreement (%) and kappa between every two judges (grey: undefined)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    side = max(4.0, 0.55 * max(len(g["judges"]) for g in groups) + 2.4)
    fig, axes = plt.subplots(len(groups), 2, figsize=(2 * side, side * len(groups)), squeeze=False)
    for row, group in zip(axes, groups, strict=True):
        for ax, what, bounds in ((row[0], "agreement", (0, 100)), (row[1], "kappa", (-1, 1))):
            values = np.array(_matrix(group, what), dtype=float)
            image = ax.imshow(np.ma.masked_invalid(values), vmin=bounds[0], vmax=bounds[1],
                              cmap=plt.get_cmap("viridis").with_extremes(bad="lightgrey"))
            ticks = range(len(group["judges"]))
            ax.set_xticks(ticks, group["judges"], rotation=45, ha="right", fontsize=7)
            ax.set_yticks(ticks, group["judges"], fontsize=7)
            for (i, j), v in np.ndenumerate(values):
                ax.text(j, i, "n/a" if np.isnan(v) else (f"{v:.0f}" if what == "agreement" else f"{v:.2f}"),
                        ha="center", va="center", fontsize=7,
                        color="white" if v < bounds[0] + (bounds[1] - bounds[0]) / 2 else "black")
            name = textwrap.fill(group["model"], 50)
            ax.set_title(f"{name}\n{'agreement (%)' if what == 'agreement' else 'Cohen’s κ'}", fontsize=8)
            fig.colorbar(image, ax=ax, fraction=0.046)
    return _save(fig, out, text)


def ranking_lines(summary: Mapping[str, Any], out: Path, text: str) -> str:
    """Each model's score under each judge: crossing lines are a ranking that changes with the judge."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranked, groups = summary["details"]["ranking"], summary["details"]["groups"]
    judges = list(ranked["scores"])
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(judges) + 2), 3.8))
    for g, group in enumerate(groups):
        xs = [n for n, j in enumerate(judges) if str(g) in ranked["scores"][j]]
        ax.plot(xs, [ranked["scores"][judges[n]][str(g)] for n in xs], marker="o", label=group["model"])
    ax.set_xticks(range(len(judges)), judges, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("score (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Models' scores under each judge", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    return _save(fig, out, text)


def write_plots(folder: Path, summary: Mapping[str, Any]) -> list[str]:
    """The comparison's figures in ``folder``; returns the file names written."""
    text = caption(summary)
    names = [agreement_heatmaps(summary["details"]["groups"], Path(folder) / "agreement.png", text)]
    if summary["details"].get("ranking"):
        names.append(ranking_lines(summary, Path(folder) / "ranking.png", text))
    return names
