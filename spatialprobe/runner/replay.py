"""Replaying a run from its ``config.json`` (``spatialprobe run CONFIG``): honour every field or
refuse, and say when an input changed.

A replay rebuilds the run kind from the config (``from_spec``) and compares what it rebuilt
with what the config says:

- **inputs** (models and files, by fingerprint) that changed since the run: refused where a
  run already is (the recorded numbers are of the old inputs); into a new or empty ``--out`` it
  is a new run, and the command says which inputs changed;
- **settings** the rebuilt run does not have as the config says (a hand-edited ``task`` that
  the kind derives from another field): refused, naming them. A field is honoured or refused,
  never dropped.

A finished run replayed in its own directory is confirmed by the spine (nothing computed, no
byte written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spatialprobe.errors import UsageError
from spatialprobe.fingerprints import changed_inputs
from spatialprobe.runner.spec import RunSpec, canonical, differences, same_identity


def is_new_folder(path: Path) -> bool:
    """A folder a replay may make a new run in: absent, or an empty directory."""
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def check_replay(config: Path, recorded: dict[str, Any], rebuilt: RunSpec, out: Path) -> list[str]:
    """Refuse a replay that would not mean what the config says; return what changed since the
    run (a new run in a new ``out``: the caller says so).

    A config whose settings still hash to its recorded identity was not edited: whatever the
    rebuilt run has otherwise comes from its inputs (a model, a file, an image run) having
    changed. An edited config must be rebuilt as it reads, field for field."""
    changed = changed_inputs(recorded.get("inputs") or {}, canonical(rebuilt.inputs)) \
        if "inputs" in recorded else []
    differ = differences(canonical(recorded.get("settings") or {}), canonical(rebuilt.settings))
    more = f" and {len(differ) - 5} more" if len(differ) > 5 else ""
    if differ and not same_identity(recorded, RunSpec.from_dict(recorded)):
        raise UsageError(
            f"{config}: the {rebuilt.kind} run rebuilt from this config does not have the settings "
            f"it gives ({'; '.join(differ[:5])}{more}: config -> rebuilt); a field of a run config "
            "is honoured or refused, never dropped: undo the edit, or run the command with the "
            "options you want.")
    if differ:
        changed.append(f"settings that differ: {'; '.join(differ[:5])}{more}")
    if changed and not is_new_folder(out):
        raise UsageError(f"{config}: {'; '.join(changed)}. Its results are of the old inputs: replay "
                         "into a new --out directory to make a run of the new ones.")
    return changed
