"""Vision-language evaluation commands: ``vsr``, ``vsr-train``, ``spatialmqa``."""

from __future__ import annotations

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
from spatialprobe.commands.errors import fail, refusals, require_run_dir
from spatialprobe.commands.hub import hub_model_options
from spatialprobe.commands.model_options import (
    DeviceMapOption,
    MaxMemoryOption,
    device_map_settings,
    refuse_device_map,
)
from spatialprobe.commands.scale_options import scale_options

Device = typer.Option("auto", "--device", help="auto, cpu or cuda (mixed precision on cuda).")


def _progress(label: str):
    """A rich progress display fed by the run spine's progress(done, total)."""
    from rich.progress import MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(SpinnerColumn(), TextColumn(label), MofNCompleteColumn(), TimeElapsedColumn(),
                   transient=True)
    task = bar.add_task(label, total=None)
    return bar, lambda done, total: bar.update(task, completed=done, total=total)


SkipMissing = typer.Option(False, "--skip-missing", help="Evaluate the examples whose image is found when "
                           "some are missing (counted in the table's first line and summary.json); "
                           "else refused, naming the first missing image.")


def _report_missing(summary: dict) -> None:
    """The table's coverage line on stderr too, when images were missing: never a silent gap."""
    from spatialprobe.reports.tables import coverage_line

    details = summary["details"]
    if details.get("n_missing_images"):
        typer.secho(f"{coverage_line(details.get('coverage'))} Missing images are listed in summary.json.",
                    fg=typer.colors.YELLOW, err=True)


def vsr_command(
    model: str = typer.Option(..., "--model", help="Any contrastive image-text checkpoint "
                              "(CLIP, SigLIP, SigLIP 2; id or directory)."),
    data: Path = typer.Option(..., "--data", help="VSR folder holding random/ and zeroshot/ JSON lines."),
    images: Path = typer.Option(..., "--images", help="COCO 2017 image folder (train2017/val2017 inside or flat)."),
    split: str = typer.Option("random", "--split", help="random or zeroshot."),
    part: str = typer.Option("test", "--part", help="train, dev or test."),
    out: Path = typer.Option(..., "--out", help="Run directory (resumes if it exists)."),
    batch_size: int = typer.Option(16, "--batch-size", min=1),
    limit: int = typer.Option(None, "--limit", min=1, help="Only the first N examples (smoke tests)."),
    device: str = Device,
    skip_missing: bool = SkipMissing,
    protocol: str | None = ProtocolOption,
    image_condition: str | None = ImageConditionOption,
    blind: bool = BlindOption,
    max_new_tokens: int | None = MaxNewTokensOption,
    scorer_arg: list[str] = ScorerArgOption,
    seed: int = SeedOption,
    device_map: str | None = DeviceMapOption,
    max_memory: list[str] = MaxMemoryOption,
) -> None:
    """VSR: a contrastive model by negated-relation prompting (accuracy per relation and category,
    plot), or a multimodal LLM asked whether each caption is true (yes/no, either protocol)."""
    from spatialprobe.benchmarks.vsr import run_vsr_clip
    from spatialprobe.commands.ask import is_mllm, refuse_unless_mllm, run_ask
    from spatialprobe.files import DataError
    from spatialprobe.loading import ModelLoadError
    from spatialprobe.models.options import parse_pairs

    require_run_dir(out)
    spread = device_map_settings(device_map, max_memory)
    mllm = is_mllm(model)
    refuse_unless_mllm(mllm, model, protocol=protocol, image_condition=image_condition, blind=blind,
                       max_new_tokens=max_new_tokens, scorer_arg=scorer_arg or None, seed=seed or None)
    if not mllm:
        refuse_device_map("contrastive", device, *spread)
    if mllm:
        from spatialprobe.benchmarks.ask_sources import vsr_source
        from spatialprobe.datasets.vsr import split_file

        with refusals():
            source, settings = vsr_source(split_file(data, split, part), images, split, part, limit, skip_missing)
            run_ask(source, settings, model, parse_pairs(scorer_arg), out=out, protocol=protocol,
                    condition=image_condition, blind=blind, max_new_tokens=max_new_tokens, seed=seed,
                    device=device, batch_size=batch_size, label="VSR captions asked",
                    device_map=spread[0], max_memory=spread[1])
        return
    bar, advance = _progress("VSR examples scored")
    try:
        with bar:
            summary = run_vsr_clip(model, data, images, out, split=split, part=part, device=device,
                                   batch_size=batch_size, limit=limit, progress=advance,
                                   skip_missing=skip_missing)
    except (DataError, ModelLoadError, ValueError) as err:
        fail(err)
    _report_missing(summary)
    typer.echo(f"VSR {split}/{part} accuracy {summary['accuracy']['mean']}% over "
               f"{summary['accuracy']['n']:,} of {summary['details']['coverage']['total']:,} examples; "
               f"results in {out}")




