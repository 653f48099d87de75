"""``report A B``'s paired section (:func:`paired_section`): whether two runs can be paired (the
same rows, clusters and labels, on their primary image condition), and if so the paired test of
every metric both report: their benchmark's official list
(:func:`spatialprobe.runner.summary.reported`), each metric paired on the rows and the row field it
was measured on (:func:`spatialprobe.metrics.paired.resampling_for`), so the table's numbers and
the paired differences come from one declaration; else one sentence saying why not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from spatialprobe.metrics.intervals import Resampling
from spatialprobe.metrics.paired import PairedDifference, paired_differences, resampling_for
from spatialprobe.records import VARIANT
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


def paired_section(paths: Sequence[Path], summaries: Sequence[Mapping[str, Any]]) -> str:
    """The paired section of ``report A B``, or a note saying why the two runs cannot be paired."""
    from spatialprobe.files import read_jsonl
    from spatialprobe.metrics.paired import paired_differences, resampling_of, unpaired_reason
    from spatialprobe.reports.tables import paired_table, unpaired_note

    names = [f"`{p}` ({s.get('model')})" for p, s in zip(paths, summaries, strict=True)]
    rows = []
    for path in paths:
        file = Path(path) / "predictions.jsonl"
        try:
            rows.append(read_jsonl(file) if file.exists() else [])
        except (ValueError, OSError) as err:  # a truncated or damaged file: named, and no test
            return unpaired_note(names[0], names[1], f"{file} cannot be read ({str(err).rstrip('.')})")
    variants = any(r.get(VARIANT) for part in rows for r in part)  # --protocol-variants: the source's own items pair
    rows, primary, reason = primary_rows(summaries, [[r for r in part if not r.get(VARIANT)] for part in rows])
    if variants:
        primary += "\nThe generated robustness variants (--protocol-variants) are not paired; the items are.\n"
    specs = [resampling_of(s, r) for s, r in zip(summaries, rows, strict=True)]
    imported = (specs[0].labels, specs[0].pred) != (specs[1].labels, specs[1].pred)
    if imported:  # a native run beside an imported one
        from spatialprobe.reports.compare import as_correctness

        scored = [as_correctness(spec, part) for spec, part in zip(specs, rows, strict=True)]
        specs, rows = [spec for spec, _ in scored], [part for _, part in scored]
    if specs[0].key != specs[1].key:
        reason = (f"A's predictions are one per ({', '.join(specs[0].key)}) and B's one per "
                  f"({', '.join(specs[1].key)}): runs of different kinds ({summaries[0].get('kind')}, "
                  f"{summaries[1].get('kind')}) do not predict the same rows")
    reason = reason or unpaired_reason(summaries[0], rows[0], summaries[1], rows[1], specs[0])
    if reason is None and replace(specs[0], metrics={}) != replace(specs[1], metrics={}):
        reason = "their runs resample different clusters or labels"  # (the statistics both report are paired)
    if reason is not None:
        return unpaired_note(names[0], names[1], reason)
    if imported:  # scored by correctness: the one share both have
        differences = paired_differences(rows[0], rows[1], specs[0])  # one robust SE: nothing is drawn
    else:
        differences = official_differences(summaries, rows, specs[0])
    method = specs[0].describe(0, 0)["method"]
    return paired_table(names[0], names[1], differences, 0, 0, method) + primary


def primary_rows(summaries: Sequence[Mapping[str, Any]], rows: list[list[dict]]
                 ) -> tuple[list[list[dict]], str, str | None]:
    """Each run's rows of its primary (first) image condition where a run asked several (a
    ``--blind`` run: real, blank, none, shuffled), the line saying which condition was paired, and
    why the runs cannot be paired where their primary conditions differ (else None)."""
    conditions = [list((s.get("details") or {}).get("conditions") or []) for s in summaries]
    if all(len(c) < 2 for c in conditions):
        return rows, "", None
    first = [c[0] if c else "real" for c in conditions]  # a run without conditions saw the real images
    if first[0] != first[1]:
        return rows, "", f"their primary image conditions differ ({first[0]} vs {first[1]})"
    kept = [[r for r in part if r.get("condition", first[0]) == first[0]] for part in rows]
    extra = [f"{run} also asked {', '.join(c[1:])}" for run, c in zip("AB", conditions, strict=True) if c[1:]]
    return kept, f"\nPaired on the `{first[0]}` condition's rows ({'; '.join(extra)}: not paired).\n", None
