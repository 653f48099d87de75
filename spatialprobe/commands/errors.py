"""The one CLI error path: a one-sentence message on stderr and exit code 2."""

from __future__ import annotations

from typing import NoReturn

import typer


def fail(message: str) -> NoReturn:
    typer.secho(f"Error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=2)
