"""``spatialprobe datasets ...``: list, show and export datasets."""

from __future__ import annotations

from pathlib import Path

import typer

from spatialprobe.commands.declared import command_group
from spatialprobe.commands.output_checks import require_out_dir, require_out_file
from spatialprobe.errors import UsageError

datasets_app = command_group("Build, inspect and export datasets.")


@datasets_app.command("list")
def list_datasets() -> None:
    """List the built-in datasets with their sizes and versions."""
    from rich.console import Console
    from rich.table import Table

    from spatialprobe.tasks import data as task_data

    table = Table("name", "task", "instances", "labels", "version")
    for name in task_data.builtin_names():
        ds = task_data.load(name)
        table.add_row(name, ds.task, str(len(ds)), ", ".join(ds.labels), ds.version)
    Console().print(table)


EXPORT_FORMATS = ("release", "lm-eval")


@datasets_app.command("export")
def export(
    name: str = typer.Argument(..., help="Built-in dataset name (size, height, posrel, weight) or a "
                               "release-format file."),
    out: Path = typer.Option(..., "--out", help="release: the JSON lines file to write; lm-eval: the "
                             "folder for the task's YAML and JSON lines (pass it as --include_path)."),
    fmt: str = typer.Option("release", "--format", help="release (the spatial-commonsense JSON lines) "
                            "or lm-eval (an lm-evaluation-harness multiple-choice task)."),
    style: str = typer.Option(None, "--style", help="lm-eval only: cloze (the manual prompt cut at its "
                              "mask) or question (\"Question: ... Answer:\") \\[default: cloze]."),
    seed: int | None = typer.Option(None, "--seed", help="lm-eval only: the seed of the docs' shuffled order "
                                    "(recorded in the YAML) \\[default: 0]."),
) -> None:
    """Write a dataset in the release format (JSON lines) or as an lm-evaluation-harness task."""
    from spatialprobe.tasks import data as task_data

    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}.")
    if fmt == "release" and style is not None:
        raise UsageError("--style applies to --format lm-eval only; the release format has no prompt.")
    if fmt == "release" and seed is not None:
        raise UsageError("--seed applies to --format lm-eval only; the release format keeps the dataset's order.")
    if fmt == "release":
        require_out_file(out, reason="--format release writes one JSON lines file")
    if fmt == "lm-eval":
        from spatialprobe.prompts.lm_eval_export import STYLES

        if (style or STYLES[0]) not in STYLES:
            raise UsageError(f"--style must be one of {', '.join(STYLES)}, not {style!r}.")
        require_out_dir(out)
        if out.suffix in (".jsonl", ".json", ".yaml", ".yml") and not out.is_dir():
            raise UsageError(f"--out {out} names a file; --format lm-eval writes a folder (its YAML and JSON lines).")
    try:
        ds = task_data.load(name)
    except ValueError as err:  # DataError included: names the file, line and field
        raise UsageError(str(err)) from None
    if fmt == "release":
        from spatialprobe.files import write_jsonl

        write_jsonl(out, task_data.to_release_records(ds))
        typer.echo(f"wrote {len(ds)} {ds.task} records ({ds.version}) to {out}")
        return
    from spatialprobe.prompts.lm_eval_export import export_lm_eval

    task, config, data = export_lm_eval(ds, out, style or STYLES[0], seed or 0)  # OutputError: another task there
    typer.echo(f"wrote lm-eval task {task} ({len(ds)} {ds.task} instances, {ds.version}): {config}, {data}")
    typer.echo(f"run: lm_eval --model hf --model_args pretrained=MODEL --include_path {out} --tasks {task}")


KINDS = ("data", "qa", "candidates", "prompts")


@datasets_app.command("validate")
def validate(
    path: Path = typer.Argument(..., help="A release-format JSON lines file, a pair file with --pairs, "
                                "or a QA, candidates or prompts file with --kind."),
    task: str = typer.Option(None, help="A task (spatialprobe ls) \\[default: guessed from the file; size "
                             "for --pairs]."),
    pairs: bool = typer.Option(False, "--pairs", help="Read PATH as CSV/TSV/JSONL comparison pairs."),
    first: str = typer.Option(None, help="--pairs: column of the first object \\[default: obj_a]."),
    second: str = typer.Option(None, help="--pairs: column of the second object \\[default: obj_b]."),
    answer: str = typer.Option(None, help="--pairs: column saying whether the first is larger/taller "
                               "\\[default: label]."),
    delimiter: str = typer.Option(None, help="--pairs: CSV delimiter \\[default: by suffix]."),
    allow_duplicates: bool = typer.Option(False, "--allow-duplicates",
                                          help="--pairs: keep repeated rows (counted) instead of refusing them."),
    folds: int = typer.Option(5, min=2, help="Check that this many object-disjoint folds can be made."),
    kind: str = typer.Option("data", "--kind", help="data (probe --data/--pairs), qa (qa --data), "
                             "candidates (probe --candidates) or prompts (synthesize --prompts)."),
) -> None:
    """Check a file before a long run, with the same checks the command that reads it makes:
    every line parsed and checked against the task, labels counted, folds buildable."""
    from spatialprobe.validate import task_name

    if kind not in KINDS:
        raise UsageError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}.")
    if kind != "data" and (pairs or first or second or answer or delimiter or allow_duplicates):
        raise UsageError(f"--pairs and its options apply to --kind data, not --kind {kind}.")
    try:
        if task is not None:
            task_name(task)
        if kind == "data":
            _validate_data(path, task, pairs, first, second, answer, delimiter, allow_duplicates, folds)
        else:
            _validate_other(path, task, kind)
    except ValueError as err:  # DataError and UsageError included: one sentence naming file, line, field
        raise UsageError(str(err)) from None


