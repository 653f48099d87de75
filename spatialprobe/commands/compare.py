"""``spatialprobe compare RUN...`` (many models on the same items) and ``spatialprobe plan RUN``
(the difference a benchmark can detect, or the items a difference needs)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import typer


def compare(
    runs: list[Path] = typer.Argument(..., help="Finished run folders on the same items (native or imported)."),
    out: Path | None = typer.Option(None, "--out", help="Folder for compare.json, table.md and ranks.png "
                                    "\\[default: runs/compare-HASH8 of the runs' identities]."),
    plot: Path | None = typer.Option(None, "--plot", help="Write the scores-with-intervals plot here "
                                     "\\[default: OUT/ranks.png]."),
    reported: float | None = typer.Option(None, "--reported", help="A published score (in points): say "
                                          "whether it lies in each run's 95 % interval and by how much it misses."),
    resamples: int = typer.Option(2000, "--resamples", min=100, help="Joint cluster resamples of the rank intervals."),
    seed: int = typer.Option(0, "--seed", help="Seed of the rank intervals' resamples."),
) -> None:
    """Every model's score with its clustered interval; for every pair the paired difference, its
    interval and p (as `report A B`), the exact McNemar p, Holm and Benjamini-Hochberg adjusted p;
    rank intervals and groups of models not told apart; a plot in rank order. Runs on different
    items, benchmarks or conditions are refused, naming what differs."""
    from spatialprobe.commands.output_checks import require_out_dir, require_out_file
    from spatialprobe.reports.compare import compare as compare_runs
    from spatialprobe.reports.compare import compare_table, write_compare
    from spatialprobe.reports.tables import print_table

    require_out_dir(out)
    require_out_file(plot, "--plot")
    result = compare_runs(runs, resamples, seed, reported)
    ids = "".join(str(r["identity"] or r["path"]) for r in result["provenance"]["runs"])
    folder = out or Path("runs") / f"compare-{hashlib.sha256(ids.encode()).hexdigest()[:8]}"
    written = write_compare(result, folder, plot)
    print_table(compare_table(result))
    typer.echo(f"wrote {folder} ({', '.join(written)})")


def plan(
    runs: list[Path] = typer.Argument(..., help="A pilot run (with --discordance), or two runs of the same items."),
    diff: float | None = typer.Option(None, "--diff", help="A paired difference in points: the items it needs."),
    items: int | None = typer.Option(None, "--items", min=2, help="Items: the smallest paired difference they "
                                     "detect \\[default: the pilot's rows]."),
    discordance: float | None = typer.Option(None, "--discordance", help="With one run: the share of items (0-1) "
                                             "exactly one of the two models gets right, assumed."),
    alpha: float = typer.Option(0.05, "--alpha", min=1e-6, max=0.5, help="Two-sided level of the test."),
    power: float = typer.Option(0.8, "--power", min=0.5, max=0.9999, help="Power wanted."),
) -> None:
    """The minimum detectable paired difference (or the items a difference needs) on a benchmark,
    from a pilot's discordance and cluster design effect (Connor 1987, times the design effect)."""
    from spatialprobe.reports.plan import plan as plan_items
    from spatialprobe.reports.plan import plan_text

    typer.echo(plan_text(plan_items(runs, diff, items, discordance, alpha, power)).rstrip("\n"))


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
    app.command("plan")(plan)