def spatialmqa_command(
    model: str = typer.Option(..., "--model",
                              help="CLIP-style checkpoint or an image-text-to-text model (id or directory)."),
    data: Path = typer.Option(..., "--data", help="SpatialMQA folder with train/dev/test.jsonl."),
    images: Path = typer.Option(..., "--images", help="COCO test2017 image folder."),
    part: str = typer.Option("test", "--part", help="train, dev or test."),
    method: str = typer.Option("auto", "--method", help="auto, clip (score each option) or generate."),
    out: Path = typer.Option(..., "--out", help="Run directory (resumes if it exists)."),
    batch_size: int = typer.Option(8, "--batch-size", min=1),
    limit: int = typer.Option(None, "--limit", min=1, help="Only the first N questions (smoke tests)."),
    device: str = Device,
    skip_missing: bool = SkipMissing,
    scorer_arg: list[str] = typer.Option([], "--scorer-arg", help="KEY=VALUE: an option of the model "
                                         "adapter (generate: prompt, max_new_tokens; spatialprobe ls)."),
    protocol: str | None = ProtocolOption,
    image_condition: str | None = ImageConditionOption,
    blind: bool = BlindOption,
    max_new_tokens: int | None = MaxNewTokensOption,
    seed: int = typer.Option(0, "--seed", help="With --protocol: seed of the shuffled-image condition."),
    device_map: str | None = DeviceMapOption,
    max_memory: list[str] = MaxMemoryOption,
) -> None:
    """SpatialMQA multiple choice: strict and lenient accuracy, P/R/F1, per perspective and axis.
    With --protocol, a multimodal LLM is asked the lettered question by likelihood and/or
    generation, batched, under any image condition (--blind: with the vision gain)."""
    from spatialprobe.benchmarks.spatialmqa import build_answerer, run_spatialmqa
    from spatialprobe.commands.ask import is_mllm, refuse_unless_mllm, run_ask
    from spatialprobe.files import DataError
    from spatialprobe.loading import ModelLoadError
    from spatialprobe.models.options import parse_pairs

    require_run_dir(out)
    spread = device_map_settings(device_map, max_memory)
    asked = protocol is not None or image_condition is not None or blind or max_new_tokens is not None
    if seed and not asked:
        fail("--seed applies with --protocol only (the seed of the shuffled-image condition).")
    if asked:
        refuse_unless_mllm(is_mllm(model), model, protocol=protocol, image_condition=image_condition,
                           blind=blind, max_new_tokens=max_new_tokens)
        if method != "auto":
            fail(f"--method {method} does not apply with --protocol: the multimodal LLM is asked by the "
                 "protocol(s) named.")
        from spatialprobe.benchmarks.ask_sources import spatialmqa_source

        with refusals():
            source, settings = spatialmqa_source(data / f"{part}.jsonl", images, part, limit, skip_missing)
            run_ask(source, settings, model, parse_pairs(scorer_arg), out=out, protocol=protocol,
                    condition=image_condition, blind=blind, max_new_tokens=max_new_tokens, seed=seed,
                    device=device, batch_size=batch_size, label="SpatialMQA questions asked",
                    device_map=spread[0], max_memory=spread[1])
        return
    refuse_device_map({"clip": "contrastive", "generate": "generate"}.get(method, "contrastive/generate"),
                      device, *spread)
    bar, advance = _progress("SpatialMQA questions answered")
    try:
        given = parse_pairs(scorer_arg)  # the model is built here only when it has options given
        answerer = build_answerer(model, method, device, given=given) if given else None
        with bar:
            summary = run_spatialmqa(model, data, images, out, part=part, method=method,
                                     device=device, batch_size=batch_size, limit=limit,
                                     answerer=answerer, progress=advance, skip_missing=skip_missing)
    except (DataError, ModelLoadError, ValueError) as err:
        fail(err)
    _report_missing(summary)
    for key, ids in summary["details"]["extra_keys"].items():
        typer.secho(f"note: {len(ids)} record(s) carry the unexpected key {key!r} (e.g. {ids[0]}); "
                    "ignored.", fg=typer.colors.YELLOW, err=True)
    metrics = summary["metrics"]
    typer.echo(f"SpatialMQA {part}: strict accuracy {metrics['strict_accuracy']['mean']}%, lenient "
               f"accuracy {metrics['accuracy']['mean']}% (F1 {metrics['f1']['mean']}% as the benchmark "
               f"computes it) over {metrics['accuracy']['n']:,} of "
               f"{summary['details']['coverage']['total']:,} questions; results in {out}")


