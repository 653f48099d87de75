"""Where a run writes when ``--out`` is left out: ONE rule for every command.

    runs/KIND-NAME...-IDENTITY8          under the current directory

``KIND`` is the run kind (``probe``, ``qa``, ``judge``, ...), ``NAME...`` what the command names
the run by (task, model, detector, ...: ``probe size --model org/bert-base`` gives
``runs/probe-size-bert-base-1a2b3c4d``), and ``IDENTITY8`` the first 8 hex digits of the run's
identity (:class:`~spatialprobe.runner.spec.RunSpec`). The same command resumes its own folder;
a run of other settings gets another folder, so a default folder never holds a run it is not.

The identity is known only once the run kind has resolved its spec (a model's weights hash
among it), so a command passes a :class:`DefaultRunDir` and the spine names the folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

RUNS_ROOT = Path("runs")
"""Default runs go here, relative to the directory the command runs in."""


def slug(name: str) -> str:
    """A model id or path as one folder-name part: its last component, odd characters as ``_``."""
    last = str(name).rstrip("/\\").replace("\\", "/").split("/")[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", last).strip("._") or "run"


def default_run_dir(kind: str, names: tuple[str, ...], identity: str) -> Path:
    """THE default output folder of a run (see the module docstring)."""
    parts = [slug(kind), *(slug(name) for name in names if name), identity[:8]]
    return RUNS_ROOT / "-".join(parts)


class DefaultRunDir:
    """``--out`` left out: :func:`default_run_dir` of the run's names, resolved by the spine once
    the identity is known. ``path`` (and ``os.fspath``) is the folder after the run."""

    def __init__(self, *names: str | None):
        self.names = tuple(str(name) for name in names if name)
        self.path: Path | None = None

    def resolve(self, kind: str, identity: str) -> Path:
        self.path = default_run_dir(kind, self.names, identity)
        return self.path

    def __fspath__(self) -> str:
        if self.path is None:
            raise RuntimeError("the default run folder is named once the run has started")
        return os.fspath(self.path)


RunOut = str | os.PathLike[str] | DefaultRunDir
"""What a run writes into: a folder, or the default one."""


def run_folder(out: RunOut, kind: str, identity: str) -> Path:
    """The folder ``out`` names for a run of ``kind`` and ``identity``."""
    return out.resolve(kind, identity) if isinstance(out, DefaultRunDir) else Path(out)
