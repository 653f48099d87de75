"""How much of a benchmark can be answered without looking: the blind-solvability audit.

Test-set stress-testing (TsT, arXiv 2511.04655): a text-only classifier is trained on the
benchmark's own questions and options with k-fold cross-validation; what it scores out of fold is
what the wording alone gives away. Here, for the items of any source (:mod:`spatialprobe.benchmarks`):

* **Features per option, never the gold** (:func:`spatialprobe.audit.features.option_features`): the option's label, its
  text and each of its words (where labels are letters, the text is what an answer prior reads), its
  position and length in words, the number of options, and the item's relation, objects and
  question template (the question with its options and objects blanked) each crossed with the
  option's label - only what a reader of the question and options sees: a relation the question
  states, objects the question or an option names (:func:`relation_of`, :func:`objects_of`; a
  source's metadata can name the answer, as the size task's fact ``(ant, smaller, bird)`` does,
  which no label permutation would reveal; objects by their place: ``object0``, ``object1``, ...;
  the template whole and each of its words, as TsT's text features read the question), so a per-option
  classifier can prefer ``yes`` for ``inside`` and ``no`` for ``left of``; and the option's
  frequency (label and text) as the answer in the training folds (:class:`AnswerFrequency`,
  learned in ``fit`` from the training rows only).
* **Classifiers** (scikit-learn): logistic regression and a random forest, each a binary
  classifier of "this option is the gold one" over the rows of (item, option); an item's
  probabilities are normalised over its options, and the prediction is the most probable option.
* **Folds grouped by the benchmark's cluster unit** (its :class:`~spatialprobe.metrics.intervals.Resampling`'s
  clusters: the COCO image for VSR and SpatialMQA, the unordered object pair for the tasks'
  pairs, the scenario where nothing is shared): ``GroupKFold(shuffle=True, random_state=seed)``
  over the option rows, so every option of an item and every item of an image fall in the same
  fold, and a shortcut that lives inside one scene cannot leak from training to test.
* **The bias score** s(x) = the out-of-fold probability of the gold option (of the classifier with
  the higher blind accuracy); the **blind accuracy** with its clustered interval
  (:func:`spatialprobe.metrics.intervals.metric_intervals`), beside chance (the mean of 1/#answers,
  an item's distinct labels)
  and, for a run, beside the model's accuracy with the image (a paired difference,
  :func:`spatialprobe.metrics.paired.paired_differences`).
* **Prior baselines** fitted on the training folds (or a training split): the option most often
  gold overall, among items of the same relation, of the same (first) object, and the most
  often gold option position (:func:`prior_predictions`).
* **The label-permutation guard** (:func:`permutation_guard`): the same fold loop with each test
  item's gold replaced by one of its options drawn uniformly at random, the test rows' features
  computed again from the items *carrying that replaced gold*. A feature builder that never reads
  the gold scores chance in expectation (the draws are independent of everything it sees); one that
  reads the gold follows the replaced gold and scores far above. The audit refuses
  (:class:`GuardFailed`) when the guard's accuracy exceeds chance at one-sided p < 0.001 (the normal
  approximation of the sum of independent Bernoulli(1/#options) hits).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from spatialprobe.audit.features import (
    CLASSIFIERS,
    FeatureFn,
    classifier,
    object_of,
    option_features,
    relation_of,
)
from spatialprobe.benchmarks.base import Source, SourceItem
from spatialprobe.errors import SpatialprobeError, UsageError
from spatialprobe.metrics.intervals import Resampling, metric_intervals

PRIORS = ("majority", "per relation", "per object", "per position")
"""The prior baselines, by name (:func:`prior_predictions`)."""
GUARD_P = 0.001
"""The permutation guard fails where its accuracy exceeds chance at this one-sided p-value."""


class GuardFailed(SpatialprobeError, RuntimeError):
    """The label-permutation guard scored above chance: the features read the gold."""


def cluster_of(item: SourceItem, clusters: Sequence[str]) -> str:
    """The item's fold group: its cluster fields' values, sorted (an unordered object pair), or
    its key where the unit is the instance."""
    values = [item.key if name == "instance_id" else item.fields.get(name) for name in clusters]
    return "|".join(sorted(str(v) for v in values))


@dataclass(frozen=True)
class Rows:
    """The option rows of some items: features, target (1: the gold option), item index, group."""

    X: list[dict[str, Any]]
    y: np.ndarray
    item: np.ndarray
    groups: np.ndarray


def option_rows(items: Sequence[SourceItem], groups: Sequence[str], features: FeatureFn = option_features) -> Rows:
    """One row per (item, option), in item order."""
    X, y, which, grouped = [], [], [], []
    for n, (item, group) in enumerate(zip(items, groups, strict=True)):
        for i, label in enumerate(item.labels):
            X.append(dict(features(item, i)))
            y.append(int(label == item.gold))
            which.append(n)
            grouped.append(group)
    return Rows(X, np.array(y), np.array(which), np.array(grouped, dtype=object))


def splitter(folds: int, seed: int) -> Any:
    """The fold splitter: scikit-learn's GroupKFold, groups shuffled with ``seed``."""
    from sklearn.model_selection import GroupKFold

    return GroupKFold(n_splits=folds, shuffle=True, random_state=seed)


