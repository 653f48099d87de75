"""``spatialprobe annotate export|import``: human evaluation of generated images (ISM (Human))."""

from __future__ import annotations

from pathlib import Path

import typer

annotate_app = typer.Typer(help="Human evaluation of generated images: ISM (Human).",
                           no_args_is_help=True)


@annotate_app.command("export")
def export(
    run: Path = typer.Argument(..., help="Image run directory."),
    out: Path = typer.Option(..., "--out", help="HTML page to write."),
    task: str | None = typer.Option(None, "--task", help="Task whose images to ask about."),
) -> None:
    """Write a self-contained annotation page: one image at a time, keyboard answers, saved to JSON."""
    from ..reports.annotation import export_page
    from .judge import require_image_run, user_errors

    require_image_run(run)
    with user_errors():
        typer.echo(f"wrote {export_page(run, out, task)}")


@annotate_app.command("import")
def import_(
    run: Path = typer.Argument(..., help="Image run directory the page was exported from."),
    answers: list[Path] = typer.Argument(..., help="Answer files saved from the page, one per annotator."),
    out: Path | None = typer.Option(None, "--out", help="Result run directory [RUN/human/TASK]."),
    task: str | None = typer.Option(None, "--task", help="Task of the exported page."),
    seed: int = typer.Option(0, "--seed", help="Seed of the guesses for unanswered items."),
) -> None:
    """ISM (Human) per annotator, Cohen's kappa between annotators, and the mean over annotators."""
    from rich.console import Console

    from ..reports.annotation import annotation_items, import_answers
    from .judge import require_image_run, user_errors

    require_image_run(run)
    with user_errors():
        task = task or annotation_items(run, None)[0]
        out = out or run / "human" / task
        summary = import_answers(run, answers, out, task=task, seed=seed)
    Console().print((out / "table.md").read_text(encoding="utf-8"))
    typer.echo(f"wrote {out} (mean accuracy {summary['accuracy']['mean']:.1f}%)")


def register(app: typer.Typer) -> None:
    app.add_typer(annotate_app, name="annotate")
