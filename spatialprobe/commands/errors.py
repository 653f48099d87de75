"""One way for a command to stop on bad input: a red ``Error: ...`` sentence on stderr, exit 2.

Exit code 2 is what click uses for its own usage errors, so a script sees one code for
"the input was refused, nothing ran" whichever layer refused it.
"""

from __future__ import annotations

from typing import NoReturn

import typer

EXIT_BAD_INPUT = 2


def fail(message: object) -> NoReturn:
    """Print ``Error: message`` (red, stderr) and end the command with exit code 2."""
    say_error(message)
    raise typer.Exit(EXIT_BAD_INPUT)


def say_error(message: object) -> None:
    """``Error: message`` in red on stderr (the one way every refusal is printed)."""
    typer.secho(f"Error: {message}", fg=typer.colors.RED, err=True)


def warn(message: str) -> None:
    """A yellow ``Warning: ...`` on stderr: the command goes on, but the user should know."""
    typer.secho(f"Warning: {message}", fg=typer.colors.YELLOW, err=True)


def require_out_dir(out, option: str = "--out") -> None:
    """Refuse an output path that is an existing regular file before any work starts."""
    if out is not None and out.exists() and not out.is_dir():
        fail(f"{option} {out} is a file, not a directory.")