def _validate_data(path: Path, task: str | None, pairs: bool, first, second, answer, delimiter,
                   allow_duplicates: bool, folds: int) -> None:
    from collections import Counter

    from spatialprobe.commands.console import warn
    from spatialprobe.tasks.folds import make_folds
    from spatialprobe.tasks.probe_data import data_notes, pair_options, task_data
    from spatialprobe.tasks.release import guess_task

    pair_options(pairs, first, second, answer, delimiter, allow_duplicates)
    task = task or ("size" if pairs else guess_task(path))
    ds, _ = task_data(task, None if pairs else path, path if pairs else None, first=first, second=second,
                      answer=answer, delimiter=delimiter, allow_duplicates=allow_duplicates)
    for note in data_notes(ds, folds, allow_duplicates=allow_duplicates):
        warn(note)
    made = make_folds(ds, folds)
    labels = Counter(inst.label for inst in ds.instances)
    keys = {key for inst in ds.instances for key in inst.fold_keys}
    typer.echo(f"{path}: {len(ds)} {ds.task} instances, version {ds.version}")
    typer.echo("labels: " + ", ".join(f"{label} {labels[label]}" for label in ds.labels))
    typer.echo(f"{len(keys)} objects; {folds} folds, dev/test sizes: "
               + ", ".join(f"{len(f.dev)}/{len(f.test)}" for f in made))


def _validate_other(path: Path, task: str | None, kind: str) -> None:
    if kind == "qa":
        from spatialprobe.tasks.yes_no import questions_for

        qa, name = questions_for(task, path)
        typer.echo(f"{path}: {len(qa)} {qa.task} questions ({name})")
    elif kind == "candidates":
        from spatialprobe.prompts.templates import load_candidates

        if task is None:
            raise UsageError("--kind candidates needs --task: a candidates file is checked against its task.")
        from spatialprobe import tasks

        cands = load_candidates(path, task)
        typer.echo(f"{path}: {len(cands.templates)} templates, "
                   f"{len(cands.answer_sets(tasks.labels_of(task)))} answer sets for {task}")
    else:
        from spatialprobe.synthesis.prompt_sets import load_prompts

        if task is not None:
            raise UsageError("--task does not apply to --kind prompts: each prompt line names its own task.")
        prompts = load_prompts(str(path))
        typer.echo(f"{path}: {len(prompts.items)} prompts")
        for note in prompts.notes:
            typer.echo(f"note: {note}")


@datasets_app.command("build")
def build(
    name: str = typer.Argument(..., help="Dataset to build: sr2d."),
    out: Path = typer.Option(..., "--out", help="File to write: *.json in the released layout (a "
                             "list), *.jsonl as prompt lines for `spatialprobe synthesize`."),
    only: str = typer.Option("all", "--only", help="all, or spatial (the 25,280 prompts VISOR "
                             "scores; ids stay the released unique_ids)."),
) -> None:
    """Build a generated prompt set (sr2d: VISOR's SR2D over the 80 COCO classes)."""
    from spatialprobe.files import write_json, write_jsonl
    from spatialprobe.tasks.sr2d import build_sr2d, is_spatial, prompt_lines

    if name != "sr2d":
        raise UsageError(f"unknown buildable dataset {name!r}; choose from: sr2d")
    if only not in ("all", "spatial"):
        raise UsageError(f"--only must be all or spatial, got {only!r}")
    require_out_file(out)
    records = build_sr2d()
    if only == "spatial":
        records = [r for r in records if is_spatial(r)]
    if out.suffix == ".jsonl":
        write_jsonl(out, prompt_lines(records))
        typer.echo(f"wrote {len(records)} SR2D prompts to {out} (prompt lines: spatialprobe "
                   f"synthesize --prompts {out} -n 4)")
    else:
        write_json(out, records)
        typer.echo(f"wrote {len(records)} SR2D prompts to {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(datasets_app, name="datasets")
