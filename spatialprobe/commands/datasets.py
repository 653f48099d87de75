"""``spatialprobe datasets ...``: list, show and export datasets."""

from __future__ import annotations

from pathlib import Path

import typer

datasets_app = typer.Typer(help="Build, inspect and export datasets.", no_args_is_help=True)


@datasets_app.command("list")
def list_datasets() -> None:
    """List the built-in datasets with their sizes and versions."""
    from rich.console import Console
    from rich.table import Table

    from .. import datasets

    table = Table("name", "task", "instances", "labels", "version")
    for name in datasets.BUILTIN:
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
