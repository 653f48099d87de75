"""A source rebuilt from what a run recorded (``spatialprobe run CONFIG``, a resume, ``bench``):
the registered module's items, then the subset a run was restricted to (``--items``,
:mod:`spatialprobe.engine.subset`) and the robustness variants the engine generates
(``--protocol-variants``, :mod:`spatialprobe.engine.variants`) - both part of the run's identity.
Kept apart from :mod:`spatialprobe.benchmarks.base`, which those modules build on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from spatialprobe.benchmarks.base import Source


def rebuild_source(settings: Mapping[str, Any], seed: int) -> Source:
    """The source a run's recorded settings name, through the registry (``spatialprobe run CONFIG``)."""
    from spatialprobe import registry
    from spatialprobe.errors import UnknownComponent, UsageError

    name = str(settings.get("name"))
    try:
        rebuild = registry.lookup("source", name)
    except UnknownComponent as err:
        raise UsageError(f"config.json: source.name {name!r} is no registered source ({err})") from None
    source = rebuild({k: v for k, v in settings.items() if k not in ("items", "protocol_variants")}, seed)
    if settings.get("items"):  # a subset (--items FILE): part of the run's identity
        source = restrict(source, settings["items"]["file"], settings["items"]["sha256"], seed)
    if settings.get("protocol_variants"):  # engine-generated variants: part of the run's identity too
        from spatialprobe.engine.variants import with_variants

        source = with_variants(source, settings["protocol_variants"])
    return source


def restrict(source: Source, path: Any, recorded: str | None = None, seed: int = 0) -> Source:
    """``source`` with only the items the subset file at ``path`` keeps (and its folds' keys
    likewise; :mod:`spatialprobe.engine.subset`); refused where the file was made from other
    data or (``recorded``: the hash a run recorded) has changed since. A ``--limit N`` of the
    source counts the subset's items: the first N it keeps (the source is read whole for them)."""
    from pathlib import Path

    from spatialprobe.engine.subset import read_subset
    from spatialprobe.errors import DataError

    path = Path(path)  # a str or path of the subset file
    record = read_subset(path)
    limit = source.settings.get("limit")
    if limit:
        whole = restrict(rebuild_source({**source.settings, "limit": None}, seed), path, recorded, seed)
        kept = {item.key for item in whole.items[:limit]}
        folds = tuple((tuple(k for k in dev if k in kept), tuple(k for k in test if k in kept))
                      for dev, test in whole.folds)
        return replace(whole, items=whole.items[:limit], folds=folds, settings={**whole.settings, "limit": limit},
                       details={**whole.details, "subset": {**whole.details["subset"], "limit": limit}})
    if record.get("dataset") != source.dataset:
        raise DataError(path, None, "dataset", f"was made from {record.get('dataset')}, not {source.dataset}")
    if recorded is not None and recorded != record["sha256"]:
        raise DataError(path, None, "sha256", f"has changed since the run recorded it ({recorded})")
    keep = set(record["keys"])
    unknown = keep - {item.key for item in source.items}
    if unknown:
        raise DataError(path, None, "keys", f"names {len(unknown)} item(s) {source.dataset} does not hold "
                        f"(first: {sorted(unknown)[0]})")
    folds = tuple((tuple(k for k in dev if k in keep), tuple(k for k in test if k in keep))
                  for dev, test in source.folds)
    settings = {**source.settings, "items": {"file": str(Path(path).resolve()), "sha256": record["sha256"],
                                             "n": len(keep)}}
    details = {**source.details, "subset": settings["items"]}
    details.pop("coverage_detail", None)
    return replace(source, items=tuple(i for i in source.items if i.key in keep), folds=folds,
                   settings=settings, details=details)
