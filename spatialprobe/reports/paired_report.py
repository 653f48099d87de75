"""``report A B``'s paired test of every metric the two runs report: their benchmark's official
list (:func:`spatialprobe.runner.summary.reported`), each metric paired on the rows and the row
field it was measured on (:func:`spatialprobe.metrics.paired.resampling_for`), so the table's
numbers and the paired differences come from one declaration."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spatialprobe.metrics.intervals import Resampling
from spatialprobe.metrics.paired import PairedDifference, paired_differences, resampling_for
from spatialprobe.runner.summary import reported


def official_differences(summaries: Sequence[Mapping[str, Any]], rows: Sequence[Sequence[Mapping[str, Any]]],
                         primary: Resampling) -> list[PairedDifference]:
    """A − B of each metric both runs report (official reader first, then its ``strict_`` twin),
    each on its own resampling where both runs measured it alike; the ``primary`` resampling's
    metrics where they share none (runs written before the official list was recorded)."""
    theirs = dict(reported(summaries[1], strict=True))
    out: list[PairedDifference] = []
    for metric, stat in reported(summaries[0], strict=True):
        spec = resampling_for(summaries[0], metric)
        if theirs.get(metric) != stat or spec is None or spec != resampling_for(summaries[1], metric):
            continue
        out += paired_differences(rows[0], rows[1], spec)
    return out or paired_differences(rows[0], rows[1], primary)
