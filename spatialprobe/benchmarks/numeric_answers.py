"""The row-level path of numeric answers: an asked item whose gold is a number gets, from a
reader's reading of its generated reply (a number), its scores, as row fields the registered
statistics average.

A benchmark with numeric gold declares its items without options (the reply is read, not matched
to an option), sets ``matching=numeric_matching()`` on its :class:`~spatialprobe.benchmarks.base.Source`,
and lists :data:`NUMERIC_OFFICIAL` (or its own grouping of ``mra``/``within_tolerance``) among its
official metrics. A reader reads an item without options as a number (the reading's label is the
number's text: ``toolkit`` by :func:`spatialprobe.readers.numeric.read_number`, ``strict`` where
the reply is exactly a number, a benchmark's official reader as its authors read one), and the
engine derives these fields from each reading - the official one's under their names, strict's
with ``_strict`` (:mod:`spatialprobe.engine.reading`), so both readers give MRA and the share within
tolerance with intervals:

* ``number`` - the value read (None: nothing read; why is the row's ``read``/``read_strict``);
* ``mra`` - its Mean Relative Accuracy in [0, 1] (:func:`spatialprobe.metrics.relative.mean_relative_accuracy`;
  0 where nothing read);
* ``within_tolerance`` - 1 or 0 (:func:`~spatialprobe.metrics.relative.within_ratio`).

Rows of items with options (the multiple-choice part of a mixed benchmark) carry ``None`` in these
fields, so the numeric statistics leave them out and accuracy reads them as before.
"""

from __future__ import annotations

from typing import Any

from spatialprobe.benchmarks.base import Matching, Official, SourceItem
from spatialprobe.metrics.relative import RATIO_TOLERANCE, mean_relative_accuracy, within_ratio

NUMERIC_OFFICIAL = (Official({"mra": "mra"}, pred="mra"),
                    Official({"within_tolerance": "within_tolerance"}, pred="within_tolerance"))
"""MRA and the share within the ratio tolerance, each with its interval over the source's unit."""
NUMERIC_FIELDS = ("number", "mra", "within_tolerance")
"""The row fields of :func:`numeric_fields`."""


def gold_number(item: SourceItem) -> float:
    """An item's gold as a number; refused naming the item where it is none."""
    try:
        return float(item.gold)
    except (TypeError, ValueError):
        raise ValueError(f"item {item.key}: its gold {item.gold!r} is no number, and it has no options") from None


def number_of(label: str | None) -> float | None:
    """The number a reading's label is (``float`` of it), None where it is none."""
    try:
        return None if label is None else float(label)
    except (TypeError, ValueError, OverflowError):
        return None


def numeric_fields(item: SourceItem, value: float | None, tolerance: float = RATIO_TOLERANCE) -> dict[str, Any]:
    """The numeric row fields of one item's number read (see the module); None in each for an item with options."""
    if item.options:
        return dict.fromkeys(NUMERIC_FIELDS)
    gold = gold_number(item)
    return {"number": value, "mra": mean_relative_accuracy(value, gold),
            "within_tolerance": int(within_ratio(value, gold, tolerance))}


def numeric_matching(tolerance: float = RATIO_TOLERANCE) -> Matching:
    """A source's ``matching`` hook for numeric items: :func:`numeric_fields` of the number a reading is."""
    def matching(item: SourceItem, output: str | None, label: str | None) -> dict[str, Any]:
        return numeric_fields(item, number_of(label), tolerance)

    return matching
