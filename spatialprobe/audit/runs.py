"""A run folder as the audits read it: the source its config.json names, and its rows."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any


def run_source(path: Path) -> tuple[Any, list[dict[str, Any]]]:
    """(the source a run folder's config.json names, replayed; its rows of the first condition),
    the items of both the source's own (not the variants a run generated)."""
    from spatialprobe.errors import UsageError
    from spatialprobe.files import read_jsonl
    from spatialprobe.sources.rebuild import replay
    from spatialprobe.sources.variants import generated

    for name in ("config.json", "predictions.jsonl"):
        if not (path / name).is_file():
            raise UsageError(f"{path} has no {name}: not a finished run folder.")
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{path / 'config.json'} is not readable JSON ({str(err).splitlines()[0][:80]}).") from None
    settings = (config.get("settings") if isinstance(config, dict) else None) or {}
    if "source" not in settings:
        raise UsageError(f"{path} is a {config.get('kind')} run, which asks no source's items; audit an ask "
                         "run (vsr, spatialmqa, qa, probe with a multimodal LLM).")
    source = replay(settings["source"], int(settings.get("seed", 0)))
    first = (settings.get("conditions") or [None])[0]
    rows = [r for r in read_jsonl(path / "predictions.jsonl") if first is None or r.get("condition") == first]
    # a run's --protocol-variants are no items of the source: the audits read its own
    return replace(source, items=tuple(i for i in source.items if not generated(i))), \
        [r for r in rows if not generated(r)]
