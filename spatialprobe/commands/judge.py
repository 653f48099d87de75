"""``spatialprobe judge size|height|posrel RUN``, ``judge gallery``, and ``spatialprobe visor``."""

from __future__ import annotations

from pathlib import Path

import typer

from spatialprobe.commands import judge_vqa
from spatialprobe.commands.console import warn
from spatialprobe.commands.declared import command_group
from spatialprobe.commands.hub import hub_model_options
from spatialprobe.commands.image_runs import (
    PARTIAL,
    SKIP_MISSING,
    component_spec,
    execute_judging,
    parse_args,
    require_image_run,
    warn_skipped,
)
from spatialprobe.commands.output_checks import require_out_file, require_run_dir
from spatialprobe.commands.scale_options import scale_options
from spatialprobe.errors import UsageError
from spatialprobe.runner.settings import Component

judge_app = command_group("Judge generated images: ISM (Box) with a detector, depth and rules.")


def _judge_settings(task: str, run: Path, detector: str, detector_model: str | None, detector_arg: list[str],
                  threshold: float | None, depth: str | None, depth_model: str | None,
                  depth_arg: list[str], rule: str | None, rule_arg: list[str], seed: int,
                  batch_size: int, device: str, skip_missing: bool, depth_region: str | None = None,
                  partial: bool = False, mode: str = "corrected"):
    """The judge's settings; options that do not apply to ``task`` are refused, not ignored. What
    applies is the rule's record's to say (``judging.rulebook``)."""
    from spatialprobe.detectors.rules import DEPTH_REGIONS
    from spatialprobe.judging.box import JudgeRunSettings
    from spatialprobe.judging.judged_images import image_run
    from spatialprobe.judging.rulebook.lookup import and_list, check, fixed_rule, judged_tasks, rule_of, tasks_where

    fixed = fixed_rule(task)
    if fixed is not None and (rule is not None or rule_arg):
        position = [name for name in judged_tasks() if fixed_rule(name) is None]
        raise UsageError(f"--rule and --rule-arg apply to judge {' and '.join(position)} only; {task} has one "
                         f"fixed rule ({fixed}) without arguments.")
    record = rule_of(task, rule)
    rule_args = parse_args(rule_arg)
    check(task, record.name, mode, rule_args, depth_region)
    if not record.reads_depth and (depth is not None or depth_model or depth_arg):
        raise UsageError(f"--depth, --depth-model and --depth-arg apply to judge "
                         f"{and_list(tasks_where(lambda r: r.reads_depth))} only; {task} reads no depth.")
    if not record.depth_region and depth_region is not None:
        why = f"{task}'s rule averages the box as its script does." if record.reads_depth else f"{task} reads no depth."
        raise UsageError(f"--depth-region applies to judge {and_list(tasks_where(lambda r: r.depth_region))} "
                         f"only; {why}")
    if depth_region is not None and depth_region not in DEPTH_REGIONS:
        raise UsageError(f"--depth-region must be one of {', '.join(DEPTH_REGIONS)}, not {depth_region!r}.")
    models = [detector] + ([depth or "dpt"] if record.reads_depth else [])
    if device != "auto" and all(name == "colour" for name in models):
        raise UsageError(f"--device {device} does not apply: the colour-coded test detector and depth run no model.")
    return JudgeRunSettings(
        task=task, source=image_run(run, partial),
        detector=Component.of(component_spec(detector, detector_model, detector_arg, threshold=threshold)),
        depth=Component.of(component_spec(depth or "dpt", depth_model, depth_arg)) if record.reads_depth else None,
        rule=record.name, rule_args=rule_args, seed=seed, batch_size=batch_size, device=device,
        skip_missing=skip_missing, depth_region=depth_region or "release", mode=mode)


def _run(task: str, run: Path, out: Path | None, gallery: bool, **options) -> None:
    from spatialprobe.judging.box import JudgeRun
    from spatialprobe.runner.folders import DefaultRunDir

    require_image_run(run)
    settings = _judge_settings(task, run, **options)
    require_run_dir(out)
    target = out or DefaultRunDir(task, settings.detector.name, settings.depth.name if settings.depth else None)
    summary, out = execute_judging(lambda: JudgeRun(settings, gallery=gallery), target, task)
    if gallery:
        typer.echo(f"gallery: {out / 'gallery.html'}")
    typer.echo(f"wrote {out} (accuracy {summary['accuracy']['mean']:.1f}%)")


