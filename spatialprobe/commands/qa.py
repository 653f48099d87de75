"""``spatialprobe qa ...``: build, export and answer yes/no spatial questions."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from spatialprobe.commands.declared import command_group
from spatialprobe.commands.engine_options import ask_and_print, ask_options
from spatialprobe.commands.hub import hub_model_options
from spatialprobe.commands.output_checks import require_out_file, require_run_dir
from spatialprobe.commands.scale_options import scale_options
from spatialprobe.errors import UsageError

if TYPE_CHECKING:
    from spatialprobe.engine.build import AskOptions

qa_app = command_group("Yes/no spatial question answering from text or from synthesized images.")

TASK_HELP = "size, height or posrel (built-in dataset; with --data, the file's task)."
DATA_HELP = "A QA file (e.g. the release's posrel_qa.jsonl) or a dataset file to build questions from."


def _questions(task: str | None, data: Path | None):
    from spatialprobe.files import DataError
    from spatialprobe.tasks.yes_no import questions_for

    try:
        return questions_for(task, data)
    except (DataError, ValueError) as err:
        raise UsageError(str(err)) from None


def _default_out(mode: str, what: str, model: str):
    """The default run folder, ``runs/ask-qa-MODE-WHAT-MODEL-ID``; WHAT names the questions' source."""
    from spatialprobe.runner.folders import DefaultRunDir

    return DefaultRunDir(f"qa-{mode}", what, model)


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
        raise UsageError(str(err)) from None


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
    from spatialprobe.files import write_jsonl
    from spatialprobe.tasks.yes_no import to_qa_records

    require_out_file(out)
    qa, label = _questions(task, data)
    write_jsonl(out, to_qa_records(qa))
    yes = sum(item.answer == "yes" for item in qa.items)
    typer.echo(f"wrote {len(qa)} {qa.task} questions ({yes} yes, {len(qa) - yes} no) from {label} to {out}")


@qa_app.command("text")
@scale_options
@hub_model_options
@ask_options("scorer_arg", "protocol", "max_new_tokens", "device_map", "max_memory", "backend", "base_url",
             "api_key_env", "items", "samples", "temperature")
def text(
    model: str = typer.Option(..., "--model", help="T5/UnifiedQA checkpoint or a multimodal LLM: id or directory."),
    task: str | None = typer.Option(None, help=TASK_HELP),
    data: Path | None = typer.Option(None, help=DATA_HELP),
    out: Path | None = typer.Option(None, "--out", help="Run directory \\[default: runs/ask-qa-text-SOURCE-MODEL-ID]."),
    device: str = typer.Option("auto", help="auto, cpu or cuda (bfloat16 on cuda where supported)."),
    batch_size: int = typer.Option(16, min=1, help="Questions per forward pass."),
    context: bool = typer.Option(True, help="= --scorer-arg use_context=...: give the scenario as "
                                 "UnifiedQA context."),
    *,
    asked: AskOptions,
) -> None:
    """Answer the questions from text: a QA reader scores yes vs no (T5 by decoder likelihood), a
    multimodal LLM is asked them as text (either protocol)."""
    from spatialprobe.benchmarks.qa import qa_source

    require_run_dir(out)
    source, _ = qa_source(task, None if data is None else str(data.resolve()))
    given = replace(asked, condition="none", device=device, batch_size=batch_size,
                    scorer_args={**({} if context else {"use_context": "false"}), **asked.scorer_args})
    passages = [w.passage for w in (item.wording("short") for item in source.items) if w is not None]
    if not context and not any(passages):
        raise UsageError(f"--no-context applies to questions with a scenario; the {source.dataset} questions "
                         "have none.")
    target = out or _default_out("text", _source_name(source.task, data), model)
    ask_and_print(source, model, given, target, f"qa text {source.task}", "qa text")


@qa_app.command("image")
@scale_options
@hub_model_options
@ask_options("protocol", "image_condition", "blind", "max_new_tokens", "scorer_arg", "seed", "device_map",
             "max_memory", "backend", "base_url", "api_key_env", "samples", "temperature")
def image(
    images: Path = typer.Option(..., "--images", help="Synthesis run directory (image store)."),
    model: str = typer.Option(..., "--model", help="VQA checkpoint (ViLT or BLIP) or a multimodal LLM: "
                              "id or directory."),
    task: str | None = typer.Option(
        None, help=TASK_HELP + " \\[default: the questions of the instances the images were made for]."),
    data: Path | None = typer.Option(None, help=DATA_HELP),
    out: Path | None = typer.Option(None, "--out", help="Run directory "
                                    "\\[default: runs/ask-qa-image-SOURCE-MODEL-ID]."),
    full_vocab: bool = typer.Option(False, help="= --protocol generate: the answer is the model's own "
                                    "(a VQA classifier's argmax class), not the better of yes/no."),
    device: str = typer.Option("auto", help="auto, cpu or cuda (float16 on cuda)."),
    batch_size: int = typer.Option(8, min=1, help="Images per forward pass."),
    partial: bool = typer.Option(False, "--partial", help="Read an unfinished image run (recorded)."),
    *,
    asked: AskOptions,
) -> None:
    """Answer each question from every image synthesized for its scenario, voted over (a VQA
    classifier, or a multimodal LLM by either protocol, with the blind conditions beside it)."""
    from spatialprobe.benchmarks.qa import qa_source

    if not (images / "run.sqlite").exists():
        raise UsageError(f"{images} is not a synthesis run (no run.sqlite).")
    if full_vocab and asked.protocol not in (None, "generate"):
        raise UsageError(f"--full-vocab answers by generation; it does not apply with --protocol {asked.protocol}.")
    require_run_dir(out)
    source, _ = qa_source(task, None if data is None else str(data.resolve()), str(images), partial)
    given = replace(asked, device=device, batch_size=batch_size, protocol="generate" if full_vocab else asked.protocol)
    target = out or _default_out("image", _source_name(source.task, data, images), model)
    summary = ask_and_print(source, model, given, target, f"qa image {source.task}", "qa image")
    cover = summary["details"]["coverage"]
    if cover["used"] < cover["total"]:
        typer.secho(f"{cover['total'] - cover['used']:,} of {cover['total']:,} questions have no image of their "
                    "scenario; left out.", fg=typer.colors.YELLOW, err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(qa_app, name="qa")
