"""An imported log joined to the benchmark it was run on (``import ... --source NAME --data FILE``):
the source's items, clusters and official breakdown apply, and its rows take the source's item
keys, so that they pair with native runs of the same file (``report A B``, ``compare``).

Any registered benchmark joins: ``vsr`` and ``spatialmqa`` (``--data`` their JSON lines file) and
every benchmark module (``spatialprobe ls source``: ``cv-bench``, ``blink``, ``embspatial``, ...;
``--data`` the local copy ``spatialprobe bench`` reads), its items read without their images.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError

OWN_COMMANDS = ("task", "vsr", "spatialmqa", "qa")
"""Sources built by a command of their own rather than from a local copy (``spatialprobe bench``)."""


def joinable() -> list[str]:
    """The sources an import can be joined to."""
    from spatialprobe import registry

    return ["vsr", "spatialmqa", *sorted(n for n in registry.names("source") if n not in OWN_COMMANDS)]


def source_of(settings: Mapping[str, Any]) -> Any:
    """The engine source to join items to: ``{"name", "data"}`` (and a VSR/SpatialMQA ``part``,
    a module's ``split``), as an imported run's config.json records it."""
    name, data = str(settings["name"]), Path(str(settings["data"]))
    if name == "vsr":
        from spatialprobe.benchmarks.vsr import vsr_source

        return vsr_source(data, None, str(settings.get("split") or "random"), str(settings.get("part") or "test"))[0]
    if name == "spatialmqa":
        from spatialprobe.benchmarks.spatialmqa import spatialmqa_source

        return spatialmqa_source(data, None, str(settings.get("part") or "test"))[0]
    if name not in joinable():
        raise UsageError(f"--source {name} cannot be joined here; these can: {', '.join(joinable())} "
                         "(or give --cluster FIELD).")
    from spatialprobe.benchmarks.copy_images import text_only
    from spatialprobe.engine.rebuild import rebuild_source

    with text_only():  # the items, their keys and clusters: no image is looked for
        return rebuild_source({"name": name, "data": str(data), "images": None, "split": settings.get("split"),
                               "subset": settings.get("subset"), "limit": None, "options": {}}, 0)


def joiner(source: Any, file: str | Path) -> Callable[[Any], Any]:
    """The source's item an imported row's id names: the item's key, or (lm-eval's and lmms-eval's
    ``doc_id``) its position in the source's file; a DataError naming ``file`` otherwise."""
    items = source.items
    by_key = {item.key: item for item in items}

    def item_of(ident: Any) -> Any:
        key = str(ident)
        item = by_key.get(key) or (items[int(key)] if key.isdigit() and int(key) < len(items) else None)
        if item is None:
            raise DataError(file, None, "id", f"item {ident!r} is not among the {len(by_key)} items of "
                            f"{source.dataset}")
        return item
    return item_of
