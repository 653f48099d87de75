"""The ``spatialprobe`` command line: a thin layer over the Python API.

Each module in ``COMMAND_MODULES`` exposes ``register(app)`` and adds its commands; heavy
imports (torch, transformers) live inside the command bodies so ``--help`` stays fast.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    help="Probe language, vision-language and text-to-image models for spatial commonsense.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)

COMMAND_MODULES = (
    "spatialprobe.commands.probe",
    "spatialprobe.commands.datasets",
    "spatialprobe.commands.prompts",
    "spatialprobe.commands.generalize",
    "spatialprobe.commands.qa",
    "spatialprobe.commands.convert",
    "spatialprobe.commands.vl",
    "spatialprobe.commands.synthesis",
    "spatialprobe.commands.judge",
    "spatialprobe.commands.annotate",
    "spatialprobe.commands.run",
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


@app.command("ls")
def list_components() -> None:
    """List registered components (scorers, synthesizers, detectors, ...) by kind."""
    from rich.console import Console
    from rich.table import Table

    from spatialprobe import registry

    table = Table("kind", "name", "what it is")
    for kind in registry.kinds():
        for name, summary in registry.summaries(kind).items():
            table.add_row(kind, name, summary)
    Console().print(table)


@app.command("version")
def version() -> None:
    """Print the toolkit version."""
    from spatialprobe import __version__

    typer.echo(__version__)


def main() -> None:
    """The console script: a missing optional extra is one line on stderr and exit status 2."""
    from spatialprobe.extras import MissingExtra

    try:
        app()
    except MissingExtra as err:
        typer.echo(f"error: {err}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
