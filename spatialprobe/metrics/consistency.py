"""Consistency of comparison predictions, without gold (shared/ARCHITECTURE.md).

* **Symmetry**: over pairs predicted in both orders, the share where ``A > B`` goes with
  ``B < A`` (the two predictions point in opposite label directions).
* **Transitivity**: over ordered triples ``(A, B, C)`` of distinct objects whose ``(A, B)`` and
  ``(B, C)`` predictions agree in direction (both "larger" or both "smaller"), the share whose
  ``(A, C)`` prediction agrees too.

Predictions are compared only within one group (a fold, where one prompt configuration was
used); the reported figure pools the counts of all groups. Both get 95 % intervals from the
cluster bootstrap over objects (:func:`consistency_intervals`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import permutations
from typing import Any

import numpy as np

from spatialprobe.metrics.intervals import DEFAULT_RESAMPLES, LEVEL, cluster_bootstrap, interval_pair, row_weights


def _directions(rows: Iterable[Mapping], first_label: str) -> dict[tuple[str, str], int]:
    return {(r["obj_a"], r["obj_b"]): (1 if r["pred"] == first_label else -1) for r in rows}


def symmetry_units(direction: dict[tuple[str, str], int]) -> list[tuple[tuple[str, ...], bool]]:
    """(the pair of objects, whether its two orders point opposite ways) per pair asked both ways."""
    return [((a, b), d != direction[(b, a)]) for (a, b), d in direction.items()
            if a < b and (b, a) in direction]


def transitivity_units(direction: dict[tuple[str, str], int]) -> list[tuple[tuple[str, ...], bool]]:
    """(the triple, whether (A, C) agrees) per triple whose (A, B) and (B, C) agree in direction."""
    objects = sorted({o for pair in direction for o in pair})
    units: list[tuple[tuple[str, ...], bool]] = []
    for a, b, c in permutations(objects, 3):
        ab, bc, ac = direction.get((a, b)), direction.get((b, c)), direction.get((a, c))
        if ab is None or bc is None or ac is None or ab != bc:
            continue
        units.append(((a, b, c), ac == ab))
    return units


def symmetry_counts(direction: dict[tuple[str, str], int]) -> tuple[int, int]:
    units = symmetry_units(direction)
    return sum(agree for _, agree in units), len(units)


def transitivity_counts(direction: dict[tuple[str, str], int]) -> tuple[int, int]:
    units = transitivity_units(direction)
    return sum(agree for _, agree in units), len(units)


def _groups(predictions: Iterable[Mapping], group_key: str) -> list[tuple[str, list[Mapping]]]:
    groups: dict = defaultdict(list)
    for row in predictions:
        groups[row.get(group_key)].append(row)
    return [(str(key), rows) for key, rows in sorted(groups.items(), key=lambda kv: str(kv[0]))]


def consistency(predictions: Iterable[Mapping], first_label: str, group_key: str = "fold") -> dict:
    """Symmetry and transitivity in percent, pooled over groups, with counts and per group."""
    per_group = {}
    sums = {"symmetry": [0, 0], "transitivity": [0, 0]}
    for key, rows in _groups(predictions, group_key):
        direction = _directions(rows, first_label)
        counts = {"symmetry": symmetry_counts(direction), "transitivity": transitivity_counts(direction)}
        per_group[key] = {name: _pct(*c) for name, c in counts.items()}
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


def consistency_intervals(predictions: Sequence[Mapping], first_label: str, group_key: str = "fold",
                          resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """95 % intervals of symmetry and transitivity by the cluster bootstrap over objects.

    A resample draws the objects with replacement; a pair counts ``count(a) * count(b)`` times and a
    triple ``count(a) * count(b) * count(c)`` times (the vertex bootstrap of
    :mod:`.intervals`, one cluster per object of the unit), pooled over groups as the point is.
    """
    units: dict[str, list[tuple[tuple[str, ...], bool]]] = {"symmetry": [], "transitivity": []}
    for _, rows in _groups(predictions, group_key):
        direction = _directions(rows, first_label)
        units["symmetry"] += symmetry_units(direction)
        units["transitivity"] += transitivity_units(direction)
    objects = sorted({o for r in predictions for o in (r["obj_a"], r["obj_b"])})
    index = {o: n for n, o in enumerate(objects)}
    out: dict[str, Any] = {}
    for name, found in units.items():
        out[f"{name}_ci"] = _interval(found, index, resamples, seed) if found else None
    out["intervals"] = {"method": "cluster bootstrap over objects", "interval": "percentile",
                        "resamples": int(resamples), "level": LEVEL, "seed": int(seed),
                        "units": "a pair weighs count(a) * count(b), a triple count(a) * count(b) * count(c)"}
    return out


def _interval(units: list[tuple[tuple[str, ...], bool]], index: dict[str, int], resamples: int, seed: int
              ) -> list[float] | None:
    """None where the units are fewer than two distinct sets of objects (one pair asked both ways):
    every resample would weigh them alike, and the point estimate would pose as an interval."""
    if len({tuple(sorted(objects)) for objects, _ in units}) < 2:
        return None
    keys = np.array([[index[o] for o in objects] for objects, _ in units], dtype=int)
    agree = np.array([flag for _, flag in units], dtype=float)

    def share(draws: np.ndarray) -> np.ndarray:
        weights = row_weights(draws, keys, len(index))
        with np.errstate(invalid="ignore", divide="ignore"):
            return (100.0 * (weights @ agree) / weights.sum(-1))[None]

    low, high = cluster_bootstrap(len(index), share, len(units), resamples, seed)
    bounds = interval_pair(low[0], high[0])
    return None if bounds is None else list(bounds)


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
