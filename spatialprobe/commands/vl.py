"""Vision-language evaluation commands: ``vsr``, ``vsr-train``, ``spatialmqa``."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from spatialprobe.commands.declared import take_options
from spatialprobe.commands.demo import DemoOption
from spatialprobe.commands.engine_options import ask_options, progress_bar, text_alone
from spatialprobe.commands.hub import hub_model_options
from spatialprobe.commands.output_checks import require_run_dir
from spatialprobe.commands.scale_options import scale_options
from spatialprobe.errors import UsageError

if TYPE_CHECKING:
    from spatialprobe.engine.build import AskOptions

Device = typer.Option("auto", "--device", help="auto, cpu or cuda (mixed precision on cuda).")


SkipMissing = typer.Option(False, "--skip-missing", help="Evaluate the examples whose image is found when "
                           "some are missing (counted in the table's first line and summary.json); "
                           "else refused, naming the first missing image.")


def coco_run_options(name: str, batch_size: int, unit: str) -> dict[str, Any]:
    """The options ``vsr`` and ``spatialmqa`` share (:func:`~spatialprobe.commands.declared.take_options`):
    the part asked, the run directory, batch size, a limit of ``unit``, device, missing images, demo."""
    return {
        "part": typer.Option("test", "--part", help="train, dev or test."),
        "out": typer.Option(None, "--out", help="Run directory (resumes if it exists) "
                            f"\\[default: runs/ask-{name}-MODEL-IDENTITY8]."),
        "batch_size": typer.Option(batch_size, "--batch-size", min=1),
        "limit": typer.Option(None, "--limit", min=1, help=f"Only the first N {unit} (smoke tests)."),
        "device": Device,
        "skip_missing": SkipMissing,
        "demo": DemoOption,
    }


VSR_OPTIONS = ("protocol", "image_condition", "blind", "max_new_tokens", "scorer_arg", "seed", "device_map",
               "max_memory", "backend", "base_url", "api_key_env", "items", "samples", "temperature")
"""The shared ask options ``vsr`` takes (:mod:`spatialprobe.commands.engine_options`), in --help's order."""
SPATIALMQA_OPTIONS = ("scorer_arg", "protocol", "image_condition", "blind", "max_new_tokens", "seed", "device_map",
                      "max_memory", "backend", "base_url", "api_key_env", "items", "protocol_variants", "samples",
                      "temperature")
"""The shared ask options ``spatialmqa`` takes, in --help's order."""


def percent(metric: dict) -> str:
    """A summary's percentage as the tables print it, one decimal (``55.0%``, not ``55.00000000000001%``)."""
    return "–" if metric.get("mean") is None else f"{metric['mean']:.1f}%"


def _report_missing(summary: dict) -> None:
    """The table's coverage line on stderr too, when images were missing: never a silent gap."""
    from spatialprobe.reports.tables import coverage_line

    details = summary["details"]
    detail = details.get("coverage_detail") or {}
    if detail.get("skipped_missing"):
        typer.secho(f"{coverage_line(detail, details.get('what', 'examples'))} Missing images are listed in "
                    "summary.json.", fg=typer.colors.YELLOW, err=True)


@take_options(coco_run_options("vsr", 16, "examples"))
def vsr_command(
    *,
    model: str | None = typer.Option(None, "--model", help="Any checkpoint whose adapter asks VSR's captions "
                                     "(spatialprobe ls): a contrastive image-text model (CLIP, SigLIP, SigLIP 2: "
                                     "caption vs its negated relation), a multimodal LLM (asked yes or no) or another "
                                     "adapter family (with --demo: the tiny model the demo names)."),
    data: Path | None = typer.Option(None, "--data", help="VSR folder holding random/ and zeroshot/ JSON lines."),
    images: Path | None = typer.Option(None, "--images", help="COCO 2017 image folder (train2017/val2017 inside "
                                       "or flat)."),
    split: str = typer.Option("random", "--split", help="random or zeroshot."),
    # declared in coco_run_options:
    part: str, out: Path | None, batch_size: int, limit: int | None, device: str, skip_missing: bool, demo: bool,
    asked: AskOptions,
) -> None:
    """VSR: whether each caption is true of its image, asked of any model that understands the
    items - a contrastive model by the caption against its negated relation, a multimodal LLM as a
    yes/no question (either protocol) - with accuracy per relation category and relation. --demo
    tries it offline on a synthetic copy."""
    from spatialprobe.benchmarks import vsr
    from spatialprobe.commands.demo import coco_inputs
    from spatialprobe.commands.engine_options import ask_and_print
    from spatialprobe.runner.folders import DefaultRunDir

    require_run_dir(out)
    data, images, model = coco_inputs("vsr", vsr, demo, data, images, model, text_alone(asked))
    source, _ = vsr.vsr_source(vsr.split_file(data, split, part), images, split, part, limit, skip_missing)
    target = out or DefaultRunDir("vsr", model)
    summary = ask_and_print(source, model, replace(asked, device=device, batch_size=batch_size), target,
                            "VSR captions asked", "vsr")
    _report_missing(summary)
    typer.echo(f"VSR {split}/{part} accuracy {percent(summary['accuracy'])} over "
               f"{summary['accuracy']['n']:,} of {summary['details']['coverage']['total']:,} examples; "
               f"results in {os.fspath(target)}")


