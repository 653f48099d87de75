"""What a command says on stderr besides its result: a refusal's one red sentence (printed by the
one catcher, :func:`spatialprobe.cli.refused`, for every :class:`~spatialprobe.errors.SpatialprobeError`
a command raises) and a yellow warning when the command goes on.

Exit code 2 is what click uses for its own usage errors, so a script sees one code for "the input
was refused, nothing ran" whichever layer refused it.
"""

from __future__ import annotations

import typer

EXIT_BAD_INPUT = 2


def say_error(message: object) -> None:
    """``Error: message`` in red on stderr (the one way every refusal is printed)."""
    typer.secho(f"Error: {message}", fg=typer.colors.RED, err=True)


def warn(message: str) -> None:
    """A yellow ``Warning: ...`` on stderr: the command goes on, but the user should know."""
    typer.secho(f"Warning: {message}", fg=typer.colors.YELLOW, err=True)
