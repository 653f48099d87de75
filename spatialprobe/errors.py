"""ONE error vocabulary: every refusal a user can fix is a :class:`SpatialprobeError`.

``spatialprobe.cli.main`` catches the base once and prints its message as one sentence (exit 2).
Anything else that escapes a command is a bug and keeps its traceback. The subclasses also derive
from the built-in error they replace (``ValueError``, ``KeyError``, ...), so library callers that
catch those keep working.

==================  =============================================================================
class               raised when
==================  =============================================================================
UsageError          options that do not apply, contradict each other or are out of range
DataError           a user's file is malformed: names the file, line and field
ModelLoadError      a model, tokenizer or processor cannot be had: says what to do
RunInUse            another process holds the run directory's lock
UnknownComponent    a registered name (scorer, detector, task, ...) that does not exist
MissingExtra        an optional dependency is absent: names the extra that installs it
OutputError         an output path cannot be written (a directory taken by something else, a
                    full disk, a read-only file system): names the path
==================  =============================================================================
"""

from __future__ import annotations

from pathlib import Path


class SpatialprobeError(Exception):
    """A refusal the user can act on; its message is one sentence."""


class UsageError(SpatialprobeError, ValueError):
    """Options that do not apply, contradict each other or are out of range."""


class DataError(SpatialprobeError, ValueError):
    """Bad input data, located by file, line and field."""

    def __init__(self, path: str | Path, line: int | None, field: str | None, message: str):
        self.path, self.line, self.field = str(path), line, field
        where = f"{path}" + (f", line {line}" if line else "") + (f", field '{field}'" if field else "")
        super().__init__(f"{where}: {message}")


class ModelLoadError(SpatialprobeError, RuntimeError):
    """A pretrained model, tokenizer or processor could not be loaded; the message says what to do."""


class RunInUse(SpatialprobeError, ValueError):
    """Another process holds the run directory's lock."""


class UnknownComponent(SpatialprobeError, KeyError):
    """A name that is not registered; the message lists close matches and what is available."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class MissingExtra(SpatialprobeError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it."""

    def __init__(self, module: str, extra: str, subject: str):
        self.module, self.extra = module, extra
        super().__init__(f"{subject} needs the '{extra}' extra: pip install 'spatialprobe[{extra}]' "
                         f"(missing module: {module})", name=module)


class OutputError(SpatialprobeError, OSError):
    """An output cannot be written where it was asked for; the message names the path."""
