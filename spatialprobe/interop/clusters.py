"""Which row fields an imported item's clusters come from (``--cluster``): one field (an image, a
scene), or two (a row of two objects: both its clusters, the object-pair design of native size and
height runs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spatialprobe.interop.base import Log, raise_usage, text

RESERVED = frozenset({"instance_id", "gold", "pred", "correct", "score", "cluster", "protocol", "condition",
                      "question", "reply", "options", "log_id"})
"""Row fields an imported run writes itself: no cluster field may take their names."""


def cluster_fields(value: Any) -> tuple[str, ...]:
    """The fields ``--cluster`` names: one, or two (a row of two objects: both are its clusters,
    as native object-pair runs), given as ``a,b`` or as ``--cluster a --cluster b``."""
    if value in (None, "", [], ()):
        return ()
    given = [value] if isinstance(value, str) else list(value)
    names = tuple(dict.fromkeys(p.strip() for g in given for p in str(g).split(",") if p.strip()))
    if len(names) > 2:
        raise_usage(f"--cluster names {len(names)} fields ({', '.join(names)}); a row belongs to one cluster "
                    "(an image) or two (the two objects of a pair).")
    taken = [n for n in names if n in RESERVED]
    if taken and len(names) == 2:
        raise_usage(f"--cluster {taken[0]} names a field the imported rows keep themselves; a cluster field "
                    f"may not be one of {', '.join(sorted(RESERVED))}.")
    return names


def clustered(values: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(``Instance.cluster``, ``Instance.fields``) of a row's cluster field values: one field is the
    row's cluster; two are kept as row fields under their names (:attr:`Log.clusters`)."""
    if len(values) == 1:
        return text(next(iter(values.values()))), {}
    return None, {name: text(v) for name, v in values.items()}


def cluster_log(log: Log, names: tuple[str, ...]) -> Log:
    """``log`` told which fields its clusters come from (``--cluster``)."""
    if len(names) == 1:
        log.cluster_field = names[0]
    elif len(names) == 2:
        log.clusters = names
    return log