def _make_task_command(task: str):
    def command(
        run: Path = typer.Argument(..., help="Image run directory (written by spatialprobe synthesize)."),
        out: Path | None = typer.Option(None, "--out", help="Judge run directory "
                                        "\\[default: runs/judge-TASK-DETECTOR-ID]."),
        detector: str | None = typer.Option(None, "--detector",
                                             help="Registered detector (spatialprobe ls) \\[default: owlvit]."),
        detector_model: str | None = typer.Option(None, "--detector-model", help="Checkpoint id or directory."),
        detector_arg: list[str] = typer.Option([], "--detector-arg", help="Extra detector argument key=value."),
        threshold: float | None = typer.Option(None, "--threshold", min=0.0, max=1.0, help="Detector score threshold."),
        depth: str | None = typer.Option(None, "--depth", help="size, height: registered depth estimator "
                                         "\\[default: dpt]."),
        depth_model: str | None = typer.Option(None, "--depth-model", help="size, height: checkpoint id or directory."),
        depth_arg: list[str] = typer.Option([], "--depth-arg", help="size, height: extra depth argument key=value."),
        depth_region: str | None = typer.Option(None, "--depth-region", help="size, height: pixels a box's mean "
                                                "depth averages: release (int()-truncated box) or covered "
                                                "\\[default: release]."),
        rule: str | None = typer.Option(None, "--rule", help="posrel: registered position judge \\[default: vdg]; "
                                        "posrel3d: 3-D position judge \\[default: t2i-compbench-3d] (spatialprobe "
                                        "ls); any task: vqa (a multimodal LLM, --judge-model)."),
        mode: str = typer.Option("corrected", "--mode", help="reference (the peer's code, quirks included) "
                                 "or corrected (documented fixes) \\[default: corrected]; docs/judge.md."),
        rule_arg: list[str] = typer.Option([], "--rule-arg", help="posrel: rule threshold key=value (JSON value; "
                                           "spatialprobe ls lists each rule's); geneval: confidence_threshold=0.3 "
                                           "is the cut of its position score."),
        seed: int | None = typer.Option(None, "--seed", help="Seed of the guesses for unrecognized images [0]."),
        judge_model: str | None = typer.Option(None, "--judge-model", help="--rule vqa: the multimodal LLM "
                                               "(hf-mllm checkpoint id or directory)."),
        judge_arg: list[str] = typer.Option([], "--judge-arg", help="--rule vqa: hf-mllm argument key=value "
                                            "(precision, device_map, prompt_cache)."),
        batch_size: int = typer.Option(8, "--batch-size", min=1, help="Images per model batch."),
        gallery: bool = typer.Option(True, "--gallery/--no-gallery", help="Also write gallery.html."),
        device: str = typer.Option("auto", "--device", help="auto, cpu or cuda (float16 autocast)."),
        skip_missing: bool = typer.Option(False, "--skip-missing", help="Judge the images that "
                                          "remain when some files are gone (recorded in the run)."),
        partial: bool = PARTIAL,
        floor: bool = typer.Option(False, "--floor", help="--rule vqa: also ask every claim with a blank image "
                                   "and with none: the judge's blind floor, shown beside its score."),
        contrast: bool = typer.Option(False, "--contrast", help="--rule vqa: also ask each image the opposite "
                                      "relation, so a judge that says yes to everything scores 50."),
    ) -> None:
        if (floor or contrast) and not judge_vqa.wants_vqa(rule, judge_model, judge_arg):
            raise UsageError("--floor and --contrast apply to the VQA judge (--rule vqa --judge-model M); the box "
                             "judge asks no questions.")
        if judge_vqa.wants_vqa(rule, judge_model, judge_arg):
            judge_vqa.refuse_box_options(dict(zip(judge_vqa.BOX_ONLY, (
                detector, detector_model, detector_arg, threshold, depth, depth_model, depth_arg,
                depth_region, rule_arg, seed, None if mode == "corrected" else mode), strict=True)))
            return judge_vqa.run_vqa_judge(task, run, out, judge_model, judge_arg, batch_size, device,
                                           skip_missing, partial, floor, contrast)
        _run(task, run, out, gallery, detector=detector or "owlvit", detector_model=detector_model,
             detector_arg=detector_arg, threshold=threshold, depth=depth, depth_model=depth_model,
             depth_arg=depth_arg, rule=rule, rule_arg=rule_arg, seed=seed or 0, batch_size=batch_size,
             device=device, skip_missing=skip_missing, depth_region=depth_region, partial=partial, mode=mode)

    command.__doc__ = (f"ISM (Box) for {task}: accuracy and macro-F1 on the whole set and the "
                       "recognized subset, recognized ratio, per-object results.")
    return command


def _judged_tasks() -> list[str]:
    """Every task whose task file names a judge rule (weight is not visible in an image: none)."""
    from spatialprobe import tasks

    return [name for name in tasks.names() if tasks.get(name).judge_rule]


for _task in _judged_tasks():
    judge_app.command(_task)(scale_options(hub_model_options(_make_task_command(_task))))


@judge_app.command("gallery")
def gallery(judged: Path = typer.Argument(..., help="A judge run directory."),
            out: Path | None = typer.Option(None, "--out", help="HTML file \\[default: JUDGED/gallery.html].")) -> None:
    """HTML gallery of a judged run: boxes drawn, depths, the rule's explanation, match with gold."""
    from spatialprobe.reports.gallery import write_gallery

    require_out_file(out)
    typer.echo(f"wrote {write_gallery(judged, out)}")


