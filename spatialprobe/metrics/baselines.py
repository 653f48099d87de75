"""Baselines printed beside an accuracy: what the answer prior alone scores, and the vision gain.

* **Answer prior.** The most frequent gold label of the rows a run may learn from (a probe's dev
  fold, a benchmark's training split), answered on every test row. Its accuracy is the share of
  that label among the test rows: a model that scores no better learned nothing the label counts
  do not already say.
* **Vision gain.** An image-conditioned run asks each item twice, once with its real image and
  once blind (no image, a blank one, or another item's image). The gain is accuracy(real) −
  accuracy(blind), paired per item: the interval and p-value come from
  :func:`spatialprobe.metrics.paired.paired_differences`, resampling the benchmark's own unit
  (the COCO image, the object), so what the two conditions share (an item's difficulty) cancels.
  A model that ignores the image has a gain of exactly 0 whatever the interval's width.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from spatialprobe.errors import UsageError
from spatialprobe.metrics.classification import label_statistics
from spatialprobe.metrics.intervals import DEFAULT_RESAMPLES, Resampling
from spatialprobe.metrics.paired import paired_differences


def majority_label(labels: Iterable[Hashable], order: Sequence[Hashable] = ()) -> Hashable:
    """The most frequent label; ties go to the label that comes first in ``order`` (the task's
    label order), then to the one seen first, so the choice never depends on hashing."""
    counts = Counter(labels)
    if not counts:
        raise UsageError("there are no training labels to take the answer prior from.")
    rank = {label: n for n, label in enumerate(order)}
    seen = {label: n for n, label in enumerate(counts)}
    return max(counts, key=lambda label: (counts[label], -rank.get(label, len(rank)), -seen[label]))


def answer_prior(train_labels: Iterable[Hashable], test_labels: Sequence[Hashable],
                 order: Sequence[Hashable] = ()) -> dict[str, Any]:
    """The answer-prior baseline: the training rows' majority label answered on every test row.

    Returns ``{"label", "accuracy", "n"}`` (the registered accuracy in points; None with no test rows)."""
    label = majority_label(train_labels, order)
    n = len(test_labels)
    accuracy = label_statistics(test_labels, [label] * n, list(order), ("accuracy",))["accuracy"] if n else None
    return {"label": label, "accuracy": accuracy, "n": n}


def vision_gain(real: Sequence[Mapping[str, Any]], blind: Sequence[Mapping[str, Any]],
                spec: Resampling, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
                ) -> dict[str, Any]:
    """accuracy(real) − accuracy(blind) with its paired 95 % interval and permutation p-value.

    ``real`` and ``blind`` are the prediction rows of the same items under the two conditions
    (paired on ``spec.key``; the rows must hold the same keys and gold); ``spec`` resamples the
    benchmark's unit. Every metric of ``spec.metrics`` is returned, accuracy first."""
    key = spec.key
    keys_real = {tuple(r.get(f) for f in key) for r in real}
    keys_blind = {tuple(r.get(f) for f in key) for r in blind}
    if keys_real != keys_blind or len(keys_real) != len(real) or len(keys_blind) != len(blind):
        raise UsageError(f"the real and blind rows are not the same items (keyed by {', '.join(key)}).")
    out: dict[str, Any] = {}
    for diff in paired_differences(real, blind, spec, resamples=resamples, seed=seed):
        out[diff.metric] = {"real": diff.a, "blind": diff.b, "gain": diff.difference,
                            "ci": list(diff.ci) if diff.ci is not None else None, "p": diff.p,
                            "significant": diff.significant}
    return out
