"""``spatialprobe qa ...``: build, export and answer yes/no spatial questions."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from spatialprobe.commands.ask import (
    BlindOption,
    ImageConditionOption,
    MaxNewTokensOption,
    ProtocolOption,
    ScorerArgOption,
    SeedOption,
)
from spatialprobe.commands.errors import fail, refusals, require_out_file, require_run_dir
from spatialprobe.commands.hub import hub_model_options
from spatialprobe.commands.model_options import (
    DeviceMapOption,
    MaxMemoryOption,
    device_map_settings,
    refuse_device_map,
)
from spatialprobe.commands.scale_options import scale_options
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
@scale_options
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
    protocol: str | None = ProtocolOption,
    max_new_tokens: int | None = MaxNewTokensOption,
    device_map: str | None = DeviceMapOption,
    max_memory: list[str] = MaxMemoryOption,
) -> None:
    """Answer the questions with a text QA model (yes vs no by decoder likelihood), or a
    multimodal LLM asked them as text (either protocol)."""
    from spatialprobe.benchmarks.qa import run_text_qa
    from spatialprobe.commands.ask import is_mllm, refuse_unless_mllm
    from spatialprobe.models import options

    spread = device_map_settings(device_map, max_memory)
    mllm = is_mllm(model)
    refuse_unless_mllm(mllm, model, protocol=protocol, max_new_tokens=max_new_tokens)
    if mllm:
        if not context:
            fail("--no-context applies to the t5 model; a multimodal LLM is asked the scenario with its question.")
        _ask_qa(model, task, data, None, False, out, protocol, None, False, max_new_tokens, 0, device,
                batch_size, scorer_arg, spread)
        return
    refuse_device_map("t5", device, *spread)

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
@scale_options
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
    protocol: str | None = ProtocolOption,
    image_condition: str | None = ImageConditionOption,
    blind: bool = BlindOption,
    max_new_tokens: int | None = MaxNewTokensOption,
    scorer_arg: list[str] = ScorerArgOption,
    seed: int = SeedOption,
    device_map: str | None = DeviceMapOption,
    max_memory: list[str] = MaxMemoryOption,
) -> None:
    """Answer each question from the image synthesized for its scenario (a VQA model, or a
    multimodal LLM by either protocol, with the blind conditions beside it)."""
    from spatialprobe.benchmarks.qa import questions_from_images, run_image_qa
    from spatialprobe.commands.ask import is_mllm, refuse_unless_mllm
    from spatialprobe.imagestore import open_image_run
    from spatialprobe.models.qa_models import load_vqa

    spread = device_map_settings(device_map, max_memory)
    mllm = is_mllm(model)
    refuse_unless_mllm(mllm, model, protocol=protocol, image_condition=image_condition, blind=blind,
                       max_new_tokens=max_new_tokens, scorer_arg=scorer_arg or None, seed=seed or None)
    if mllm:
        if full_vocab:
            fail("--full-vocab applies to VQA classifiers; a multimodal LLM answers yes or no.")
        _ask_qa(model, task, data, images, partial, out, protocol, image_condition, blind, max_new_tokens,
                seed, device, batch_size, scorer_arg, spread)
        return
    refuse_device_map("vilt-vqa/blip", device, *spread)

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


def _ask_qa(model: str, task: str | None, data: Path | None, images: Path | None, partial: bool,
            out: Path | None, protocol: str | None, condition: str | None, blind: bool,
            max_new_tokens: int | None, seed: int, device: str, batch_size: int, scorer_arg: list[str],
            spread: tuple = (None, None)) -> None:
    """The yes/no questions asked of a multimodal LLM: as text (``qa text``: no image), or each
    with its instance's synthesized image (``qa image``)."""
    from spatialprobe.benchmarks.ask_sources import qa_source
    from spatialprobe.commands.ask import run_ask
    from spatialprobe.models.options import parse_pairs

    require_run_dir(out)
    mode = "text" if images is None else "image"
    with refusals():
        source, settings = qa_source(task, None if data is None else str(data.resolve()),
                                     None if images is None else str(images), partial)
        target = out or _default_out(mode, _source_name(source.task, data, images), model)
        run_ask(source, settings, model, parse_pairs(scorer_arg), out=target, protocol=protocol,
                condition=condition or ("none" if images is None else "real"), blind=blind,
                max_new_tokens=max_new_tokens, seed=seed, device=device, batch_size=batch_size,
                label=f"qa {mode} questions asked", device_map=spread[0], max_memory=spread[1])
