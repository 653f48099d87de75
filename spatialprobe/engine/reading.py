"""An item's answers read into its row: by the source's official reader and by ``strict``.

:func:`read_answers` gives the row fields an asked item's answers make - each protocol's label
under the official reader (``pred_likelihood``, ``pred_generate``) and under ``strict`` (the same
names with ``_strict``), the reasons the replies were read as they were (``read``,
``read_strict``), ``pred`` and ``pred_strict`` (the first protocol's), and the fields the source's
``matching`` hook derives from each reading (``site_value``; under strict ``site_value_strict``,
for the fields its official metrics read). An item asked about several images: the options'
scores averaged (likelihood), the replies' readings voted over (generate), as
:func:`spatialprobe.benchmarks.base.vote` combines them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spatialprobe.benchmarks.base import Source, SourceItem, Wording, vote
from spatialprobe.engine.metrics import chosen, disagreements
from spatialprobe.readers.base import Asked, Reader


def read_answers(source: Source, item: SourceItem, wording: Wording, answers: Sequence[Mapping[str, Any]],
                 protocol: str, official: Reader, strict: Reader) -> dict[str, Any]:
    """The row fields of ``item``'s ``answers`` (one per image), ``protocol`` the first asked."""
    asked = Asked(item.key, wording.options, wording.labels, item.gold, item.fields)
    row: dict[str, Any] = {}
    first = answers[0]
    read = {"": official, "_strict": strict}
    if "likelihood" in first:
        rows = [a["likelihood"]["scores"] for a in answers]
        mean = [sum(r[i] for r in rows) / len(rows) for i in range(len(wording.options))]
        for suffix, reader in read.items():
            row[f"pred_likelihood{suffix}"] = reader.scores(mean if len(answers) > 1 else rows[0], asked).label
        row["scores"] = first["likelihood"]["scores"]
        if source.scored is not None:
            row.update(source.scored(item, row["scores"]))
    if "generate" in first:
        replies = [a["generate"]["reply"] for a in answers]
        if source.combine is not None:
            row["replies"] = replies
            row["pred_generate"] = row["pred_generate_strict"] = source.combine(replies, wording.labels)
        else:
            for suffix, reader in read.items():
                readings = [reader.reply(reply, asked) for reply in replies]
                row[f"pred_generate{suffix}"] = vote([r.label for r in readings], None, wording.options,
                                                     wording.labels)  # one: itself
                row[f"read{suffix}"] = readings[0].reason
        row["reply"], row["parse_rule"] = first["generate"]["reply"], first["generate"].get("rule")
    row["pred"] = chosen(row, protocol)
    row["pred_strict"] = chosen(row, f"{protocol}_strict")
    return {**row, **matched(source, item, row, protocol)}


def matched(source: Source, item: SourceItem, row: Mapping[str, Any], protocol: str) -> dict[str, Any]:
    """The fields the source's ``matching`` hook derives from a row's two readings (``{}`` where it
    has none): as it names them for the official reading, with ``_strict`` for strict's (those its
    official metrics read)."""
    if source.matching is None:
        return {}
    output = row.get("reply") if protocol == "generate" else None
    found = dict(source.matching(item, output, row.get(f"pred_{protocol}")))
    read = {o.pred for o in source.official if o.reads}
    under_strict = source.matching(item, output, row.get(f"pred_{protocol}_strict"))
    return {**found, **{f"{k}_strict": v for k, v in under_strict.items() if k in read}}


def readers_details(source: Source, official: Reader, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A run's ``details.readers``: which readers read its replies (the official one cited), and
    where they disagree (:func:`~spatialprobe.engine.metrics.disagreements`)."""
    return {"official": source.reader, "strict": "strict", "cited": official.cited, "unread": official.unread,
            **disagreements(rows)}