def fold_splits(rows: Rows, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train row indices, test row indices) per fold; refused with fewer groups than folds."""
    found = len(set(rows.groups.tolist()))
    if found < folds:
        raise UsageError(f"the items fall in {found} cluster(s), fewer than the {folds} folds; give --folds "
                         f"{max(2, found)} or fewer.")
    return list(splitter(folds, seed).split(rows.X, rows.y, rows.groups))


def per_item(rows: Rows, probability: np.ndarray, items: Sequence[SourceItem]) -> tuple[list[str], list[float]]:
    """Each item's prediction (its most probable option's label, the first of equal ones) and its
    probability of the gold option (the options' probabilities normalised over the item)."""
    preds, p_gold = [], []
    for n, item in enumerate(items):
        p = probability[rows.item == n]
        p = p / p.sum() if p.sum() > 0 else np.full(len(p), 1 / len(p))
        preds.append(item.labels[int(np.argmax(p))])
        p_gold.append(float(p[item.labels.index(item.gold)]) if item.gold in item.labels else 0.0)
    return preds, p_gold


def out_of_fold(rows: Rows, name: str, splits: Sequence[tuple[np.ndarray, np.ndarray]], seed: int) -> np.ndarray:
    """Each row's out-of-fold probability of being the gold option (what scikit-learn's
    ``cross_val_predict(..., method="predict_proba")[:, 1]`` gives with the same splits)."""
    from sklearn.base import clone

    model = classifier(name, seed)
    out = np.zeros(len(rows.y))
    for train, test in splits:
        fitted = clone(model).fit([rows.X[i] for i in train], rows.y[train])
        out[test] = fitted.predict_proba([rows.X[i] for i in test])[:, 1]
    return out


def _choose(item: SourceItem, counts: Mapping[str, int]) -> str:
    """The item's option label most often counted (ties: the first option)."""
    return max(item.labels, key=lambda label: (counts.get(label, 0), -item.labels.index(label)))


def prior_predictions(train: Sequence[SourceItem], test: Sequence[SourceItem]) -> dict[str, list[str]]:
    """Each prior baseline's prediction for every test item, fitted on ``train`` (gold counts):
    ``majority`` the option most often gold overall; ``per relation`` / ``per object`` most often
    gold among training items of the same relation / first object (one never seen in training:
    the overall counts); ``per position`` the option at the position most often gold (among the
    item's positions). Ties go to the first option."""
    overall = Counter(item.gold for item in train)
    by_relation: dict[str, Counter[str]] = {}
    by_object: dict[str, Counter[str]] = {}
    positions = Counter(item.labels.index(item.gold) for item in train if item.gold in item.labels)
    for item in train:
        by_relation.setdefault(relation_of(item), Counter())[item.gold] += 1
        by_object.setdefault(object_of(item), Counter())[item.gold] += 1
    out: dict[str, list[str]] = {name: [] for name in PRIORS}
    for item in test:
        out["majority"].append(_choose(item, overall))
        out["per relation"].append(_choose(item, by_relation.get(relation_of(item), overall)))
        out["per object"].append(_choose(item, by_object.get(object_of(item), overall)))
        best = max(range(len(item.labels)), key=lambda i: (positions.get(i, 0), -i))
        out["per position"].append(item.labels[best])
    return out


@dataclass(frozen=True)
class Scored:
    """One blind predictor's out-of-fold accuracy (percent) with its clustered interval."""

    accuracy: float
    ci: tuple[float, float] | None
    pred: tuple[str, ...]
    p_gold: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy, "ci": list(self.ci) if self.ci else None}


