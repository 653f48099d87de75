"""A toy judge rule with its own benchmark score, whole in one file: what a new rule takes.

Its geometry reads the boxes' edges: A is *above* B when A's bottom edge lies at least ``gap``
pixels over B's top edge, *below* the other way, *beside* when their x ranges are ``gap`` apart;
it never answers *inside*. Its reference mode is the same geometry with the vertical sign swapped
(as a peer's code that forgot that image y points down). Its benchmark score, ``toy_score``, is
the share of images whose two boxes both score above the cut ``min_confidence`` (default 0.5) and
whose gold relation the geometry finds. ``tests/test_judge_rule_records.py`` registers it at test
time and runs it through ``spatialprobe judge``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spatialprobe.judging.rulebook.record import JudgeRule, Mode, Score


def edge_judge(box_a, box_b, relation: str, *, gap: float = 0.0, swapped: bool = False) -> tuple[float, str]:
    """1 when the edges of box A and box B show ``relation`` (A relative to B), else 0."""
    up = box_a[3] + gap <= box_b[1]
    down = box_a[1] >= box_b[3] + gap
    if swapped:
        up, down = down, up
    apart = box_a[2] + gap <= box_b[0] or box_b[2] + gap <= box_a[0]
    holds = {"above": up, "below": down, "beside": apart and not (up or down)}.get(relation, False)
    verdict = "holds" if holds else "fails"
    return float(holds), f"edges A {list(box_a)} B {list(box_b)} (gap {gap:g}) -> {relation} {verdict}"


def swapped_edge_judge(box_a, box_b, relation: str, *, gap: float = 0.0) -> tuple[float, str]:
    """:func:`edge_judge` with the vertical sign swapped."""
    return edge_judge(box_a, box_b, relation, gap=gap, swapped=True)


def toy_correct(row: Mapping[str, Any], relation: str, args: Mapping[str, Any]) -> bool:
    """Both boxes above the cut and the gold relation found."""
    cut = float(args.get("min_confidence", 0.5))
    if not (row["found_a"] and row["found_b"]) or min(row["score_a"], row["score_b"]) <= cut:
        return False
    return edge_judge(row["box_a"], row["box_b"], relation, gap=float(args.get("gap", 0.0)))[0] == 1.0


TOY_EDGES = JudgeRule(
    name="toy-edges", tasks=("posrel",), corrected=Mode(edge_judge),
    reference=Mode(swapped_edge_judge, follows="a peer that forgot that image y points down"),
    thresholds=("gap",),
    score=Score("toy_score", "toy_correct", "share", "Toy edge score (correct images of {n})",
                of_row=toy_correct, cuts={"min_confidence": 0.5}))
"""The toy rule's record."""
