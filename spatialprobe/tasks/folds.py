"""Object-disjoint folds.

The rule, for ``k`` folds (default 5) and a seed:

1. The *fold keys* of an instance are the objects that decide where it belongs: both objects
   for a size/height comparison, the object (not the person) for posrel.
2. Keys are put in strata: the dataset's scale level where it has levels; otherwise, for
   comparisons, the rank of each object's share of "larger" gold answers, cut into groups of
   ``k`` (a proxy for levels); for posrel a single stratum.
3. Within each stratum the keys are shuffled with ``random.Random(seed)`` and dealt round-robin
   to folds, continuing where the previous stratum stopped, so every fold spans the levels and
   fold sizes differ by at most one key.
4. Fold ``i``'s **dev** set holds the instances whose keys all lie in fold ``i``; its **test**
   set holds the instances with no key in fold ``i``. Instances that mix fold ``i`` with other
   folds are in neither, so dev and test never share an object.

With the paper's 25 size objects in 5 levels, each fold holds one object per level: 20 dev
instances (10 pairs, both orders) and 320 test instances.
"""

from __future__ import annotations

import random
from collections import defaultdict

from spatialprobe.errors import UsageError
from spatialprobe.records import Dataset, Fold


def _is_comparison(task: str) -> bool:
    """A comparison task (its file says so); a file of an unknown task is treated as one by its labels."""
    from spatialprobe import tasks

    return task not in tasks.names() or tasks.get(task).is_comparison


def _strata(dataset: Dataset, keys: list[str], k: int) -> dict[str, int]:
    """Stratum of each key: its level, its rank group of ``k`` by "larger" share, or 0."""
    levels = dict(dataset.object_levels)
    if levels and all(key in levels for key in keys):
        return {key: levels[key] for key in keys}
    if not _is_comparison(dataset.task) or len(dataset.labels) != 2:
        return dict.fromkeys(keys, 0)
    wins: dict[str, list[int]] = defaultdict(list)
    for inst in dataset.instances:
        a_larger = inst.label == dataset.labels[0]
        wins[inst.obj_a].append(int(a_larger))
        wins[inst.obj_b].append(int(not a_larger))
    share = {key: sum(wins[key]) / len(wins[key]) for key in keys}
    ranked = sorted(keys, key=lambda key: (share[key], key))
    return {key: rank // k for rank, key in enumerate(ranked)}


def make_folds(dataset: Dataset, k: int = 5, seed: int = 0) -> list[Fold]:
    """Split ``dataset`` into ``k`` object-disjoint folds (see the module docstring)."""
    keys = sorted({key for inst in dataset.instances for key in inst.fold_keys})
    if len(keys) < k:
        raise UsageError(f"{dataset.name}: {len(keys)} objects cannot make {k} object-disjoint folds.")
    strata = _strata(dataset, keys, k)
    ordered = sorted(keys, key=lambda key: (strata[key], key))
    rng = random.Random(seed)
    fold_of: dict[str, int] = {}
    position = 0
    for stratum in sorted(set(strata.values())):
        members = [key for key in ordered if strata[key] == stratum]
        rng.shuffle(members)
        for key in members:
            fold_of[key] = position % k
            position += 1
    folds = []
    for index in range(k):
        dev, test = [], []
        for inst in dataset.instances:
            inside = [fold_of[key] == index for key in inst.fold_keys]
            if all(inside):
                dev.append(inst.id)
            elif not any(inside):
                test.append(inst.id)
        objects = tuple(sorted(key for key, fold in fold_of.items() if fold == index))
        folds.append(Fold(index=index, objects=objects, dev=tuple(dev), test=tuple(test)))
    return folds