def resampling(spec: Resampling) -> Resampling:
    """The source's clusters, over items pooled once each (no folds, no groups): accuracy only."""
    return Resampling(tuple(spec.labels), tuple(spec.clusters), key=("instance_id",), pooled=True,
                      fold_case=spec.fold_case, unit=spec.unit, metrics={"accuracy": "accuracy"})


def item_rows(items: Sequence[SourceItem], preds: Sequence[str], spec: Resampling) -> list[dict[str, Any]]:
    """Prediction rows as a run writes them (``instance_id``, ``gold``, ``pred`` and the clusters)."""
    return [{"instance_id": item.key, "gold": item.gold, "pred": pred,
             **{c: item.fields.get(c) for c in spec.clusters if c != "instance_id"}}
            for item, pred in zip(items, preds, strict=True)]


def scored(items: Sequence[SourceItem], preds: Sequence[str], spec: Resampling,
           p_gold: Sequence[float] = ()) -> Scored:
    """Accuracy of ``preds`` (the share equal to gold, case folded where the source folds case)
    with the cluster-robust interval of :func:`metric_intervals` over the source's clusters."""
    fold = (lambda s: s.casefold()) if spec.fold_case else (lambda s: s)
    hits = [fold(p) == fold(item.gold) for item, p in zip(items, preds, strict=True)]
    accuracy = round(100 * sum(hits) / len(hits), 6)
    ci = metric_intervals(item_rows(items, preds, spec), resampling(spec))["accuracy"][""]
    return Scored(accuracy, ci, tuple(preds), tuple(p_gold))


def chance(items: Sequence[SourceItem]) -> float:
    """The accuracy of a uniform guess among each item's answers (its distinct labels: GenEval 2's
    ``Yes``/``yes``/``No``/``no`` are two), in percent."""
    return 100 * float(np.mean([1 / len(set(item.labels)) for item in items]))


@dataclass(frozen=True)
class BlindAudit:
    """What :func:`audit_items` found (``to_dict`` is the JSON the command writes)."""

    dataset: str
    n: int
    folds: int
    seed: int
    unit: str
    chance: float
    priors: dict[str, Scored]
    classifiers: dict[str, Scored]
    importances: dict[str, list[tuple[str, float]]]
    guard: dict[str, Any]
    keys: tuple[str, ...]
    bias: str
    """The classifier whose out-of-fold P(gold) is the bias score (the more accurate one)."""
    vision: dict[str, Any] | None = None
    split_priors: dict[str, Scored] = field(default_factory=dict)
    """Prior baselines fitted on the benchmark's training split (where one was given)."""

    @property
    def bias_scores(self) -> dict[str, float]:
        """s(x) per item key: the out-of-fold probability of its gold option."""
        return dict(zip(self.keys, self.classifiers[self.bias].p_gold, strict=True))

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "n": self.n, "folds": self.folds, "seed": self.seed,
                "grouped_by": self.unit, "chance": self.chance,
                "priors": {k: v.to_dict() for k, v in self.priors.items()},
                "priors_from_training_split": {k: v.to_dict() for k, v in self.split_priors.items()},
                "classifiers": {k: v.to_dict() for k, v in self.classifiers.items()},
                "importances": {k: [[f, v] for f, v in pairs] for k, pairs in self.importances.items()},
                "guard": self.guard, "bias_classifier": self.bias, "bias_scores": self.bias_scores,
                "vision": self.vision}


