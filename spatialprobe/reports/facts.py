"""The same fact across modalities: ``spatialprobe report --by fact RUN...``.

A row states a spatial fact (subject, relation, object):

* an ask run's row carries it as ``fact`` (the source's ``SourceItem.fact``: VSR's caption, its
  relation ``not RELATION`` where the caption is false; a task's instance);
* a probe, judge, VQA-judge or human run of a task (size, height, weight, posrel, ...) carries it
  already as ``obj_a``, ``gold``, ``obj_b`` (the gold relation of A to B); a VISOR run as ``obj_a``,
  ``rel``, ``obj_b``.

Facts are **normalised** so that one fact has one name whoever states it (:func:`normalise`):
``right of(B, A)`` is ``left of(A, B)``, ``smaller(B, A)`` is ``larger(A, B)``, ``below`` is
``above`` swapped, and so on (:data:`CONVERSE`); wordings of one relation are one
(:data:`SYNONYMS`: ``to the left of`` is ``left of``, ``bigger`` is ``larger``); a symmetric
relation (:data:`SYMMETRIC`: ``beside``, ``near``) orders its two objects alphabetically; ``not``
stays in front. Objects are lower-cased without a leading article.

A run **gets a fact right** where every one of its rows stating it is right (both orders of a pair,
every fold, every image of a prompt): a row is right where its ``correct`` is true (VISOR, the VQA
judge) or its ``pred`` equals its ``gold``. Runs that asked several image conditions count their
first one's rows. The runs are joined on the facts **all of them** state; per relation the table
shows how many of those each run gets right and how often each pattern of right and wrong occurs,
and for every pair of runs the discordant facts (``b10``: the first right, the second wrong; ``b01``
the reverse) with the exact McNemar p (``scipy.stats.binomtest`` of b10 of b10 + b01 at 1/2). Facts
that share an object are not independent; the McNemar p treats them as if they were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spatialprobe.errors import UsageError

Fact = tuple[str, str, str]

CONVERSE = {"right of": "left of", "below": "above", "under": "over", "beneath": "on top of",
            "behind": "in front of", "smaller": "larger", "shorter": "taller", "lighter": "heavier",
            "contains": "inside", "has as a part": "part of", "surrounding": "enclosed by"}
"""Relation -> its converse, the canonical name: R(A, B) is CONVERSE[R](B, A)."""
SYNONYMS = {"to the left of": "left of", "on the left of": "left of", "at the left side of": "left of",
            "on the left side of": "left of", "to the right of": "right of", "on the right of": "right of",
            "at the right side of": "right of", "on the right side of": "right of", "bigger": "larger",
            "underneath": "beneath", "ahead of": "in front of", "at the back of": "behind",
            "at the front of": "in front of", "within": "inside", "next to": "beside", "at the side of": "beside"}
"""Wordings of one relation -> the name used here."""
SYMMETRIC = frozenset({"beside", "near", "close to", "far from", "far away from", "adjacent to", "touching",
                       "connected to", "detached from", "parallel to", "perpendicular to", "opposite to",
                       "across from", "alongside", "by"})
"""Relations whose two objects can be swapped: R(A, B) is R(B, A)."""
ARTICLES = ("a ", "an ", "the ")


def _object(name: str) -> str:
    name = " ".join(str(name).lower().split())
    for article in ARTICLES:
        if name.startswith(article):
            return name[len(article):]
    return name


def normalise(subject: str, relation: str, obj: str) -> Fact:
    """The fact's one name: synonyms merged, the converse's canonical side, symmetric objects sorted."""
    relation = " ".join(str(relation).lower().split()).removesuffix(" than")
    negated = relation.startswith("not ")
    relation = relation.removeprefix("not ")
    relation = SYNONYMS.get(relation, relation)
    a, b = _object(subject), _object(obj)
    if relation in CONVERSE:
        relation, a, b = CONVERSE[relation], b, a
    if relation in SYMMETRIC and b < a:
        a, b = b, a
    return a, ("not " if negated else "") + relation, b


def row_fact(row: Mapping[str, Any]) -> Fact | None:
    """The fact a row states (normalised), or None where it states none."""
    fact = row.get("fact")
    if isinstance(fact, (list, tuple)) and len(fact) == 3:
        return normalise(*fact)
    relation = row.get("rel") if "rel" in row else row.get("gold")
    if row.get("obj_a") and row.get("obj_b") and isinstance(relation, str) and relation.lower() not in ("yes", "no"):
        return normalise(row["obj_a"], relation, row["obj_b"])
    return None


def row_right(row: Mapping[str, Any]) -> bool:
    """A row is right where its ``correct`` is true, else where its prediction equals gold."""
    if "correct" in row:
        return bool(row["correct"])
    return row.get("pred") is not None and row.get("pred") == row.get("gold")


def modality(summary: Mapping[str, Any]) -> str:
    """What a run asked: ``text`` (a probe; an ask run without an image), ``image+text`` (an ask run
    with images), ``generation`` (a judged image run of generated images)."""
    kind = str(summary.get("kind"))
    if kind == "probe":
        return "text"
    if kind in ("ask", "vsr", "spatialmqa", "qa"):
        conditions = (summary.get("details") or {}).get("conditions") or ["real"]
        return "text" if conditions[0] == "none" else "image+text"
    return "generation"


@dataclass(frozen=True)
class FactRun:
    """One run's verdict on each fact it states."""

    path: Path
    label: str
    modality: str
    right: dict[Fact, bool]


