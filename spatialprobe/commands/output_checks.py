"""The output paths a command refuses before any work starts (a refusal is a raised
:class:`~spatialprobe.errors.UsageError` or :class:`~spatialprobe.errors.OutputError`, one
sentence and exit code 2 through the CLI's one catcher)."""

from __future__ import annotations

from pathlib import Path

from spatialprobe.errors import UsageError


def require_out_dir(out: Path | None, option: str = "--out") -> None:
    """Refuse an output folder path that is an existing regular file before any work starts."""
    if out is not None and out.exists() and not out.is_dir():
        raise UsageError(f"{option} {out} is a file, not a directory.")


def require_run_dir(out: Path | None, option: str = "--out") -> None:
    """Refuse, before any model loads, a run folder the run may not own (the one rule,
    :func:`spatialprobe.store.require_own_folder`, which the run spine applies again)."""
    from spatialprobe.store import require_own_folder

    if out is not None:
        require_own_folder(out, option)


def require_out_file(out: Path | None, option: str = "--out",
                     reason: str = "give the path of the file to write") -> None:
    """Refuse an output file path that is an existing directory (or lies under a file) before any
    work starts: every command that writes one file checks its path here."""
    if out is None:
        return
    if out.is_dir():
        raise UsageError(f"{option} {out} is a directory; {reason}.")
    blocker = next((p for p in out.parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise UsageError(f"{option} {out}: {blocker} is a file, not a directory.")
