"""The ``spatialprobe`` command line: a thin layer over the Python API.

Each module in ``COMMAND_MODULES`` exposes ``register(app)`` and adds its commands; heavy
imports (torch, transformers) live inside the command bodies so ``--help`` stays fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer

from spatialprobe.commands.scale_options import BareRayGroup


class CommandGroup(BareRayGroup):
    """The app's group: ``--ray`` may stand alone (:class:`BareRayGroup`), and every command runs
    inside :func:`refused`, the one place a refusal is caught (the console script and a test's
    ``CliRunner`` alike)."""

    def invoke(self, ctx: Any) -> Any:
        with refused():
            return super().invoke(ctx)


app = typer.Typer(
    cls=CommandGroup,  # `--ray` alone starts a local Ray cluster, for every run command
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
    "spatialprobe.commands.bench",
    "spatialprobe.commands.synthesis",
    "spatialprobe.commands.judge",
    "spatialprobe.commands.annotate",
    "spatialprobe.commands.replay",
    "spatialprobe.commands.compare",
    "spatialprobe.commands.audit",
    "spatialprobe.commands.interop",
    "spatialprobe.commands.tiny",
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


@app.command("ls")
def list_components() -> None:
    """List registered components (scorers, synthesizers, detectors, ...) by kind."""
    from rich.console import Console
    from rich.table import Table

    from spatialprobe import registry
    from spatialprobe.judging.rulebook import lookup as judge_rules

    table = Table("kind", "name", "what it is")
    for kind in registry.kinds():
        for name, summary in registry.summaries(kind).items():
            if kind == "model":  # what --scorer-arg key=value takes
                from spatialprobe.models.options import listing

                summary += f"; options: {listing(name)}"
            elif kind in judge_rules.JUDGE_KINDS:  # the rule's record: tasks, thresholds, modes, score
                summary += judge_rules.listing(name)
            table.add_row(kind, name, summary)
    Console().print(table)


@app.command("version")
def version() -> None:
    """Print the toolkit version."""
    from spatialprobe import __version__

    typer.echo(__version__)


def main() -> None:
    """The console script: the app, every refusal caught by :func:`refused` (its group's too)."""
    with refused(), interrupted():
        app()


@contextmanager
def interrupted() -> Iterator[None]:
    """Ctrl-C (typer turns it into exit status 130): one line saying that what a run committed
    is kept and the same command resumes it, and the status stays 130."""
    try:
        yield
    except SystemExit as err:
        if err.code == 130:
            typer.secho("Interrupted (Ctrl-C): what a run had committed is kept; run the same command "
                        "again to resume it.", fg=typer.colors.RED, err=True)
        raise


@contextmanager
def refused() -> Iterator[None]:
    """The one catcher: every refusal (:class:`~spatialprobe.errors.SpatialprobeError`) is one red
    sentence on stderr and exit status 2. A CUDA out-of-memory and a full or read-only disk get a
    sentence of their own; anything else is a bug and keeps its traceback."""
    from spatialprobe.errors import SpatialprobeError

    try:
        yield
    except SpatialprobeError as err:
        _refuse(err)
    except OSError as err:
        message = disk_message(err)
        if message is None:
            raise
        _refuse(message)
    except RuntimeError as err:
        if type(err).__name__ != "OutOfMemoryError" and "out of memory" not in str(err):
            raise
        _refuse("the device ran out of memory. Lower --batch-size (or use a smaller model, "
                "--precision fp16/bf16 where the command takes it, or --device cpu); "
                "finished work is kept and a rerun resumes.")


def _refuse(message: object) -> NoReturn:
    from spatialprobe.commands.console import EXIT_BAD_INPUT, say_error

    say_error(message)
    raise SystemExit(EXIT_BAD_INPUT) from None


def disk_message(err: OSError) -> str | None:
    """One sentence naming the path for a full disk, a read-only file system or a permission
    refused on an output; ``None`` for any other OS error (a bug keeps its traceback)."""
    import errno

    reasons = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
               errno.EROFS: "the file system is read-only", errno.EACCES: "permission is denied"}
    if err.errno not in reasons:
        return None
    where = err.filename or "an output file"
    return (f"cannot write {where}: {reasons[err.errno]}. Finished work is kept; free space or "
            "choose another --out, and run the same command again to resume.")


if __name__ == "__main__":
    main()