def fact_run(path: str | Path, label: str) -> FactRun:
    """The facts a finished run states and whether it gets each right (every row stating it right)."""
    from spatialprobe.files import read_jsonl
    from spatialprobe.reports.compare import primary_rows
    from spatialprobe.reports.runs import load_run

    run = load_run(path)
    _, rows = primary_rows(run.summary, read_jsonl(run.path / "predictions.jsonl"))
    right: dict[Fact, bool] = {}
    for row in rows:
        fact = row_fact(row)
        if fact is not None:
            right[fact] = right.get(fact, True) and row_right(row)
    if not right:
        raise UsageError(f"{run.path / 'predictions.jsonl'}: no row states a fact (fact, or obj_a, gold "
                         "relation and obj_b); report --by fact joins runs on their facts.")
    return FactRun(run.path, label, modality(run.summary), right)


def mcnemar_pair(a: Sequence[bool], b: Sequence[bool]) -> dict[str, Any]:
    """Discordant counts and the exact McNemar p of two runs' verdicts on the same facts."""
    from spatialprobe.metrics.multiple import mcnemar

    b10 = sum(x and not y for x, y in zip(a, b, strict=True))
    b01 = sum(y and not x for x, y in zip(a, b, strict=True))
    return {"n": len(a), "b10": b10, "b01": b01, "p_mcnemar": mcnemar(b10, b01)}


def by_fact(paths: Sequence[str | Path]) -> dict[str, Any]:
    """Runs of any kinds joined on the facts they all state: per relation, each run's facts right,
    the patterns of right and wrong, and each pair's discordance with its exact McNemar p."""
    from spatialprobe.reports.runs import labels, load_run

    if len(paths) < 2:
        raise UsageError("report --by fact joins two runs or more on the facts they share.")
    names = labels([load_run(p) for p in paths])
    runs = [fact_run(p, name) for p, name in zip(paths, names, strict=True)]
    shared = set(runs[0].right).intersection(*(r.right for r in runs[1:]))
    if not shared:
        raise UsageError("the runs share no fact (subject, relation, object after normalisation): "
                         + "; ".join(f"{r.path} states {len(r.right)}" for r in runs) + ".")
    relations: dict[str, list[Fact]] = {}
    for fact in sorted(shared):
        relations.setdefault(fact[1], []).append(fact)
    pairs = [(i, j) for i in range(len(runs)) for j in range(i + 1, len(runs))]
    out: dict[str, Any] = {"runs": [{"label": r.label, "path": str(r.path), "modality": r.modality,
                                     "facts": len(r.right)} for r in runs], "shared": len(shared), "relations": {}}
    for relation, facts in [*relations.items(), ("all", sorted(shared))]:
        verdicts = [[r.right[f] for f in facts] for r in runs]
        patterns: dict[str, int] = {}
        for n in range(len(facts)):
            key = "".join("✓" if v[n] else "✗" for v in verdicts)
            patterns[key] = patterns.get(key, 0) + 1
        out["relations"][relation] = {
            "n": len(facts), "right": [sum(v) for v in verdicts], "patterns": dict(sorted(patterns.items())),
            "pairs": [{"a": runs[i].label, "b": runs[j].label, **mcnemar_pair(verdicts[i], verdicts[j])}
                      for i, j in pairs]}
    return out


def fact_table(result: Mapping[str, Any]) -> str:
    """The markdown ``report --by fact`` prints."""
    from spatialprobe.reports.tables import markdown_table, p_text

    runs = result["runs"]
    names = [f"{chr(ord('A') + n)}" for n in range(len(runs))]
    lines = [f"# {result['shared']} facts stated by all {len(runs)} runs\n\n"]
    lines += [f"- {n} ({r['modality']}): {r['label']} - {r['facts']} facts\n" for n, r in zip(names, runs, strict=True)]
    rows = [[rel, str(v["n"]), *(f"{k} ({100 * k / v['n']:.0f} %)" for k in v["right"]),
             ", ".join(f"{p} {c}" for p, c in v["patterns"].items())] for rel, v in result["relations"].items()]
    lines.append("\n" + markdown_table(["relation", "facts", *(f"{n} right" for n in names),
                                        f"patterns ({''.join(names)}: ✓ right, ✗ wrong)"], rows))
    pair_rows = [[rel, f"{names[[r['label'] for r in runs].index(p['a'])]} vs "
                       f"{names[[r['label'] for r in runs].index(p['b'])]}", str(p["n"]),
                  f"{p['b10']}/{p['b01']}", p_text(p["p_mcnemar"])]
                 for rel, v in result["relations"].items() for p in v["pairs"]]
    lines.append("\n" + markdown_table(["relation", "pair", "facts", "b10/b01", "p McNemar (exact)"], pair_rows))
    lines.append("\nA run gets a fact right where every row stating it is right (both orders, every fold and "
                 "image). b10: facts the first run gets right and the second wrong; b01 the reverse. The exact "
                 "McNemar p treats facts as independent (facts sharing an object are not).\n")
    return "".join(lines)
