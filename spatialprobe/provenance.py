"""Provenance a reviewer can check: what produced a run's numbers, in its ``config.json`` and
``summary.json`` (key ``provenance``).

```
{"toolkit": "spatialprobe", "toolkit_version": "0.4.0",
 "git": {"commit": "1a2b...", "dirty": false},   # only when the toolkit runs from a git clone
 "command": ["spatialprobe", "probe", "size", ...],   # the command line (sys.argv) as given
 "python": "3.11.7", "torch_version": ..., "transformers_version": ..., "diffusers_version": ...,
 "created": "2026-11-24T03:00:00+0000",
 "devices": [{"component": "text scorers", "device": "cpu", "dtype": "float32"}],  # summary only
 "resumed": [{"created": ..., "command": [...]}]}  # summary only: later invocations that computed
```

``devices`` lists what the run's components resolved through :mod:`spatialprobe.loading`'s one
precision rule (``resolve_precision``): a device and a dtype per component, known only once the
models are loaded, so it is in ``summary.json``; an empty list means no model ran (the dummy
scorer, the shapes backend, the colour detector).
"""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from spatialprobe import __version__

_SOURCE = Path(__file__).resolve().parent.parent
"""The folder the ``spatialprobe`` package was imported from (a clone's root, or site-packages)."""


@functools.lru_cache(maxsize=1)
def git_state(root: Path = _SOURCE) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the clone the toolkit runs from; None when it is not a git
    clone's root (an installed wheel, whose site-packages may sit inside someone else's repo)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root:
            return None
        return {"commit": git("rev-parse", "HEAD"),
                "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.SubprocessError):  # no git, not a repository, a timeout
        return None


def provenance() -> dict[str, Any]:
    """What produced an output: toolkit (and its git commit), command line, libraries, host, time."""
    info: dict[str, Any] = {"toolkit": "spatialprobe", "toolkit_version": __version__}
    state = git_state()
    if state is not None:
        info["git"] = state
    info.update(command=list(sys.argv), python=platform.python_version(),
                created=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    from importlib.metadata import PackageNotFoundError, version

    for lib in ("torch", "transformers", "diffusers"):
        with suppress(PackageNotFoundError):  # not installed
            info[f"{lib}_version"] = version(lib)
    return info
