"""``spatialprobe models``: tiny untrained models of every family the toolkit asks, built offline
(:mod:`spatialprobe.tiny`), to try every command end to end on a machine with no network."""

from __future__ import annotations

from pathlib import Path

import typer

from spatialprobe.commands.declared import command_group

models_app = command_group("Tiny untrained models of every family, built offline, to try the toolkit.")


@models_app.command("tiny")
def tiny_command(
    family: str = typer.Argument(..., help="bert, roberta, gpt2, t5, clip, siglip, vilt, vilt-vqa, llava or smolvlm "
                                 "(spatialprobe models list)."),
    out: Path | None = typer.Option(None, "--out", help="The folder to save it in \\[default: tiny-models/FAMILY]."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random weights."),
) -> None:
    """Build a tiny UNTRAINED FAMILY model offline (random weights, a tokenizer learnt from the
    toolkit's texts, an image processor of explicit sizes) and save it: a checkpoint folder as any
    command takes one. Its numbers mean nothing, and every run of it says so."""
    from spatialprobe.commands.output_checks import require_out_dir
    from spatialprobe.tiny import FAMILIES, MARKER, build

    folder = out if out is not None else Path("tiny-models") / family
    require_out_dir(folder)
    build(family, folder, seed)
    typer.echo(f"Tiny UNTRAINED {family} model written to {folder} ({MARKER} says so); try it: "
               f"{FAMILIES[family].asks.replace('MODEL', str(folder))}")


@models_app.command("list")
def list_command() -> None:
    """The families ``models tiny`` builds, what each is, and a command that asks it."""
    from rich.console import Console
    from rich.table import Table

    from spatialprobe.tiny import FAMILIES

    table = Table("family", "what it is", "try it")
    for name, family in FAMILIES.items():
        table.add_row(name, family.what, family.asks.replace("MODEL", f"tiny-models/{name}"))
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")
