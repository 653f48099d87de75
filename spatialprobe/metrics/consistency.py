"""Consistency of comparison predictions, without gold (shared/ARCHITECTURE.md).

* **Symmetry**: over pairs predicted in both orders, the share where ``A > B`` goes with
  ``B < A`` (the two predictions point in opposite label directions).
* **Transitivity**: over ordered triples ``(A, B, C)`` of distinct objects whose ``(A, B)`` and
  ``(B, C)`` predictions agree in direction (both "larger" or both "smaller"), the share whose
  ``(A, C)`` prediction agrees too.

Predictions are compared only within one group (a fold, where one prompt configuration was
used); the reported figure pools the counts of all groups.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from itertools import permutations


def _directions(rows: Iterable[Mapping], first_label: str) -> dict[tuple[str, str], int]:
    return {(r["obj_a"], r["obj_b"]): (1 if r["pred"] == first_label else -1) for r in rows}


def symmetry_counts(direction: dict[tuple[str, str], int]) -> tuple[int, int]:
    agree = total = 0
    for (a, b), d in direction.items():
        if a < b and (b, a) in direction:
            total += 1
            agree += d != direction[(b, a)]
    return agree, total


def transitivity_counts(direction: dict[tuple[str, str], int]) -> tuple[int, int]:
    objects = sorted({o for pair in direction for o in pair})
    agree = total = 0
    for a, b, c in permutations(objects, 3):
        ab, bc, ac = direction.get((a, b)), direction.get((b, c)), direction.get((a, c))
        if ab is None or bc is None or ac is None or ab != bc:
            continue
        total += 1
        agree += ac == ab
    return agree, total


def consistency(predictions: Iterable[Mapping], first_label: str, group_key: str = "fold") -> dict:
    """Symmetry and transitivity in percent, pooled over groups, with counts and per group."""
    groups: dict = defaultdict(list)
    for row in predictions:
        groups[row.get(group_key)].append(row)
    per_group = {}
    sums = {"symmetry": [0, 0], "transitivity": [0, 0]}
    for key, rows in sorted(groups.items(), key=lambda kv: str(kv[0])):
        direction = _directions(rows, first_label)
        counts = {"symmetry": symmetry_counts(direction), "transitivity": transitivity_counts(direction)}
        per_group[str(key)] = {name: _pct(*c) for name, c in counts.items()}
        for name, (agree, total) in counts.items():
            sums[name][0] += agree
            sums[name][1] += total
    return {
        "symmetry": _pct(*sums["symmetry"]),
        "transitivity": _pct(*sums["transitivity"]),
        "symmetry_pairs": sums["symmetry"][1],
        "transitivity_triples": sums["transitivity"][1],
        "per_group": per_group,
    }


def _pct(agree: int, total: int) -> float | None:
    return 100.0 * agree / total if total else None


def object_bias(predictions: Iterable[Mapping], first_label: str) -> dict[str, dict[str, float | None]]:
    """Per object: share of predictions saying it is larger when it comes first, and share saying
    the other object is larger when it comes second (a position-blind model gives 50/50)."""
    first: dict[str, list[int]] = defaultdict(list)
    second: dict[str, list[int]] = defaultdict(list)
    for r in predictions:
        a_larger = r["pred"] == first_label
        first[r["obj_a"]].append(int(a_larger))
        second[r["obj_b"]].append(int(a_larger))
    objects = sorted(set(first) | set(second))
    return {o: {"object_larger": _pct(sum(first[o]), len(first[o])),
                "others_larger": _pct(sum(second[o]), len(second[o]))} for o in objects}
