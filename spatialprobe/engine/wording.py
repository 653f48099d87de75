"""The wording an asked-items run puts its items in, and what an adapter declares about itself
(``wordings``, ``protocols``, ``samples``), read from its registered class so that a model deferred
to a Ray cluster is never built by the driver to answer.

An adapter lists the wordings it understands, best first (a multimodal LLM the ``question``, CLIP
the ``contrastive`` captions, T5 and the VQA classifiers the ``short`` question); a source offers
the wordings every one of its items carries (:meth:`spatialprobe.benchmarks.base.Source.offered`).
"""

from __future__ import annotations

from typing import Any

from spatialprobe.benchmarks.base import Source
from spatialprobe.errors import UsageError


def declared(model: Any, name: str, attribute: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """What an adapter declares (``wordings``, ``protocols``): read from its registered class, so
    that a model deferred to a Ray cluster is never built by the driver to answer; from the object
    where ``name`` is no registered adapter (a stand-in in a test)."""
    return tuple(getattr(_adapter(model, name), attribute, default))


def can_sample(model: Any, name: str) -> bool:
    """Whether the adapter declares that it samples (``samples``), read as :func:`declared` reads."""
    return bool(getattr(_adapter(model, name), "samples", False))


def _adapter(model: Any, name: str) -> Any:
    from spatialprobe import registry
    from spatialprobe.errors import UnknownComponent

    try:
        return registry.lookup("model", name)
    except UnknownComponent:
        return model


def choose_wording(model: Any, source: Source, name: str = "") -> str:
    """The first wording the adapter understands (its ``wordings``; ``question`` where it declares
    none) that every item of ``source`` offers; one sentence where none fits."""
    understood = declared(model, name, "wordings", ("question",))
    offered = source.offered()
    for wording in understood:
        if wording in offered:
            return wording
    who = name or getattr(model, "name", type(model).__name__)
    raise UsageError(f"the {who} model cannot be asked {source.name} items: it understands "
                     f"{', '.join(understood)} wording, and {source.name} offers {', '.join(offered)}.")


def check_wording(model: Any, name: str, wording: str, source: Source) -> None:
    """Refuse a recorded wording (``config.json``) that the adapter does not understand or the
    source does not offer (a config edited by hand, or a source whose items changed)."""
    understood = declared(model, name, "wordings", ("question",))
    if wording not in understood or wording not in source.offered():
        raise UsageError(f"config.json: wording {wording!r} is not one the {name} model "
                         f"understands ({', '.join(understood)}) and {source.name} offers "
                         f"({', '.join(source.offered())}).")
