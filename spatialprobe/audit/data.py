"""``spatialprobe audit data``: a test set's quality report, assembled and printed.

The parts (each its own module): the items checked against themselves (:mod:`.data_checks`), the
items many runs answer alike against the gold with every run's headline without them
(:mod:`.suspects`), images shared with other sets by perceptual hash (:mod:`.overlap`), and a
run's score re-weighted to uniform answer values or item groups (:mod:`.composition`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.audit import data_checks as checks
from spatialprobe.benchmarks.base import SourceItem

LISTED = 10
"""Entries of each list the table shows (all of them in the JSON)."""


def internal(items: Sequence[SourceItem], others: Mapping[str, Sequence[SourceItem]],
             resolve: Callable[[str], Path | None] | None) -> dict[str, Any]:
    """Every internal check of :mod:`.data_checks` on ``items`` (``resolve``: None where the
    images' folder is unknown, so missing images are not checked)."""
    return {"items": len(items), "duplicates": checks.conflicting_duplicates(items),
            **checks.wrong_answers(items), "repeated_options": checks.repeated_options(items),
            "missing_images": None if resolve is None else checks.missing_images(items, resolve),
            "shared_across_splits": checks.shared_across_splits(items, others)}


def _keys(entries: Sequence[Mapping[str, Any] | str]) -> str:
    shown = ", ".join(str(e["key"]) if isinstance(e, Mapping) else str(e) for e in entries[:LISTED])
    return shown + (f", … ({len(entries)} in all)" if len(entries) > LISTED else "") if entries else "none"


def internal_lines(found: Mapping[str, Any]) -> list[str]:
    dup = found["duplicates"]
    same = [f"{g['question'][:60]!r}: " + ", ".join(f"{i['key']} → {i['gold_text']}" for i in g["items"])
            for g in dup["same_image"][:LISTED]]
    lines = [f"## Internal checks ({found['items']:,} items)", "", "| check | found | items |",
             "|---|---|---|",
             f"| same question and options, same image, another gold | {len(dup['same_image'])} groups | "
             f"{'; '.join(same) or 'none'} |",
             f"| same question and options, different images, another gold (check) | "
             f"{len(dup['different_images'])} groups | "
             + ("; ".join(f"{g['question'][:40]!r} ({len(g['items'])})" for g in dup["different_images"][:LISTED])
                or "none") + " |",
             f"| exact duplicates (same image, question and gold) | {dup['exact_duplicates']} | |",
             f"| gold outside the options | {len(found['outside_options'])} | {_keys(found['outside_options'])} |",
             f"| gold of the wrong type | {len(found['wrong_type'])} | {_keys(found['wrong_type'])} |",
             f"| repeated options | {len(found['repeated_options'])} | {_keys(found['repeated_options'])} |"]
    missing = found["missing_images"]
    lines.append("| images missing | – (no --images folder) | |" if missing is None
                 else f"| images missing | {len(missing)} | {_keys(missing)} |")
    for split, shared in found["shared_across_splits"].items():
        lines.append(f"| images shared with the {split} split | {shared['images']} | {_keys(shared['items'])} |")
    return lines


def _ci(ci: Sequence[float] | None, signed: bool = False) -> str:
    if not ci:
        return "[–]"
    return f"[{ci[0]:+.1f}, {ci[1]:+.1f}]" if signed else f"[{ci[0]:.1f}, {ci[1]:.1f}]"


def suspect_lines(found: Mapping[str, Any]) -> list[str]:
    listed = found["suspects"][:found.get("top", 20)]
    lines = ["", f"## Suspect items ({len(found['suspects'])} of {found['items']:,}: at least {found['k']} of "
             f"{found['runs']} runs agree on one answer that is not the gold)", "",
             "| item | gold | the runs' answer | runs agreeing | runs right |", "|---|---|---|---|---|"]
    lines += [f"| {s['key']} | {s['gold']} | {s['answer']} | {s['agree']} of {s['answered']} | {s['right']} |"
              for s in listed]
    lines += ["", "| run | accuracy | without the suspects | change [95 % interval] |", "|---|---|---|---|"]
    lines += [f"| {name} | {r['accuracy']:.1f} | {r['without']:.1f} | {r['change']:+.1f} {_ci(r['ci'], True)} |"
              for name, r in found["headlines"].items()]
    return lines


def overlap_lines(pairs: Sequence[Mapping[str, Any]], distance: int) -> list[str]:
    lines = ["", f"## Image overlap (perceptual hash, at most {distance} of 64 bits apart)", "",
             "| sets | images shared | items of the first | items of the second | examples |", "|---|---|---|---|---|"]
    for p in pairs:
        a, b = p["sets"]
        shown = "; ".join(f"{Path(e['a']).name} ~ {Path(e['b']).name} ({e['bits_apart']})" for e in p["examples"][:3])
        lines.append(f"| {a} – {b} | {p['images']} | {p['items'][a]} of {p['of'][a]} | "
                     f"{p['items'][b]} of {p['of'][b]} | {shown or '–'} |")
    return lines


def composition_lines(found: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    lines = ["", "## Composition", "", "| run | by | score as is | re-weighted to uniform groups | groups (score, n) |",
             "|---|---|---|---|---|"]
    for name, parts in found.items():
        for c in parts:
            groups = "; ".join(f"{g}: {v['score']:.1f} ({v['n']})" for g, v in list(c["groups"].items())[:LISTED])
            lines.append(f"| {name} | {c['by']} | {c['score']} {c['as_is']['value']:.1f} {_ci(c['as_is']['ci'])} | "
                         f"{c['uniform']['value']:.1f} {_ci(c['uniform']['ci'])} | {groups} |")
    return lines


def data_table(found: Mapping[str, Any]) -> str:
    """The report as markdown: each part that was computed."""
    lines = [f"Data audit of {found['target']}.", ""]
    if found.get("internal"):
        lines += internal_lines(found["internal"])
    if found.get("suspects"):
        lines += suspect_lines(found["suspects"])
    if found.get("overlap") is not None:
        lines += overlap_lines(found["overlap"], found["distance"])
    if found.get("composition"):
        lines += composition_lines(found["composition"])
    return "\n".join(lines) + "\n"
