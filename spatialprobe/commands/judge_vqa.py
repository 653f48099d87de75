"""``judge TASK RUN --rule vqa --judge-model M`` and ``visor RUN --rule vqa --judge-model M``: the
option checks and runs of the VQA judge (the box judge's options are refused, one sentence)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from spatialprobe.commands.console import warn
from spatialprobe.commands.image_runs import component_spec, execute_judging, require_image_run, warn_skipped
from spatialprobe.commands.output_checks import require_run_dir
from spatialprobe.errors import UsageError

VQA = "vqa"
BOX_ONLY = ("--detector", "--detector-model", "--detector-arg", "--threshold", "--depth", "--depth-model",
            "--depth-arg", "--depth-region", "--rule-arg", "--seed", "--mode")
"""Options of the box judge (detector, depth, rule arguments, the seed of its guesses)."""
RUNTIME_ARGS = ("device", "batch_size")


def wants_vqa(rule: str | None, judge_model: str | None, judge_arg: list[str]) -> bool:
    """Whether a judge command is the VQA judge's; ``--judge-model``/``--judge-arg`` without
    ``--rule vqa`` is refused."""
    if rule != VQA and (judge_model or judge_arg):
        raise UsageError("--judge-model and --judge-arg apply to --rule vqa only (a multimodal LLM judge).")
    return rule == VQA


def visor_wants_vqa(rule: str | None, judge_model: str | None, judge_arg: list[str]) -> bool:
    """``visor --rule`` takes ``vqa`` only (VISOR's own rule is the centroid sign of boxes)."""
    if rule not in (None, VQA):
        raise UsageError(f"visor --rule takes vqa only, not {rule!r} (VISOR's own rule, the sign of the "
                         "centroids' difference, needs no --rule).")
    return wants_vqa(rule, judge_model, judge_arg)


def refuse_box_options(given: Mapping[str, Any], what: str = "--rule vqa") -> None:
    """One sentence naming the box-judge options given with the VQA judge."""
    named = [name for name, value in given.items() if value not in (None, [], False)]
    if named:
        verb = "applies" if len(named) == 1 else "apply"
        raise UsageError(f"{', '.join(named)} {verb} to the box judge only; {what} asks a multimodal LLM "
                         "(--judge-model) and reads no boxes.")


def judge_spec(judge_model: str | None, judge_arg: list[str]):
    """The judge adapter's spec (:func:`~spatialprobe.models.choice.judge_adapter`) of ``--judge-model``
    and ``--judge-arg`` (runtime keys refused)."""
    from spatialprobe.models.choice import judge_adapter, refuse_unaccepted

    if not judge_model:
        raise UsageError("--rule vqa needs --judge-model (a multimodal LLM: checkpoint id or directory).")
    refuse_unaccepted(judge_adapter(), judge_model, "--judge-model", "a multimodal LLM (image-text-to-text)")
    spec = component_spec(judge_adapter(), judge_model, judge_arg)
    runtime = [k for k in RUNTIME_ARGS if k in spec.args]
    if runtime:
        raise UsageError(f"--judge-arg {runtime[0]} is set by --{runtime[0].replace('_', '-')}, not --judge-arg.")
    return spec


def run_vqa_judge(task: str, run: Path, out: Path | None, judge_model: str | None, judge_arg: list[str],
                  batch_size: int, device: str, skip_missing: bool, partial: bool, floor: bool = False,
                  contrast: bool = False) -> None:
    """``judge TASK RUN --rule vqa``: the ``vqa-judge`` run kind, its table printed."""
    from spatialprobe.judging.judged_images import image_run
    from spatialprobe.judging.vqa import VqaJudgeRun, VqaJudgeSettings
    from spatialprobe.runner.folders import DefaultRunDir
    from spatialprobe.runner.settings import Component

    require_image_run(run)
    spec = judge_spec(judge_model, judge_arg)
    require_run_dir(out)
    target = out or DefaultRunDir(task, VQA, spec.args["model"])
    settings = VqaJudgeSettings(task, image_run(run, partial), Component.of(spec), skip_missing=skip_missing,
                                device=device, batch_size=batch_size, floor=floor or None, contrast=contrast or None)
    summary, folder = execute_judging(lambda: VqaJudgeRun(settings), target, task, "asking the claims of")
    m = summary["metrics"]
    typer.echo(f"wrote {folder} (claims affirmed {m['accuracy']['mean']:.1f}%, "
               f"Soft-TIFA {m['soft_tifa']['mean']:.1f}%"
               + "".join(f", {name} {m[name]['mean']:.1f}%" for name in ("accuracy_blank", "accuracy_none",
                                                                         "contrast_accuracy") if name in m) + ")")


def run_vqa_visor(run: Path | None, prompts: Path | None, out: Path | None, judge_model: str | None,
                  judge_arg: list[str], batch_size: int, device: str, partial: bool, skip_missing: bool) -> None:
    """``visor RUN --rule vqa``: the ``vqa-visor`` run kind, its table printed."""
    from spatialprobe.judging.judged_images import image_run
    from spatialprobe.judging.vqa_visor import VqaVisorRun, VqaVisorSettings
    from spatialprobe.reports.tables import print_table
    from spatialprobe.runner import execute
    from spatialprobe.runner.folders import DefaultRunDir
    from spatialprobe.runner.settings import Component

    if run is None:
        raise UsageError("visor --rule vqa needs an image RUN (a released detection file holds no images to ask "
                         "about).")
    require_image_run(run)
    spec = judge_spec(judge_model, judge_arg)
    require_run_dir(out)
    target = out or DefaultRunDir(VQA, spec.args["model"])
    kind = VqaVisorRun(VqaVisorSettings({"image_run": image_run(run, partial)},
                                        {"path": str(prompts)} if prompts else None, Component.of(spec),
                                        skip_missing=skip_missing, device=device, batch_size=batch_size))
    if kind.skipped:
        warn(f"{kind.skipped} image(s) of {run} are not of spatial SR2D prompts; left out, counted in "
             "summary.json as non_spatial_skipped.")
    summary = execute(kind, target)
    folder = Path(target)
    warn_skipped(summary["details"], "scored")
    print_table((folder / "table.md").read_text(encoding="utf-8"))
    typer.echo(f"wrote {folder}")
