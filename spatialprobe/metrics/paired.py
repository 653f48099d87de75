"""Is the difference between two runs on the same items real? Paired interval and permutation test.

Two runs are paired when they answered the same items: the same dataset (``name@version``) and
the same prediction keys (``instance_id`` and, where there is one, ``fold``). The difference of a
metric (run A minus run B, computed as each run's point estimate is: per fold, then the mean) gets

* a 95 % interval from the cluster bootstrap of :mod:`.intervals`: one draw of objects weights
  both runs' rows alike, so what the two runs share (the items' difficulty) cancels;
* a two-sided paired permutation p-value (``scipy.stats.permutation_test``, paired "samples"
  permutations): under "the two runs are exchangeable", each unit's two sets of predictions are
  swapped with probability 1/2. A unit is the set of a row's clusters: an object where one object
  decides independence, an instance where there are no objects, and for a pair of objects the
  unordered pair (a row cannot be given to one of its two objects, so both orders of a pair and
  every fold's copy of it swap together).

The swaps do not reach the dependence between different pairs that share an object; the
bootstrap interval does. A difference is therefore called significant at 0.05 only when both say
so: p < 0.05 and the interval excludes 0. Everything else is marked "n.s.".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from spatialprobe.metrics.intervals import (
    DEFAULT_RESAMPLES,
    Resampling,
    batch_for,
    cluster_bootstrap,
    encode,
    grouped,
    interval_pair,
    row_weights,
)

ALPHA = 0.05


@dataclass(frozen=True)
class PairedDifference:
    """One metric of run A against run B on the same items."""

    metric: str
    a: float
    b: float
    difference: float
    """A minus B, in points."""
    ci: tuple[float, float] | None
    p: float
    """Two-sided paired permutation p-value."""
    statistic: str | None = None
    """The registered statistic it was measured with (:mod:`.statistics`: its header, direction)."""

    @property
    def significant(self) -> bool:
        ci_excludes_zero = self.ci is not None and (self.ci[0] > 0 or self.ci[1] < 0)
        return self.p < ALPHA and ci_excludes_zero


def row_key(row: Mapping[str, Any], key: Sequence[str] = ("instance_id", "fold")) -> tuple[Any, ...]:
    return (str(row[key[0]]), *(row.get(f) for f in key[1:]))


def unpaired_reason(summary_a: Mapping[str, Any], rows_a: Sequence[Mapping[str, Any]],
                    summary_b: Mapping[str, Any], rows_b: Sequence[Mapping[str, Any]],
                    spec: Resampling | None = None) -> str | None:
    """Why the two runs cannot be paired, or None when they answered the same items.

    ``spec`` names the fields that identify a row and hold gold (default: ``instance_id`` and
    ``fold``, ``gold``)."""
    key, gold = (spec.key, spec.gold) if spec is not None else (("instance_id", "fold"), "gold")
    if summary_a.get("dataset") != summary_b.get("dataset"):
        return f"they were run on different data ({summary_a.get('dataset')} vs {summary_b.get('dataset')})"
    if not rows_a or not rows_b or any(key[0] not in r for r in (*rows_a, *rows_b)):
        return f"their predictions.jsonl rows are missing or carry no {key[0]}"
    keys_a, keys_b = {row_key(r, key) for r in rows_a}, {row_key(r, key) for r in rows_b}
    if keys_a != keys_b or len(keys_a) != len(rows_a) or len(keys_b) != len(rows_b):
        return (f"their predictions are not for the same items: {len(keys_a - keys_b)} keys "
                f"({', '.join(key)}) only in A, {len(keys_b - keys_a)} only in B (different folds or seeds?)")
    gold_b = {row_key(r, key): r.get(gold) for r in rows_b}
    if any(gold_b[row_key(r, key)] != r.get(gold) for r in rows_a):
        return "their gold labels differ on the same items"
    return None


def paired_differences(rows_a: Sequence[Mapping[str, Any]], rows_b: Sequence[Mapping[str, Any]],
                       spec: Resampling, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
                       ) -> list[PairedDifference]:
    """Each of ``spec.metrics`` (accuracy and macro-F1 by default) of A minus B with interval and
    p-value (rows already paired). A row B lacks the ``only`` flag of counts in neither run."""
    pred_b = {row_key(r, spec.key): r for r in rows_b}
    rows = [{**r, "__pred_b": pred_b[row_key(r, spec.key)].get(spec.pred),
             **({spec.only: bool(r.get(spec.only)) and bool(pred_b[row_key(r, spec.key)].get(spec.only))}
                if spec.only else {})} for r in rows_a]
    enc = encode(rows, spec, also="__pred_b")
    assert enc.other is not None
    other = enc.other
    statistics = list(dict.fromkeys(spec.metrics.values()))
    ones = np.ones(len(rows))

    def difference(stat: str, a: np.ndarray, b: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return grouped(enc, stat, a, weights)[-1] - grouped(enc, stat, b, weights)[-1]

    def boot(draws: np.ndarray) -> np.ndarray:
        weights = row_weights(draws, enc.keys, enc.n_clusters)
        return np.stack([difference(s, enc.pred, other, weights) for s in statistics])

    low, high = cluster_bootstrap(enc.n_clusters, boot, len(rows), resamples, seed)
    units = _units(rows, spec)
    out = []
    first = {stat: name for name, stat in reversed(list(spec.metrics.items()))}
    for name, stat in spec.metrics.items():
        if first[stat] != name:  # one statistic under two names (VISOR's accuracy is VISOR): once
            continue
        k = statistics.index(stat)
        a, b = (float(grouped(enc, stat, p, ones)[-1]) for p in (enc.pred, other))
        p_value = _permutation_p(enc, stat, other, units, resamples, seed, difference)
        out.append(PairedDifference(name, a, b, a - b, interval_pair(low[k], high[k]), p_value, stat))
    return out


def _units(rows: Sequence[Mapping[str, Any]], spec: Resampling) -> np.ndarray:
    """Index of each row's swap unit: the (unordered) set of its clusters."""
    sets = [frozenset(str(r[f]) for f in spec.clusters) for r in rows]
    index = {unit: n for n, unit in enumerate(dict.fromkeys(sets))}
    return np.array([index[s] for s in sets], dtype=int)


def _permutation_p(enc, stat: str, other: np.ndarray, units: np.ndarray, resamples: int, seed: int,
                   difference) -> float:
    n_units = int(units.max()) + 1
    ones = np.ones(len(units))

    def swapped(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        # x holds unit u as u when A keeps its predictions, u + n_units when they were swapped
        swap = (x >= n_units)[..., units]
        return difference(stat, np.where(swap, other, enc.pred), np.where(swap, enc.pred, other), ones)

    result = stats.permutation_test((np.arange(n_units), np.arange(n_units) + n_units), swapped,
                                    permutation_type="samples", vectorized=True, n_resamples=resamples,
                                    batch=batch_for(len(units)), rng=np.random.default_rng(seed))
    return float(result.pvalue)


def resampling_of(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> Resampling:
    """How a finished run's rows are resampled: as its summary's ``intervals`` say, else (a run
    written without intervals) over instances, per fold where its rows have folds."""
    info = summary.get("intervals")
    if info:
        return Resampling.described(info)
    labels = (summary.get("details") or {}).get("confusion", {}).get("labels")
    labels = labels or sorted({str(r["gold"]) for r in rows if "gold" in r})
    return Resampling(tuple(labels), ("instance_id",), "fold" if all("fold" in r for r in rows) else None)
