"""``spatialprobe annotate export|import``: human evaluation of generated images (ISM (Human))."""

from __future__ import annotations

from pathlib import Path

import typer

from spatialprobe.commands.console import warn
from spatialprobe.commands.declared import command_group
from spatialprobe.commands.image_runs import PARTIAL, SKIP_MISSING, require_image_run, warn_skipped
from spatialprobe.commands.output_checks import require_out_file, require_run_dir

annotate_app = command_group("Human evaluation of generated images: ISM (Human).")


@annotate_app.command("export")
def export(
    run: Path = typer.Argument(..., help="Image run directory."),
    out: Path = typer.Option(..., "--out", help="HTML page to write."),
    task: str | None = typer.Option(None, "--task", help="Task whose images to ask about."),
    partial: bool = PARTIAL,
    skip_missing: bool = SKIP_MISSING,
) -> None:
    """Write a self-contained annotation page: one image at a time, keyboard answers, saved to JSON."""
    from spatialprobe.judging.annotation_page import export_page

    require_image_run(run)
    require_out_file(out)
    page = export_page(run, out, task, partial=partial, skip_missing=skip_missing)
    warn_skipped({"missing_images": page.missing, "image_run": page.completeness.to_dict()}, "asked about")
    typer.echo(f"wrote {out} ({len(page.items)} images)")


@annotate_app.command("import")
def import_(
    run: Path = typer.Argument(..., help="Image run directory the page was exported from."),
    answers: list[Path] = typer.Argument(..., help="Answer files saved from the page, one per annotator."),
    out: Path | None = typer.Option(None, "--out", help="Result run directory \\[default: runs/human-TASK-ID]."),
    task: str | None = typer.Option(None, "--task", help="Task of the exported page."),
    seed: int = typer.Option(0, "--seed", help="Seed of the guesses for unanswered items."),
    partial: bool = PARTIAL,
    min_answered: float | None = typer.Option(
        None, "--min-answered", min=0.0, max=1.0, help="Share of the page's items each answers file must "
        "answer (an option or 'cannot tell'); a file below it is refused [0.9]."),
) -> None:
    """ISM (Human) per annotator, Cohen's kappa between annotators, and the mean over annotators."""
    from spatialprobe.judging.annotation_page import annotation_items
    from spatialprobe.judging.human import import_answers
    from spatialprobe.reports.tables import print_table
    from spatialprobe.runner.folders import DefaultRunDir

    require_image_run(run)
    require_run_dir(out)
    task = task or annotation_items(run, None, partial=partial, with_files=False)[0]
    target = out or DefaultRunDir(task)
    summary = import_answers(run, answers, target, task=task, seed=seed, partial=partial,
                             min_answered=min_answered)
    out = Path(target)
    for name, ignored in summary["details"]["ignored_answers"].items():
        warn(ignored_answers_note(name, ignored))
    warn_skipped(summary["details"], "scored")
    print_table((out / "table.md").read_text(encoding="utf-8"))
    typer.echo(f"wrote {out} (mean accuracy {summary['accuracy']['mean']:.1f}%)")


def ignored_answers_note(name: str, ignored: dict) -> str:
    parts = []
    if ignored["unknown_ids"]:
        parts.append(f"{ignored['unknown_ids']} answer(s) to item ids not on the page (e.g. "
                     f"{', '.join(map(repr, ignored['first_unknown_ids']))})")
    if ignored["non_string"]:
        parts.append(f"{ignored['non_string']} answer(s) that are not text (e.g. "
                     f"{', '.join(map(repr, ignored['first_non_string_ids']))})")
    if ignored.get("unmatched"):
        parts.append(f"{ignored['unmatched']} answer(s) that are none of the options (e.g. "
                     f"{', '.join(map(repr, ignored['first_unmatched']))})")
    return (f"{ignored['file']} ({name}): ignored " + " and ".join(parts)
            + "; counted as unanswered (recorded in summary.json).")


def register(app: typer.Typer) -> None:
    app.add_typer(annotate_app, name="annotate")
