"""``spatialprobe judge compare RUN...``: judgements of the same images side by side."""

from __future__ import annotations

from pathlib import Path

import typer

from spatialprobe.commands.output_checks import require_run_dir


def compare(
    runs: list[Path] = typer.Argument(..., help="Finished judgement run folders (judge, vqa-judge, visor, "
                                      "human from `annotate import`), of one or more image runs."),
    out: Path | None = typer.Option(None, "--out", help="Run directory \\[default: runs/judge-compare-IDENTITY8]."),
    on: str = typer.Option("verdict", "--on", help="What judges agree on: verdict (does the image show the "
                           "relation asked?) or label (the relation read; not with VISOR runs)."),
    unrecognized: str = typer.Option("guess", "--unrecognized", help="An image a judge did not recognize: "
                                     "guess (its seeded guess counts, as in its score) or exclude (compare "
                                     "on the images every judge recognized)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap resamples."),
    resamples: int = typer.Option(1000, "--resamples", min=100, help="Bootstrap resamples of the images."),
) -> None:
    """Each judge's score, pairwise agreement and Cohen's kappa, accuracy against people per
    relation, and (several models' images) the models' ranking under each judge with Kendall's
    tau; all with 95 % intervals resampled by image. Writes table.md, compare.json and plots."""
    from spatialprobe.judging.judge_compare import CompareSettings, JudgeCompareRun, JudgementRef
    from spatialprobe.reports.tables import print_table
    from spatialprobe.runner import execute
    from spatialprobe.runner.folders import DefaultRunDir

    require_run_dir(out)
    target = out or DefaultRunDir()
    settings = CompareSettings([JudgementRef(str(run)) for run in runs], on, unrecognized, seed, resamples)
    execute(JudgeCompareRun(settings), target)
    folder = Path(target)
    print_table((folder / "table.md").read_text(encoding="utf-8"))
    typer.echo(f"wrote {folder} (table.md, compare.json, agreement.png"
               + (", ranking.png" if (folder / "ranking.png").exists() else "") + ")")