def visor(
    run: Path | None = typer.Argument(None, help="Image run of SR2D prompts (omit with --detections)."),
    detections: Path | None = typer.Option(None, "--detections", help="Detection results, released layout."),
    prompts: Path | None = typer.Option(None, "--prompts", help="SR2D JSON (released layout)."),
    out: Path | None = typer.Option(None, "--out", help="Run directory \\[default: runs/visor-DETECTOR-ID, "
                                    "or runs/visor-DETECTIONS-ID]."),
    detector: str | None = typer.Option(None, "--detector", help="RUN: registered detector \\[default: owlvit]."),
    detector_model: str | None = typer.Option(None, "--detector-model", help="RUN: checkpoint id or directory."),
    detector_arg: list[str] = typer.Option([], "--detector-arg", help="RUN: extra detector argument key=value."),
    threshold: float | None = typer.Option(None, "--threshold", min=0.0, max=1.0,
                                           help="RUN: detector score threshold [0.1, as VISOR]."),
    batch_size: int | None = typer.Option(None, "--batch-size", min=1, help="RUN: images per detector batch [8]."),
    device: str | None = typer.Option(None, "--device", help="RUN: auto, cpu or cuda \\[default: auto]."),
    partial: bool = PARTIAL,
    skip_missing: bool = SKIP_MISSING,
    rule: str | None = typer.Option(None, "--rule", help="vqa: a multimodal LLM asked whether each object "
                                    "is there and the relation holds, instead of a detector."),
    judge_model: str | None = typer.Option(None, "--judge-model", help="--rule vqa: the multimodal LLM "
                                           "(hf-mllm checkpoint id or directory)."),
    judge_arg: list[str] = typer.Option([], "--judge-arg", help="--rule vqa: hf-mllm argument key=value."),
) -> None:
    """VISOR: object accuracy (OA), VISOR, VISOR_cond, VISOR_1..N, per relation and per class."""
    if judge_vqa.visor_wants_vqa(rule, judge_model, judge_arg):
        judge_vqa.refuse_box_options({"--detections": detections, "--detector": detector,
                                      "--detector-model": detector_model, "--detector-arg": detector_arg,
                                      "--threshold": threshold})
        return judge_vqa.run_vqa_visor(run, prompts, out, judge_model, judge_arg, batch_size or 8,
                                       device or "auto", partial, skip_missing)
    from spatialprobe.judging.judged_images import image_run
    from spatialprobe.judging.visor import VisorRun, VisorRunSettings
    from spatialprobe.reports.tables import print_table
    from spatialprobe.runner import execute
    from spatialprobe.runner.folders import DefaultRunDir

    require_run_dir(out)
    detecting = {"--detector": detector, "--detector-model": detector_model, "--detector-arg": detector_arg,
                 "--threshold": threshold, "--batch-size": batch_size, "--device": device,
                 "--partial": partial, "--skip-missing": skip_missing}
    if detections is not None:
        if run is not None:
            raise UsageError("give an image RUN or --detections FILE, not both.")
        if prompts is None:
            raise UsageError("--detections needs --prompts (the SR2D JSON).")
        given = [name for name, value in detecting.items() if value]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise UsageError(f"{', '.join(given)} {verb} to an image RUN only; --detections were detected already.")
        target = out or DefaultRunDir(detections.stem)
        kind = VisorRun(VisorRunSettings({"detections": {"path": str(detections)}}, {"path": str(prompts)}))
    elif run is not None:
        require_image_run(run)
        spec = component_spec(detector or "owlvit", detector_model, detector_arg,
                     threshold=0.1 if threshold is None else threshold)
        target = out or DefaultRunDir(spec.name)
        kind = VisorRun(VisorRunSettings({"image_run": image_run(run, partial)},
                                         {"path": str(prompts)} if prompts else None, Component.of(spec),
                                         device=device or "auto", batch_size=batch_size or 8,
                                         skip_missing=skip_missing))
        if kind.skipped:  # never a silent skip
            warn(f"{kind.skipped} image(s) of {run} are not of spatial SR2D prompts (no "
                 "obj_1_attributes, obj_2_attributes and a left/right/above/below rel_type); "
                 "left out, counted in summary.json as non_spatial_skipped.")
    else:
        raise UsageError("give an image RUN, or --detections FILE --prompts FILE.")
    summary = execute(kind, target)
    out = Path(target)
    warn_skipped(summary["details"], "scored")
    print_table((out / "table.md").read_text(encoding="utf-8"))
    typer.echo(f"wrote {out}")


def register(app: typer.Typer) -> None:
    from spatialprobe.commands.judge_compare import compare

    judge_app.command("compare")(compare)
    app.add_typer(judge_app, name="judge")
    app.command("visor")(scale_options(hub_model_options(visor)))