@take_options(coco_run_options("spatialmqa", 8, "questions"))
def spatialmqa_command(
    *,
    model: str | None = typer.Option(None, "--model", help="CLIP-style checkpoint or an image-text-to-text model "
                                     "(id or directory) (with --demo: the tiny model the demo names)."),
    data: Path | None = typer.Option(None, "--data", help="SpatialMQA folder with train/dev/test.jsonl."),
    images: Path | None = typer.Option(None, "--images", help="COCO test2017 image folder."),
    part: str,  # declared in coco_run_options, as are out ... demo
    method: str = typer.Option("auto", "--method", help="auto, clip (score each option against the image: "
                               "a contrastive model) or generate (= --protocol generate)."),
    out: Path | None, batch_size: int, limit: int | None, device: str, skip_missing: bool, demo: bool,
    asked: AskOptions,
) -> None:
    """SpatialMQA multiple choice, asked of any model that understands it (a contrastive model scores
    each option in its template; a multimodal LLM is asked the lettered question by likelihood and/or
    generation): strict and lenient accuracy, P/R/F1, per perspective and axis, with the blind
    conditions on request. --demo tries it offline on a synthetic copy."""
    from spatialprobe.benchmarks import spatialmqa
    from spatialprobe.benchmarks.spatialmqa import PARTS, spatialmqa_source
    from spatialprobe.commands.demo import coco_inputs
    from spatialprobe.commands.engine_options import ask_and_print
    from spatialprobe.runner.folders import DefaultRunDir

    require_run_dir(out)
    data, images, model = coco_inputs("spatialmqa", spatialmqa, demo, data, images, model, text_alone(asked))
    if part not in PARTS:
        raise UsageError(f"part must be one of {PARTS}, got {part!r}")
    if method not in ("auto", "clip", "generate"):
        raise UsageError(f"--method must be auto, clip or generate; got {method!r}")
    if method == "generate" and asked.protocol not in (None, "generate"):
        raise UsageError(f"--method generate asks by generation; it does not apply with --protocol {asked.protocol}.")
    source, _ = spatialmqa_source(data / f"{part}.jsonl", images, part, limit, skip_missing)
    given = replace(asked, device=device, batch_size=batch_size,
                    protocol="generate" if method == "generate" else asked.protocol,
                    wordings=("contrastive",) if method == "clip" else None)  # options scored against the image
    target = out or DefaultRunDir("spatialmqa", model)
    summary = ask_and_print(source, model, given, target, "SpatialMQA questions asked", "spatialmqa")
    _report_missing(summary)
    for key, ids in summary["details"].get("extra_keys", {}).items():
        typer.secho(f"note: {len(ids)} record(s) carry the unexpected key {key!r} (e.g. {ids[0]}); "
                    "ignored.", fg=typer.colors.YELLOW, err=True)
    metrics = summary["metrics"]
    typer.echo(f"SpatialMQA {part}: strict accuracy {percent(metrics['strict_accuracy'])}, lenient "
               f"accuracy {percent(metrics['accuracy'])} (F1 {percent(metrics['f1'])} as the benchmark "
               f"computes it) over {metrics['accuracy']['n']:,} of "
               f"{summary['details']['coverage']['total']:,} questions; results in {os.fspath(target)}")


def vsr_train_command(
    data: Path = typer.Option(..., "--data", help="VSR folder holding random/ and zeroshot/."),
    images: Path = typer.Option(..., "--images", help="COCO 2017 image folder."),
    out: Path | None = typer.Option(None, "--out", help="Run directory: checkpoints/, best/, summary.json "
                                    "\\[default: runs/vsr-train-MODEL-IDENTITY8]."),
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
    from spatialprobe.files import DataError
    from spatialprobe.loading import ModelLoadError
    from spatialprobe.reports.tables import coverage_line
    from spatialprobe.runner.folders import DefaultRunDir
    from spatialprobe.training.vilt_vsr import TrainSettings, train_vsr_vilt

    if epochs is not None and max_steps > 0:
        raise UsageError("--epochs does not apply with --max-steps: training stops after --max-steps steps.")
    require_run_dir(out)
    settings = TrainSettings(learning_rate=learning_rate, batch_size=batch_size,
                             epochs=30.0 if epochs is None else float(epochs), eval_steps=eval_steps,
                             max_steps=max_steps, seed=seed)
    bar, advance = progress_bar("VSR training, then test examples")
    try:
        with bar:
            summary = train_vsr_vilt(data, images, out or DefaultRunDir(model), model=model, split=split,
                                     settings=settings, device=device, progress=advance, skip_missing=skip_missing)
    except (DataError, ModelLoadError, ValueError) as err:
        raise UsageError(str(err)) from None
    details = summary["details"]
    for part, coverage in details["coverage_per_part"].items():
        if coverage["skipped_missing"]:
            typer.secho(f"{part}: {coverage_line(coverage)}", fg=typer.colors.YELLOW, err=True)
    typer.echo(f"best dev accuracy {percent({'mean': details['best_dev_accuracy']})}, test accuracy "
               f"{percent(summary['accuracy'])}; best checkpoint in {details['best_checkpoint']}")


def register(app: typer.Typer) -> None:
    app.command("vsr")(scale_options(hub_model_options(ask_options(*VSR_OPTIONS)(vsr_command))))
    app.command("vsr-train")(hub_model_options(vsr_train_command))  # trains once: no --ray
    app.command("spatialmqa")(scale_options(hub_model_options(ask_options(*SPATIALMQA_OPTIONS)(spatialmqa_command))))