def importances(rows: Rows, name: str, seed: int, top: int = 10) -> list[tuple[str, float]]:
    """The ``top`` features of the classifier fitted on every row: the random forest's impurity
    importances, the logistic regression's coefficients (by absolute value, signed)."""
    model = classifier(name, seed).fit(rows.X, rows.y)
    names = model.named_steps["features"].get_feature_names_out()
    fitted = model.named_steps["model"]
    values = fitted.feature_importances_ if name == "forest" else fitted.coef_[0]
    order = np.argsort(-np.abs(values), kind="stable")[:top]
    return [(str(names[i]).split("__", 1)[-1], round(float(values[i]), 6)) for i in order]


def permutation_guard(items: Sequence[SourceItem], groups: Sequence[str], name: str, folds: int, seed: int,
                      spec: Resampling, features: FeatureFn = option_features) -> dict[str, Any]:
    """The fold loop with each test item's gold replaced by a uniformly drawn option and the test
    rows' features computed from the items carrying it; raises :class:`GuardFailed` where the
    accuracy against the replaced gold exceeds chance at one-sided p < :data:`GUARD_P`."""
    from scipy.stats import norm
    from sklearn.base import clone

    rng = np.random.default_rng(seed)
    rows = option_rows(items, groups, features)
    shuffled = list(items)
    preds: list[str] = [""] * len(items)
    for train, test in fold_splits(rows, folds, seed):
        model = clone(classifier(name, seed)).fit([rows.X[i] for i in train], rows.y[train])
        tested = sorted(set(rows.item[test].tolist()))
        for n in tested:
            shuffled[n] = replace(items[n], gold=items[n].labels[int(rng.integers(len(items[n].labels)))])
        sub = [shuffled[n] for n in tested]
        sub_rows = option_rows(sub, [groups[n] for n in tested], features)
        found, _ = per_item(sub_rows, model.predict_proba(sub_rows.X)[:, 1], sub)
        for n, pred in zip(tested, found, strict=True):
            preds[n] = pred
    result = scored(shuffled, preds, spec)
    p = np.array([item.labels.count(pred) / len(item.labels) for pred, item in zip(preds, items, strict=True)])
    hits = sum(pred == item.gold for pred, item in zip(preds, shuffled, strict=True))
    z = (hits - p.sum()) / np.sqrt((p * (1 - p)).sum())
    p_value = float(norm.sf(z))
    out = {"classifier": name, "accuracy": result.accuracy, "ci": list(result.ci) if result.ci else None,
           "chance": chance(items), "p_above_chance": p_value, "passed": p_value >= GUARD_P}
    if not out["passed"]:
        raise GuardFailed(f"the label-permutation guard failed: with each test item's gold replaced by a "
                          f"random option the {name} classifier still scores {result.accuracy:.1f} % against "
                          f"chance {out['chance']:.1f} % (p = {p_value:.2g}), so the features read the gold.")
    return out