def vsr_train_command(
    data: Path = typer.Option(..., "--data", help="VSR folder holding random/ and zeroshot/."),
    images: Path = typer.Option(..., "--images", help="COCO 2017 image folder."),
    out: Path = typer.Option(..., "--out", help="Run directory: checkpoints/, best/, summary.json."),
    model: str = typer.Option("dandelin/vilt-b32-mlm", "--model", help="ViLT checkpoint to start from."),
    split: str = typer.Option("random", "--split", help="random or zeroshot."),
    learning_rate: float = typer.Option(1e-5, "--lr", min=0.0),
    batch_size: int = typer.Option(12, "--batch-size", min=1, help="Training and evaluation batch size."),
    epochs: float | None = typer.Option(None, "--epochs", min=0.0, help="Training epochs [30]."),
    eval_steps: int = typer.Option(100, "--eval-steps", min=1),
    max_steps: int = typer.Option(-1, "--max-steps", min=-1, help="Stop after N steps (-1: all epochs)."),
    seed: int = typer.Option(42, "--seed"),
    device: str = Device,
    skip_missing: bool = SkipMissing,
) -> None:
    """Fine-tune ViLT on VSR's training split (best dev checkpoint), then evaluate on test."""
    from spatialprobe.benchmarks.vsr_train import TrainSettings, train_vsr_vilt
    from spatialprobe.files import DataError
    from spatialprobe.loading import ModelLoadError
    from spatialprobe.reports.tables import coverage_line

    if epochs is not None and max_steps > 0:
        fail("--epochs does not apply with --max-steps: training stops after --max-steps steps.")
    require_run_dir(out)
    settings = TrainSettings(learning_rate=learning_rate, batch_size=batch_size,
                             epochs=30.0 if epochs is None else float(epochs), eval_steps=eval_steps,
                             max_steps=max_steps, seed=seed)
    bar, advance = _progress("VSR training, then test examples")
    try:
        with bar:
            summary = train_vsr_vilt(data, images, out, model=model, split=split, settings=settings,
                                     device=device, progress=advance, skip_missing=skip_missing)
    except (DataError, ModelLoadError, ValueError) as err:
        fail(err)
    details = summary["details"]
    for part, coverage in details["coverage_per_part"].items():
        if coverage["skipped_missing"]:
            typer.secho(f"{part}: {coverage_line(coverage)}", fg=typer.colors.YELLOW, err=True)
    typer.echo(f"best dev accuracy {details['best_dev_accuracy']}%, test accuracy "
               f"{summary['accuracy']['mean']}%; best checkpoint in {details['best_checkpoint']}")


def register(app: typer.Typer) -> None:
    app.command("vsr")(scale_options(hub_model_options(vsr_command)))
    app.command("vsr-train")(hub_model_options(vsr_train_command))  # trains once: no --ray
    app.command("spatialmqa")(scale_options(hub_model_options(spatialmqa_command)))
