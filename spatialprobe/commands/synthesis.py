"""``spatialprobe synthesize`` (``spatialprobe convert vqgan`` lives in ``commands/convert.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from spatialprobe.commands.hub import hub_model_options
from spatialprobe.commands.output_checks import require_run_dir
from spatialprobe.commands.scale_options import scale_options
from spatialprobe.errors import UsageError


def _vqgan_settings(pairs: list[str], **named) -> dict[str, str]:
    settings: dict = {k: v for k, v in named.items() if v is not None}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--set takes KEY=VALUE, got {pair!r}")
        settings[key.strip().replace("-", "_")] = value.strip()
    return settings


VQGAN_OPTIONS = ("vqgan", "clip", "preset", "size", "iterations", "cutouts", "lr", "quantize",
                 "snapshots", "set_", "fast", "compile_", "checkpoint")
DIFFUSERS_OPTIONS = ("model", "steps", "guidance", "height", "width", "negative_prompt")
SHAPES_OPTIONS = ("error_rate", "miss_rate", "size")
BACKEND_OPTIONS = {"vqgan-clip": VQGAN_OPTIONS, "diffusers": DIFFUSERS_OPTIONS,
                   "shapes": SHAPES_OPTIONS}


def refuse_other_backend_options(ctx: typer.Context, backend: str) -> None:
    """An option of another backend would be silently ignored: refuse it, naming it."""
    own = set(BACKEND_OPTIONS.get(backend, ()))
    for other, names in BACKEND_OPTIONS.items():
        for name in names:
            if other == backend or name in own:
                continue
            source = ctx.get_parameter_source(name)  # typer's own click: compare by name
            if getattr(source, "name", None) in ("COMMANDLINE", "ENVIRONMENT"):
                flag = next(p.opts[0] for p in ctx.command.params if p.name == name)
                takers = " and ".join(b for b, opts in BACKEND_OPTIONS.items() if name in opts)
                raise UsageError(f"{flag} applies to the {takers} backend{'s' if ' and ' in takers else ''} "
                                 f"only; the {backend} backend does not take it.")


def synthesize_command(
    ctx: typer.Context,
    prompts: str = typer.Option(..., "--prompts", help="Prompt file (one per line, or JSON lines "
                                "{id, text, ...}) or a built-in dataset: size, height, posrel."),
    backend: str = typer.Option("vqgan-clip", "--backend", help="vqgan-clip, diffusers, or shapes "
                                "(UNTRAINED colour-coded test scenes, for --detector colour)."),
    out: Path | None = typer.Option(None, "--out", help="Run directory; an existing run is resumed "
                                    "\\[default: runs/synthesize-BACKEND-PROMPTS-IDENTITY8]."),
    images_per_prompt: int | None = typer.Option(None, "--images-per-prompt", "-n", min=1,
                                                 help="Images per prompt \\[default: a benchmark's prompt "
                                                      "file: its protocol's number; else 1]."),
    seed: int = typer.Option(0, "--seed", help="Run seed; each image's seed derives from it."),
    batch_size: int = typer.Option(1, "--batch-size", min=1, help="Images optimised together."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:1, ..."),
    precision: str = typer.Option("auto", "--precision",
                                  help="auto (bf16 autocast on CUDA for VQGAN+CLIP, fp16 "
                                       "pipelines), fp32, bf16, fp16."),
    vqgan: str | None = typer.Option(None, "--vqgan", help="VQModel directory or id "
                                        "(see `spatialprobe convert vqgan`)."),
    clip: str = typer.Option("openai/clip-vit-base-patch32", "--clip",
                            help="Contrastive image-text model id or path: CLIP, SigLIP, SigLIP 2."),
    preset: str = typer.Option("paper", "--preset", help="VQGAN+CLIP preset: paper, fast."),
    size: int | None = typer.Option(None, "--size", min=8, help="Image side: VQGAN+CLIP "
                                       "(paper: 512), shapes \\[default: the preset's; shapes 64]."),
    iterations: int | None = typer.Option(None, "--iterations", min=1,
                                             help="VQGAN+CLIP steps per image (paper: 600)."),
    cutouts: int | None = typer.Option(None, "--cutouts", min=1,
                                          help="VQGAN+CLIP cutouts per step (paper: 32)."),
    lr: float | None = typer.Option(None, "--lr", min=0.0, help="VQGAN+CLIP AdamW lr (paper: 0.5)."),
    quantize: bool | None = typer.Option(None, "--quantize/--no-quantize",
                                            help="Decode through the VQGAN codebook."),
    snapshots: str | None = typer.Option(None, "--snapshots",
                                            help="Iterations to snapshot, e.g. 100,300."),
    set_: list[str] = typer.Option([], "--set", help="Any VQGAN+CLIP setting: KEY=VALUE."),
    fast: bool | None = typer.Option(None, "--fast/--plain", help="VQGAN+CLIP speed setting: "
                                        "half-precision weights, channels-last, compiled step; same recipe "
                                        "\\[default: fast on CUDA, plain elsewhere]."),
    compile_: str = typer.Option("auto", "--compile", help="VQGAN+CLIP fast path: torch.compile "
                                 "the step: auto (on CUDA), on, off."),
    checkpoint: bool = typer.Option(False, "--checkpoint/--no-checkpoint",
                                    help="VQGAN+CLIP: recompute decoder activations in the "
                                         "backward pass (fits larger --batch-size)."),
    model: str | None = typer.Option(None, "--model", help="diffusers pipeline id or path."),
    steps: int = typer.Option(50, "--steps", min=1, help="diffusers: inference steps."),
    guidance: float = typer.Option(7.5, "--guidance", min=0.0, help="diffusers: guidance scale."),
    height: int | None = typer.Option(None, "--height", min=8, help="diffusers: image height."),
    width: int | None = typer.Option(None, "--width", min=8, help="diffusers: image width."),
    negative_prompt: str = typer.Option("", "--negative-prompt", help="diffusers only."),
    error_rate: float = typer.Option(0.0, "--error-rate", min=0.0, max=1.0,
                                     help="shapes: seeded share of images drawn with the relation "
                                          "reversed."),
    miss_rate: float = typer.Option(0.0, "--miss-rate", min=0.0, max=1.0,
                                    help="shapes: seeded share of images with one object left out."),
) -> None:
    """Generate images for prompts into an image store (resumes an existing --out)."""
    from rich.progress import Progress

    from spatialprobe.loading import ModelLoadError
    from spatialprobe.runner.folders import DefaultRunDir
    from spatialprobe.synthesis import load_prompts, synthesize
    from spatialprobe.tasks.data import DataError

    if backend in BACKEND_OPTIONS:
        refuse_other_backend_options(ctx, backend)
    if backend == "vqgan-clip":
        if not vqgan:
            raise UsageError("--backend vqgan-clip needs --vqgan (a VQModel directory; convert a taming "
                              "checkpoint with `spatialprobe convert vqgan`).")
        settings = _vqgan_settings(set_, size=size, iterations=iterations, cutouts=cutouts, lr=lr,
                                   quantize=quantize, snapshots=snapshots,
                                   speed=None if fast is None else ("fast" if fast else "plain"))
        args: dict[str, Any] = {"vqgan": vqgan, "clip": clip, "preset": preset, "settings": settings,
                                "compile": compile_, "checkpoint": checkpoint}
    elif backend == "diffusers":
        if not model:
            raise UsageError("--backend diffusers needs --model (a pipeline id or directory).")
        args = {"model": model, "steps": steps, "guidance": guidance, "height": height,
                "width": width, "negative_prompt": negative_prompt}
    elif backend == "shapes":
        for name, value, default in (("--device", device, "auto"), ("--precision", precision, "auto")):
            if value != default:
                raise UsageError(f"{name} does not apply to --backend shapes: it draws its scenes without a model.")
        args = {"error_rate": error_rate, "miss_rate": miss_rate, "size": size or 64}
    else:
        raise UsageError(f"unknown backend {backend!r}; use vqgan-clip, diffusers or shapes.")
    args.update(device=device, precision=precision)
    require_run_dir(out)
    try:
        prompt_set = load_prompts(prompts)
        for note in prompt_set.notes:
            typer.secho(f"note: {note}", fg=typer.colors.YELLOW, err=True)
        images_per_prompt = _images_per_prompt(images_per_prompt, prompt_set.protocol)
        with Progress(transient=True) as bar:
            task = bar.add_task("synthesizing", total=None)
            summary = synthesize(prompt_set, out or DefaultRunDir(backend, Path(prompts).stem), backend, args,
                                 images_per_prompt=images_per_prompt, seed=seed,
                                 batch_size=batch_size,
                                 progress=lambda done, total: bar.update(task, completed=done,
                                                                         total=total))
    except (DataError, ModelLoadError, ValueError, ImportError) as err:
        raise UsageError(str(err)) from None
    if backend == "shapes":
        typer.secho("--backend shapes is UNTRAINED: it draws colour-coded test scenes from the "
                    "prompts' metadata, not images of a model.", fg=typer.colors.YELLOW, err=True)
    rate = f", {summary.images_per_hour:.1f} images/hour" if summary.images_per_hour else ""
    typer.echo(f"{summary.out}: {summary.already_done + summary.generated}/{summary.total} images "
               f"({summary.already_done} were already there, {summary.generated} generated{rate})")


def _images_per_prompt(given: int | None, protocol: dict[str, Any] | None) -> int:
    """``-n`` as given, else the benchmark's number (said once), else 1; the run records it."""
    if given is not None or protocol is None:
        return 1 if given is None else given
    typer.secho(f"note: {protocol['images_per_prompt']} images per prompt, as {protocol['title']}'s "
                "protocol makes them (-n overrides)", fg=typer.colors.YELLOW, err=True)
    return int(protocol["images_per_prompt"])



def register(app: typer.Typer) -> None:
    app.command("synthesize")(scale_options(hub_model_options(synthesize_command)))
