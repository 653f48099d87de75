"""A debiased subset: the most blind-solvable items pruned, as TsT's iterative bias pruning does.

Each round measures the bias score s(x) (the out-of-fold probability of the gold option,
:mod:`.blind`) of the items left, with the folds drawn again over them, and removes the ``step``
share (of the original items) with the highest scores (ties: by key); it stops when the blind
accuracy's clustered interval reaches chance, or when ``max_pruned`` of the items are gone. The
subset file (:mod:`spatialprobe.engine.subset`) records every round: the items removed with their
scores and the blind accuracy before it, so the pruning can be read and repeated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.audit.blind import chance, cluster_of, fold_splits, option_rows, out_of_fold, per_item, scored
from spatialprobe.benchmarks.base import Source, SourceItem
from spatialprobe.metrics.intervals import Resampling


def prune(items: Sequence[SourceItem], spec: Resampling, name: str = "logistic", folds: int = 5, seed: int = 0,
          step: float = 0.05, max_pruned: float = 0.3) -> tuple[list[SourceItem], list[dict[str, Any]]]:
    """(the items kept, one record per round) of iterative bias pruning (see the module)."""
    left = list(items)
    rounds: list[dict[str, Any]] = []
    per_round = max(1, math.ceil(step * len(items)))
    budget = math.floor(max_pruned * len(items))
    while True:
        groups = [cluster_of(item, spec.clusters) for item in left]
        rows = option_rows(left, groups)
        preds, p_gold = per_item(rows, out_of_fold(rows, name, fold_splits(rows, folds, seed), seed), left)
        found = scored(left, preds, spec, p_gold)
        level = chance(left)
        record: dict[str, Any] = {"items": len(left), "blind_accuracy": found.accuracy,
                                  "ci": list(found.ci) if found.ci else None, "chance": level}
        rounds.append(record)
        removable = min(per_round, budget - (len(items) - len(left)))
        if found.ci is None or found.ci[0] <= level or removable <= 0:
            record["stop"] = ("the blind accuracy's interval reaches chance" if found.ci is None or found.ci[0] <= level
                              else f"{max_pruned:.0%} of the items are pruned (--max-pruned)")
            return left, rounds
        order = sorted(range(len(left)), key=lambda n: (-p_gold[n], left[n].key))[:removable]
        record["removed"] = [[left[n].key, round(p_gold[n], 6)] for n in order]
        gone = set(order)
        left = [item for n, item in enumerate(left) if n not in gone]


def debiased_subset(source: Source, path: Path, name: str = "logistic", folds: int = 5, seed: int = 0,
                    step: float = 0.05, max_pruned: float = 0.3) -> tuple[Path, Mapping[str, Any]]:
    """Prune ``source``'s items and write the subset file at ``path`` (a folder: a file named by
    its hash inside it); (the file, its pruning record)."""
    from spatialprobe.engine.subset import write_subset

    kept, rounds = prune(source.items, source.spec, name, folds, seed, step, max_pruned)
    pruning = {"method": "iterative bias pruning (TsT, arXiv 2511.04655)", "classifier": name, "folds": folds,
               "seed": seed, "step": step, "max_pruned": max_pruned, "grouped_by": list(source.spec.clusters),
               "rounds": rounds}
    record = {"dataset": source.dataset, "source": dict(source.settings), "of": len(source.items),
              "keys": [item.key for item in kept], "pruning": pruning}
    return write_subset(record, path), pruning
