"""``spatialprobe qa ...``: build, export and answer yes/no spatial questions."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from spatialprobe.commands.errors import fail, require_out_file, require_run_dir
from spatialprobe.commands.hub import hub_model_options
from spatialprobe.errors import SpatialprobeError

qa_app = typer.Typer(help="Yes/no spatial question answering from text or from synthesized images.",
                     no_args_is_help=True)

TASK_HELP = "size, height or posrel (built-in dataset; with --data, the file's task)."
DATA_HELP = "A QA file (e.g. the release's posrel_qa.jsonl) or a dataset file to build questions from."


def _questions(task: str | None, data: Path | None):
    from spatialprobe.datasets.qa import questions_for
    from spatialprobe.files import DataError

    try:
        return questions_for(task, data)
    except (DataError, ValueError) as err:
        fail(err)


def _default_out(mode: str, what: str, model: str):
    """The default run folder, ``runs/qa-MODE-WHAT-MODEL-ID``; WHAT names the questions' source."""
    from spatialprobe.runner.folders import DefaultRunDir

    return DefaultRunDir(mode, what, model)


def _source_name(task: str | None, data: Path | None, images: Path | None = None) -> str:
    parts = [data.stem if data is not None else (task or "")]
    if images is not None:
        parts.append(Path(str(images).rstrip("/")).name)
    return "-".join(p for p in parts if p) or "qa"


def _run_or_exit(run, *args, **kwargs):
    """Call a run function; a refused resume or bad input becomes one error line."""
    try:
        return run(*args, **kwargs)
    except ValueError as err:
        fail(err)


def _print_summary(summary: dict, out) -> None:
    acc, f1 = summary["accuracy"]["mean"], summary["macro_f1"]["mean"]
    figures = "no question had an image" if acc is None else f"accuracy {acc:.1f}, macro-F1 {f1:.1f}"
    typer.echo(f"{summary['task']}: {figures} on {summary['accuracy']['n']} of "
               f"{summary['details']['n_questions']} questions -> {os.fspath(out)}")


def _progress_bar(what: str):
    """A rich bar fed by the run spine's progress(done, total)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                   TimeRemainingColumn())
    task = bar.add_task(what, total=None)
    return bar, (lambda done, total: bar.update(task, completed=done, total=total))


def _source(task: str | None, data: Path | None) -> dict:
    """Where the questions come from, as the run's config records it (for replay)."""
    return {"task": task, "data": None if data is None else str(data.resolve())}


@qa_app.command("export")
def export(
    task: str | None = typer.Option(None, help=TASK_HELP),
    data: Path | None = typer.Option(None, help=DATA_HELP),
    out: Path = typer.Option(..., "--out", help="JSON lines file (release posrel_qa format + our fields)."),
) -> None:
    """Write the balanced yes/no question set of a dataset."""
    from spatialprobe.datasets.qa import to_qa_records
    from spatialprobe.files import write_jsonl

    require_out_file(out)
    qa, label = _questions(task, data)
    write_jsonl(out, to_qa_records(qa))
    yes = sum(item.answer == "yes" for item in qa.items)
    typer.echo(f"wrote {len(qa)} {qa.task} questions ({yes} yes, {len(qa) - yes} no) from {label} to {out}")


@qa_app.command("text")
@hub_model_options
def text(
    model: str = typer.Option(..., "--model", help="T5/UnifiedQA checkpoint: Hugging Face id or directory."),
    task: str | None = typer.Option(None, help=TASK_HELP),
    data: Path | None = typer.Option(None, help=DATA_HELP),
    out: Path | None = typer.Option(None, "--out", help="Run directory [runs/qa-text-SOURCE-MODEL-ID]."),
    device: str = typer.Option("auto", help="auto, cpu or cuda (bfloat16 on cuda where supported)."),
    batch_size: int = typer.Option(16, min=1, help="Questions per forward pass."),
    context: bool = typer.Option(True, help="= --scorer-arg use_context=...: give the scenario as "
                                 "UnifiedQA context."),
    scorer_arg: list[str] = typer.Option([], "--scorer-arg", help="KEY=VALUE: an option of the t5 model "
                                         "(use_context, lowercase; spatialprobe ls); repeatable."),
) -> None:
    """Answer the questions with a text QA model (yes vs no by decoder likelihood)."""
    from spatialprobe.benchmarks.qa import run_text_qa
    from spatialprobe.scorers import options

    try:
        given = options.resolve("t5", {**({} if context else {"use_context": False}),
                                       **options.parse_pairs(scorer_arg)})
    except ValueError as err:
        fail(err)
    qa, label = _questions(task, data)
    if not given["use_context"] and not any(item.context for item in qa.items):
        fail(f"--no-context applies to questions with a scenario; the {label} questions have none.")
    require_run_dir(out)
    target = out or _default_out("text", _source_name(qa.task, data), model)
    try:
        answerer = options.build("t5", model, given, device=device, batch_size=batch_size)
    except (SpatialprobeError, ValueError) as err:
        fail(err)
    bar, advance = _progress_bar(f"qa text {qa.task}")
    with bar:
        summary = _run_or_exit(run_text_qa, qa, answerer, target, dataset=label,
                               batch_size=batch_size, progress=advance, source=_source(task, data))
    _print_summary(summary, target)


@qa_app.command("image")
@hub_model_options
def image(
    images: Path = typer.Option(..., "--images", help="Synthesis run directory (image store)."),
    model: str = typer.Option(..., "--model", help="VQA checkpoint (ViLT or BLIP): id or directory."),
    task: str | None = typer.Option(
        None, help=TASK_HELP + " Default: the questions of the instances the images were made for."),
    data: Path | None = typer.Option(None, help=DATA_HELP),
    out: Path | None = typer.Option(None, "--out", help="Run directory [runs/qa-image-SOURCE-MODEL-ID]."),
    full_vocab: bool = typer.Option(False, help="Argmax over the full answer vocabulary, not yes/no."),
    device: str = typer.Option("auto", help="auto, cpu or cuda (float16 on cuda)."),
    batch_size: int = typer.Option(8, min=1, help="Images per forward pass."),
    partial: bool = typer.Option(False, "--partial", help="Read an unfinished image run (recorded)."),
) -> None:
    """Answer each question from the image synthesized for its scenario."""
    from spatialprobe.benchmarks.qa import questions_from_images, run_image_qa
    from spatialprobe.benchmarks.qa_models import load_vqa
    from spatialprobe.imagestore import open_image_run

    if not (images / "run.sqlite").exists():
        fail(f"{images} is not a synthesis run (no run.sqlite).")
    store, image_run = _run_or_exit(open_image_run, images, partial=partial)
    if task is None and data is None:
        # The run's own prompts are the dataset instances it drew: ask about exactly those.
        qa, label = _run_or_exit(questions_from_images, store)
        source: dict = {"images": True}
    else:
        qa, label = _questions(task, data)
        source = _source(task, data)
    require_run_dir(out)
    target = out or _default_out("image", _source_name(qa.task, data, images), model)
    try:
        answerer = load_vqa(model, device=device)
    except (SpatialprobeError, ValueError) as err:
        fail(err)
    bar, advance = _progress_bar(f"qa image {qa.task}")
    with bar:
        summary = _run_or_exit(run_image_qa, qa, store, answerer, target, dataset=label,
                               full_vocab=full_vocab, batch_size=batch_size, progress=advance,
                               source=source, image_run=image_run)
    from spatialprobe.commands.judge import warn_skipped

    warn_skipped(summary["details"], "answered from")
    _print_summary(summary, target)


def register(app: typer.Typer) -> None:
    app.add_typer(qa_app, name="qa")