def audit_items(items: Sequence[SourceItem], spec: Resampling, dataset: str = "", folds: int = 5, seed: int = 0,
                features: FeatureFn = option_features, train: Sequence[SourceItem] = (),
                grouped: bool = True, run_rows: Sequence[Mapping[str, Any]] | None = None,
                names: Sequence[str] = CLASSIFIERS) -> BlindAudit:
    """The blind audit of ``items`` (see the module): clusters and interval from ``spec`` (a
    source's); ``grouped`` False puts every item in its own group (to show what grouping
    prevents); ``train``: a training split for the split prior baselines; ``run_rows``: a run's
    prediction rows on these items (first condition), compared with the blind accuracy;
    ``names``: the classifiers fitted (:data:`CLASSIFIERS`)."""
    if not items:
        raise UsageError("there are no items to audit.")
    groups = [cluster_of(item, spec.clusters) if grouped else item.key for item in items]
    rows = option_rows(items, groups, features)
    splits = fold_splits(rows, folds, seed)
    priors: dict[str, list[str]] = {name: [""] * len(items) for name in PRIORS}
    for _, test in splits:
        tested = sorted(set(rows.item[test].tolist()))
        train_items = [item for n, item in enumerate(items) if n not in set(tested)]
        for name, preds in prior_predictions(train_items, [items[n] for n in tested]).items():
            for n, pred in zip(tested, preds, strict=True):
                priors[name][n] = pred
    found = {}
    for name in names:
        preds, p_gold = per_item(rows, out_of_fold(rows, name, splits, seed), items)
        found[name] = scored(items, preds, spec, p_gold)
    bias = max(names, key=lambda name: found[name].accuracy)
    guard = permutation_guard(items, groups, bias, folds, seed, spec, features)
    split = ({name: scored(items, preds, spec) for name, preds in prior_predictions(train, items).items()}
             if train else {})
    unit = (spec.unit or ("object pairs" if len(spec.clusters) == 2 else "objects"
                          if spec.clusters != ("instance_id",) else "instances")) if grouped else "instances"
    return BlindAudit(dataset, len(items), folds, seed, unit, chance(items),
                      {name: scored(items, preds, spec) for name, preds in priors.items()}, found,
                      {name: importances(rows, name, seed) for name in names}, guard,
                      tuple(item.key for item in items), bias,
                      vision_against(items, found[bias], spec, run_rows) if run_rows is not None else None, split)


def vision_against(items: Sequence[SourceItem], blind: Scored, spec: Resampling,
                   run_rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run's accuracy with the image minus the blind classifier's, paired per item."""
    from spatialprobe.metrics.paired import paired_differences

    by_key = {str(r["instance_id"]): r for r in run_rows}
    kept = [(item, pred) for item, pred in zip(items, blind.pred, strict=True) if item.key in by_key]
    if not kept:
        raise UsageError("the run's predictions hold none of the audited items.")
    rows_blind = item_rows([i for i, _ in kept], [p for _, p in kept], spec)
    rows_run = [{**r, "pred": by_key[r["instance_id"]].get("pred")} for r in rows_blind]
    (diff,) = paired_differences(rows_run, rows_blind, resampling(spec))
    return {"accuracy": diff.a, "blind": diff.b, "difference": diff.difference,
            "ci": list(diff.ci) if diff.ci else None, "p": diff.p, "n": len(kept)}


def audit_source(source: Source, folds: int = 5, seed: int = 0, train: Sequence[SourceItem] = (),
                 run_rows: Sequence[Mapping[str, Any]] | None = None) -> BlindAudit:
    """:func:`audit_items` of a source's items, grouped by its cluster unit; items without options
    (numeric answers: VSI-Bench's distances, SpatialScore's open-ended items) are left out, said in
    the dataset's name, since a blind classifier chooses among options."""
    items = [item for item in source.items if len(item.options) >= 2]
    if not items:
        raise UsageError(f"{source.dataset} has no items with options (its answers are numbers): a blind audit "
                         "chooses among options.")
    left = len(source.items) - len(items)
    dataset = source.dataset + (f" ({left} items without options left out)" if left else "")
    return audit_items(items, source.spec, dataset, folds, seed, train=train, run_rows=run_rows)
