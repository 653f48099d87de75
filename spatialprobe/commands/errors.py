"""One way for a command to stop on bad input: a red ``Error: ...`` sentence on stderr, exit 2.

Exit code 2 is what click uses for its own usage errors, so a script sees one code for
"the input was refused, nothing ran" whichever layer refused it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
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


def require_out_dir(out: Path | None, option: str = "--out") -> None:
    """Refuse an output folder path that is an existing regular file before any work starts."""
    if out is not None and out.exists() and not out.is_dir():
        fail(f"{option} {out} is a file, not a directory.")


def require_run_dir(out: Path | None, option: str = "--out") -> None:
    """Refuse, before any model loads, a run folder the run may not own (the one rule,
    :func:`spatialprobe.store.require_own_folder`, which the run spine applies again)."""
    from spatialprobe.errors import OutputError
    from spatialprobe.store import require_own_folder

    if out is None:
        return
    try:
        require_own_folder(out, option)
    except OutputError as err:
        fail(err)


def require_out_file(out: Path | None, option: str = "--out",
                     reason: str = "give the path of the file to write") -> None:
    """Refuse an output file path that is an existing directory (or lies under a file) before any
    work starts: every command that writes one file checks its path here."""
    if out is None:
        return
    if out.is_dir():
        fail(f"{option} {out} is a directory; {reason}.")
    blocker = next((p for p in out.parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        fail(f"{option} {out}: {blocker} is a file, not a directory.")


@contextmanager
def refusals() -> Iterator[None]:
    """Inside a command: any :class:`~spatialprobe.errors.SpatialprobeError` ends it with its one
    sentence and exit code 2 (what ``cli.main`` does, also where the app is invoked directly)."""
    from spatialprobe.errors import SpatialprobeError

    try:
        yield
    except SpatialprobeError as err:
        fail(err)
