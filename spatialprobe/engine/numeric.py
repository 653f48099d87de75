"""The row-level path of numeric answers: an asked item whose gold is a number gets, from its
generated reply, the number read and its scores, as row fields the registered statistics average.

A benchmark with numeric gold declares its items without options (the reply is read, not matched
to an option), sets ``matching=numeric_matching(...)`` on its :class:`~spatialprobe.benchmarks.base.Source`,
and lists :data:`NUMERIC_OFFICIAL` (or its own grouping of ``mra``/``within_tolerance``) among its
official metrics. Each numeric row then carries

* ``number`` - the value the reader read (in the benchmark's base unit), ``number_rule`` and,
  where nothing read, ``number_reason``;
* ``mra`` - its Mean Relative Accuracy in [0, 1] (:func:`spatialprobe.metrics.relative.mean_relative_accuracy`;
  0 where nothing read);
* ``within_tolerance`` - 1 or 0 (:func:`~spatialprobe.metrics.relative.within_ratio`).

Rows of items with options (the multiple-choice part of a mixed benchmark) carry ``None`` in these
fields, so the numeric statistics leave them out and accuracy reads them as before. The fields
take a ``prefix`` where a benchmark reads its replies twice (the official reader and the strict
one: ``prefix="official_"``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from spatialprobe.benchmarks.base import Matching, Official, SourceItem
from spatialprobe.metrics.relative import RATIO_TOLERANCE, mean_relative_accuracy, within_ratio
from spatialprobe.readers.numeric import NumberRead, read_number

NUMERIC_OFFICIAL = (Official({"mra": "mra"}, pred="mra"),
                    Official({"within_tolerance": "within_tolerance"}, pred="within_tolerance"))
"""MRA and the share within the ratio tolerance, each with its interval over the source's unit."""
Reader = Callable[[str | None], "NumberRead | float | None"]
"""A numeric reader: a reply -> a :class:`NumberRead` (or a bare number, None where none)."""


def gold_number(item: SourceItem) -> float:
    """An item's gold as a number; refused naming the item where it is none."""
    try:
        return float(item.gold)
    except (TypeError, ValueError):
        raise ValueError(f"item {item.key}: its gold {item.gold!r} is no number, and it has no options") from None


def numeric_fields(item: SourceItem, reply: str | None, reader: Reader = read_number,
                   tolerance: float = RATIO_TOLERANCE, prefix: str = "") -> dict[str, Any]:
    """The numeric row fields of one item's reply (see the module); None in each for an item with options."""
    names = [f"{prefix}{name}" for name in ("number", "number_rule", "number_reason", "mra", "within_tolerance")]
    if item.options:
        return dict.fromkeys(names)
    found = reader(reply)
    read = found if isinstance(found, NumberRead) else NumberRead(
        found, "official" if found is not None else "none",
        reason=None if found is not None else "the official reader reads no number")
    gold = gold_number(item)
    return dict(zip(names, (read.value, read.rule, read.reason, mean_relative_accuracy(read.value, gold),
                            int(within_ratio(read.value, gold, tolerance))), strict=True))


def numeric_matching(units: Mapping[str, float] | None = None, tolerance: float = RATIO_TOLERANCE,
                     reader: Reader | None = None, prefix: str = "") -> Matching:
    """A source's ``matching`` hook for numeric items: :func:`numeric_fields` of each generated
    reply, read by ``reader`` (default: :func:`~spatialprobe.readers.numeric.read_number` with ``units``)."""
    def read(reply: str | None) -> NumberRead | float | None:
        return reader(reply) if reader is not None else read_number(reply, units)

    def matching(item: SourceItem, output: str | None, pred: str | None) -> dict[str, Any]:
        return numeric_fields(item, output, read, tolerance, prefix)

    return matching
