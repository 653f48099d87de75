"""``spatialprobe datasets ...``: list, show and export datasets."""

from __future__ import annotations

from pathlib import Path

import typer

from .errors import fail

datasets_app = typer.Typer(help="Build, inspect and export datasets.", no_args_is_help=True)


@datasets_app.command("list")
def list_datasets() -> None:
    """List the built-in datasets with their sizes and versions."""
    from rich.console import Console
    from rich.table import Table

    from .. import datasets

    table = Table("name", "task", "instances", "labels", "version")
    for name in datasets.builtin_names():
        ds = datasets.load(name)
        table.add_row(name, ds.task, str(len(ds)), ", ".join(ds.labels), ds.version)
    Console().print(table)


@datasets_app.command("export")
def export(
    name: str = typer.Argument(..., help="Built-in dataset name (size, height, posrel) or a file."),
    out: Path = typer.Option(..., "--out", help="JSON lines file to write (release format)."),
) -> None:
    """Write a dataset in the spatial-commonsense release format (JSON lines)."""
    from .. import datasets
    from ..store import write_jsonl

    ds = datasets.load(name)
    write_jsonl(out, datasets.to_release_records(ds))
    typer.echo(f"wrote {len(ds)} {ds.task} records ({ds.version}) to {out}")


@datasets_app.command("validate")
def validate(
    path: Path = typer.Argument(..., help="A release-format JSON lines file, or a pair file with --pairs."),
    task: str = typer.Option(None, help="size, height or posrel (default: guessed from the file)."),
    pairs: bool = typer.Option(False, "--pairs", help="Read PATH as CSV/TSV/JSONL comparison pairs."),
    first: str = typer.Option("obj_a", help="--pairs: column of the first object."),
    second: str = typer.Option("obj_b", help="--pairs: column of the second object."),
    answer: str = typer.Option("label", help="--pairs: column saying whether the first is larger/taller."),
    folds: int = typer.Option(5, min=2, help="Check that this many object-disjoint folds can be made."),
) -> None:
    """Check a data file before a long run: every line parsed, labels counted, folds buildable."""
    from collections import Counter

    from .. import datasets
    from .probe import check_folds

    try:
        ds = (datasets.load_pairs(path, task or "size", first=first, second=second, answer=answer)
              if pairs else datasets.load_release(path, task=task))
        check_folds(ds, folds)
        made = datasets.make_folds(ds, folds)
    except ValueError as err:  # DataError included: names the file, line and field
        fail(str(err))
    labels = Counter(inst.label for inst in ds.instances)
    keys = {key for inst in ds.instances for key in inst.fold_keys}
    typer.echo(f"{path}: {len(ds)} {ds.task} instances, version {ds.version}")
    typer.echo("labels: " + ", ".join(f"{label} {labels[label]}" for label in ds.labels))
    typer.echo(f"{len(keys)} objects; {folds} folds, dev/test sizes: "
               + ", ".join(f"{len(f.dev)}/{len(f.test)}" for f in made))


@datasets_app.command("build")
def build(
    name: str = typer.Argument(..., help="Dataset to build: sr2d."),
    out: Path = typer.Option(..., "--out", help="File to write: *.json in the released layout (a "
                             "list), *.jsonl as prompt lines for `spatialprobe synthesize`."),
    only: str = typer.Option("all", "--only", help="all, or spatial (the 25,280 prompts VISOR "
                             "scores; ids stay the released unique_ids)."),
) -> None:
    """Build a generated prompt set (sr2d: VISOR's SR2D over the 80 COCO classes)."""
    from ..datasets.sr2d import build_sr2d, is_spatial, prompt_lines
    from ..store import write_json, write_jsonl

    if name != "sr2d":
        raise typer.BadParameter(f"unknown buildable dataset {name!r}; choose from: sr2d")
    if only not in ("all", "spatial"):
        raise typer.BadParameter(f"--only must be all or spatial, got {only!r}")
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
