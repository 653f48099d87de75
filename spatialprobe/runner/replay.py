"""Replaying a run from its ``config.json`` (``spatialprobe run CONFIG``): honour every field or
refuse, say when an input changed, and confirm a finished run without writing a byte.

A replay rebuilds the run kind from the config (``from_spec``) and compares what it rebuilt
with what the config says:

- **inputs** (models and files, by fingerprint) that changed since the run: refused where a
  run already is (the recorded numbers are of the old inputs); into a new or empty ``--out`` it
  is a new run, and the command says which inputs changed;
- **settings** the rebuilt run does not have as the config says (a hand-edited ``task`` that
  the kind derives from another field): refused, naming them. A field is honoured or refused,
  never dropped.

A run replayed in its own directory whose results are all cached, and whose predictions are
what those results give, is **confirmed** by reading it: nothing is computed or written.
"""

from __future__ import annotations

import json
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


def _predictions(path: Path) -> list[Any] | None:
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError):
        return None


def confirm_in_place(kind: Any, recorded: dict[str, Any], rebuilt: RunSpec, out: Path) -> bool:
    """Whether the run in ``out`` is ``rebuilt``'s, finished, and its predictions are what its
    cached results give: read only (the lock is taken, so no writer is mid-way)."""
    from spatialprobe.runner.spine import ResultCache, RunKind
    from spatialprobe.store import RunDir

    summary_path = out / "summary.json"
    own_files = type(kind).prepare is not RunKind.prepare  # synthesize, vsr-train check their files on resume
    if not same_identity(recorded, rebuilt) or not summary_path.exists() or own_files:
        return False
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(summary, dict) or summary.get("identity") != recorded.get("identity"):
        return False
    run = RunDir(out)
    run.lock()
    results = ResultCache(run).get_all()
    items = kind.items()
    if any(item.key not in results for item in items):
        return False
    evaluation = kind.evaluate({item.key: results[item.key] for item in items})
    return _predictions(out / "predictions.jsonl") == canonical(evaluation.predictions)
