"""A run folder as the audits read it: the source its config.json names, and its rows.

A native ask run replays its source (:func:`spatialprobe.engine.rebuild.rebuild_source`). An ``imported``
run (:mod:`spatialprobe.interop.imported_run`) has the items its log kept: where it was joined to an engine
source (``--source vsr --data FILE``), that source's items, keyed by their id or their position
in the file as the import joined them; where its rows keep the option texts as asked (VLMEvalKit's
``A``, ``B``, ... columns, lm-eval's ``doc.choices``, Inspect's ``choices``, Every Eval Ever's
``input.choices``, ``plain --options``), items built from them (lettered A, B, ..., the gold read
as an option's text, its letter or its position), with the joined source's clusters where there is
one, else the log's. Its rows' ``pred`` is then the harness's verdict in the items' labels: the gold
where the harness scored the item right, ``--`` where it extracted nothing (no prediction, or, where
the options are known, one naming none of them), ``(wrong)`` otherwise.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

WRONG = "(wrong)"
"""The label an imported row's prediction reads as where the harness scored it wrong."""


def run_config(path: Path) -> dict[str, Any]:
    """A finished run folder's ``config.json``; refused where it is not one."""
    from spatialprobe.errors import UsageError

    for name in ("config.json", "predictions.jsonl"):
        if not (path / name).is_file():
            raise UsageError(f"{path} has no {name}: not a finished run folder.")
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{path / 'config.json'} is not readable JSON ({str(err).splitlines()[0][:80]}).") from None
    if not isinstance(config, dict):
        raise UsageError(f"{path / 'config.json'} is not a run's config (not a JSON object).")
    return config


def run_source(path: Path) -> tuple[Any, list[dict[str, Any]]]:
    """(the source a run folder's config.json names, replayed; its rows of the first condition),
    the items of both the source's own (not the variants a run generated); for an imported run,
    :func:`imported_source`."""
    from spatialprobe.engine.rebuild import rebuild_source
    from spatialprobe.engine.variants import generated
    from spatialprobe.errors import UsageError
    from spatialprobe.files import read_jsonl

    config = run_config(path)
    settings = config.get("settings") or {}
    if config.get("kind") == "imported":
        return imported_source(path, settings)
    if "source" not in settings:
        raise UsageError(f"{path} is a {config.get('kind')} run, which asks no source's items; audit an ask "
                         "run (vsr, spatialmqa, qa, probe with a multimodal LLM) or an imported one.")
    source = rebuild_source(settings["source"], int(settings.get("seed", 0)))
    first = (settings.get("conditions") or [None])[0]
    rows = [r for r in read_jsonl(path / "predictions.jsonl") if first is None or r.get("condition") == first]
    # a run's --protocol-variants are no items of the source: the audits read its own
    return replace(source, items=tuple(i for i in source.items if not generated(i))), \
        [r for r in rows if not generated(r)]


def gold_index(gold: Any, options: tuple[str, ...]) -> int | None:
    """The option a log's gold names: by its text (case and spaces ignored), else as a letter
    (``B``, ``(B)``), else as a position (``1``); None where it names none."""
    import re

    value = str(gold).strip()
    texts = [o.strip().casefold() for o in options]
    if value.casefold() in texts:
        return texts.index(value.casefold())
    letter = re.fullmatch(r"\(?([A-Z])[).]?", value)
    if letter and ord(letter.group(1)) - ord("A") < len(options):
        return ord(letter.group(1)) - ord("A")
    if value.isdigit() and int(value) < len(options):
        return int(value)
    return None


def imported_source(path: Path, settings: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """(a source of an imported run's items, its rows with the harness's verdict as ``pred``):
    see the module. Refused where the log kept neither option texts nor a join to a source."""
    from string import ascii_uppercase

    from spatialprobe.benchmarks.base import Source, SourceItem
    from spatialprobe.errors import DataError, UsageError
    from spatialprobe.files import read_json, read_jsonl
    from spatialprobe.interop.join import joiner, source_of
    from spatialprobe.metrics.intervals import Resampling

    rows = read_jsonl(path / "predictions.jsonl")
    joined = source_of(settings["source"]) if settings.get("source") else None
    summary = read_json(path / "summary.json") if (path / "summary.json").is_file() else {}
    if joined is None and not all(r.get("options") for r in rows):
        raise UsageError(f"{path} was imported from a {settings.get('format')} log that keeps no option texts for "
                         "its items: import it again with --source NAME --data FILE to join them to the "
                         "benchmark's items (or, for plain, --options FIELD).")
    item_of = joiner(joined, path / "predictions.jsonl") if joined is not None else None
    items, out = [], []
    for line, row in enumerate(rows, 1):
        base = item_of(row["instance_id"]) if item_of is not None else None
        if row.get("options"):
            options = tuple(str(o) for o in row["options"])
            index = gold_index(row.get("gold"), options)
            if index is None:
                raise DataError(path / "predictions.jsonl", line, "gold", f"{row.get('gold')!r:.40} is none of the "
                                f"item's {len(options)} options, their letters or their positions")
            labels = tuple(ascii_uppercase[:len(options)])
            fields = dict(base.fields) if base is not None else {"cluster": row.get("cluster")}
            item = SourceItem(base.key if base is not None else str(row["instance_id"]),
                              str(row.get("question") or (base.question if base is not None else "")), options,
                              labels, labels[index], None, base.objects if base is not None else (), fields,
                              fact=base.fact if base is not None else None)
        else:
            assert base is not None
            item = base
        unparsed = row.get("pred") is None or str(row.get("pred")).strip() == "" or (
            bool(row.get("options")) and gold_index(row["pred"], item.options) is None)
        items.append(item)
        out.append({**row, "instance_id": item.key, "gold": item.gold,
                    "pred": item.gold if row.get("correct") else "--" if unparsed else WRONG})
    if joined is not None:
        spec = joined.spec
        source = replace(joined, items=tuple(items))
    else:
        spec = Resampling(tuple(ascii_uppercase[:max(len(i.options) for i in items)]), ("cluster",),
                          key=("instance_id",), pooled=True, unit=(summary.get("details") or {}).get("unit"))
        source = Source("imported", str(summary.get("task") or settings.get("benchmark")),
                        str(summary.get("dataset") or settings.get("benchmark")), spec.labels, tuple(items), spec)
    return replace(source, spec=spec), out
