"""The registry of statistics: every statistic's contract (header, point estimate = the
unresampled centre of its interval, an independent library's value) and known answers."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    f1_score,
    precision_recall_fscore_support,
)

from spatialprobe.metrics.estimates import measured, point_estimates
from spatialprobe.metrics.intervals import Resampling, encode, grouped
from spatialprobe.metrics.statistics import REGISTRY, get, statistic
from spatialprobe.metrics.weighted import NUMERIC, STATISTICS

LABELS = ("a", "b", "c")
GOLD = ["a", "a", "b", "b", "c", "a", "b", "c", "c", "a"]
PRED = ["a", "b", "b", "--", "a", "a", "x", "c", "b", "a"]  # "--", "x": answers outside the labels
VALUES = [0.25, 1.0, 0.0, 0.5, 0.75, 1.0, 0.0, 0.125, 1.0, 0.5]


def _gold_labels() -> list[str]:
    return [label for label in LABELS if label in GOLD]


def _pr() -> tuple[float, float]:
    p, r, _, _ = precision_recall_fscore_support(GOLD, PRED, labels=_gold_labels(), average="macro", zero_division=0)
    return float(p), float(r)


REFERENCE = {
    "accuracy": lambda: 100 * accuracy_score(GOLD, PRED),
    "macro_f1": lambda: 100 * f1_score(GOLD, PRED, labels=list(LABELS), average="macro", zero_division=0),
    "macro_f1_seen": lambda: 100 * f1_score(GOLD, PRED, average="macro", zero_division=0),
    "macro_f1_gold": lambda: 100 * f1_score(GOLD, PRED, labels=_gold_labels(), average="macro", zero_division=0),
    "precision_gold": lambda: 100 * _pr()[0],
    "recall_gold": lambda: 100 * _pr()[1],
    "pr_f1_gold": lambda: 200 * _pr()[0] * _pr()[1] / (_pr()[0] + _pr()[1]),
    "balanced_accuracy": lambda: 100 * balanced_accuracy_score(GOLD, PRED),
    "share": lambda: 100 * float(np.mean(np.array(VALUES) > 0.4)),
    "mean": lambda: float(np.mean(VALUES)),
    "mra": lambda: 100 * float(np.mean(VALUES)),  # each row's MRA in [0, 1], averaged, in percent
    "within_tolerance": lambda: 100 * float(np.mean(VALUES)),  # each row's 1/0 (here any value in [0, 1])
}
"""Each registered statistic's value on the fixed rows, from scikit-learn or numpy."""


def rows_for(name: str) -> tuple[list[dict], Resampling]:
    """The fixed rows and a Resampling that measures ``name`` on them (two clusters per row)."""
    numeric = name in NUMERIC
    rows = [{"instance_id": str(n), "obj_a": f"o{n % 3}", "obj_b": f"o{n % 4}", "gold": g,
             "pred": (VALUES[n] > 0.4 if name == "share" else VALUES[n]) if numeric else p}
            for n, (g, p) in enumerate(zip(GOLD, PRED, strict=True))]
    return rows, Resampling(() if numeric else LABELS, ("obj_a", "obj_b"), metrics={"m": name})


def test_every_statistic_is_registered_once_with_its_header():
    assert list(STATISTICS) == list(REGISTRY) and set(REFERENCE) == set(REGISTRY)
    for s in REGISTRY.values():
        assert s.header and s.column and s.description and s.higher_is_better is True
        assert STATISTICS[s.name] is s.function
    with pytest.raises(ValueError, match="declared twice"):
        statistic("accuracy", "accuracy")(lambda gold, pred, weights, n_labels: pred)
    with pytest.raises(ValueError, match="unknown statistic 'acuracy'; known: accuracy, macro_f1"):
        get("acuracy")


@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")
@pytest.mark.parametrize("name", list(REGISTRY))
def test_the_point_estimate_is_the_unresampled_centre_and_equals_an_independent_library(name):
    rows, spec = rows_for(name)
    enc = encode(rows, spec)
    centre = float(grouped(enc, name, enc.pred, np.ones((1, len(rows))))[-1, 0])
    point = point_estimates(rows, spec)["m"]
    assert point.mean == centre and point.n == len(rows) and point.std is None
    assert point.mean == pytest.approx(REFERENCE[name](), rel=1e-12)
    metrics, _ = measured({}, [spec], rows, seed=0, resamples=50)  # the spine's hook: same point
    assert metrics["m"].mean == centre and metrics["m"].resampled


def test_accuracy_and_f1_equal_scikit_learn_bit_for_bit():
    for name in ("accuracy", "macro_f1"):
        rows, spec = rows_for(name)
        assert point_estimates(rows, spec)["m"].mean == REFERENCE[name]()


def test_known_answers_all_correct_100_constant_answer_exactly_chance():
    gold = ["yes", "no"] * 6
    rows = [{"instance_id": str(n), "gold": g, "pred": g} for n, g in enumerate(gold)]
    label_stats = [n for n in REGISTRY if n not in NUMERIC]
    spec = Resampling(("yes", "no"), metrics={n: n for n in label_stats})
    assert {n: m.mean for n, m in point_estimates(rows, spec).items()} == dict.fromkeys(label_stats, 100.0)
    constant = [{**r, "pred": "yes"} for r in rows]
    got = {n: m.mean for n, m in point_estimates(constant, spec).items()}
    # "yes": precision 1/2, recall 1, F1 2/3; "no" never said: F1 0
    assert got["accuracy"] == 50.0 and got["balanced_accuracy"] == 50.0
    assert got["macro_f1"] == pytest.approx(100 / 3) and got["macro_f1_gold"] == pytest.approx(100 / 3)
    assert got["macro_f1"] == 100 * f1_score(gold, ["yes"] * 12, labels=["yes", "no"], average="macro",
                                             zero_division=0)


def test_groups_give_mean_and_population_sigma_or_a_pooled_breakdown():
    rows = [{"instance_id": str(n), "fold": n % 2, "gold": "a", "pred": "a" if n < 5 else "b"} for n in range(8)]
    folds = Resampling(("a", "b"), group="fold", part="fold {}", metrics={"accuracy": "accuracy"})
    metric = point_estimates(rows, folds)["accuracy"]
    # fold 0: rows 0 2 4 6 -> 3 of 4; fold 1: rows 1 3 5 7 -> 2 of 4
    assert {k: (v.mean, v.n) for k, v in metric.breakdown.items()} == {"fold 0": (75.0, 4), "fold 1": (50.0, 4)}
    assert (metric.mean, metric.std, metric.n) == (62.5, float(np.std([75.0, 50.0])), 8)
    pooled = point_estimates(rows, Resampling(("a", "b"), group="fold", pooled=True))["accuracy"]
    assert (pooled.mean, pooled.std, pooled.breakdown["1"].mean) == (62.5, None, 50.0)


def test_a_subset_counts_its_rows_and_an_empty_one_is_none():
    rows = [{"instance_id": str(n), "gold": "a", "pred": "a" if n else "b", "seen": n > 1} for n in range(4)]
    seen = point_estimates(rows, Resampling(("a", "b"), only="seen"))["accuracy"]
    assert (seen.mean, seen.n) == (100.0, 2)
    nothing = point_estimates([{**r, "seen": False} for r in rows], Resampling(("a", "b"), only="seen"))
    assert (nothing["accuracy"].mean, nothing["accuracy"].n) == (None, 0)
    assert point_estimates([], Resampling(("a", "b")))["macro_f1"].mean is None


def test_a_metric_the_kind_gives_itself_is_kept_and_the_summary_names_each_statistic():
    from spatialprobe.runner.summary import Metric, build_summary, statistic_of

    rows, spec = rows_for("balanced_accuracy")
    metrics, intervals = measured({"other": Metric(1.0, None, 1)}, [spec], rows, seed=0, resamples=20)
    assert list(metrics) == ["m", "other"] and metrics["other"].mean == 1.0
    summary = build_summary(kind="k", task=None, model=None, dataset=None, seed=0, metrics=metrics, details={},
                            identity="i", provenance={}, intervals=intervals)
    assert summary["statistics"] == {"m": {"statistic": "balanced_accuracy", "header": "balanced accuracy",
                                           "higher_is_better": True}}
    assert statistic_of(summary, "m").header == "balanced accuracy"
    assert statistic_of({}, "macro_f1").header == "macro-F1" and statistic_of({}, "kappa") is None


def test_tables_take_headers_from_the_registry():
    from spatialprobe.metrics.paired import PairedDifference
    from spatialprobe.reports.tables import header_of, paired_table

    diffs = [PairedDifference("accuracy", 60.0, 50.0, 10.0, (2.0, 18.0), 0.01, "accuracy"),
             PairedDifference("f1", 40.0, 40.0, 0.0, None, 1.0, "pr_f1_gold"),
             PairedDifference("balanced", 55.0, 50.0, 5.0, None, 0.5, "balanced_accuracy"),
             PairedDifference("recall", 55.0, 50.0, 5.0, None, 0.5, "balanced_accuracy")]
    table = paired_table("A", "B", diffs, 100, 0, "cluster bootstrap")
    assert "| accuracy | 60.0 | 50.0 | +10.0 | [2.0, 18.0] | 0.010 | significant |" in table
    assert "| F1 (2PR/(P+R)) | 40.0 |" in table
    assert "| balanced (balanced accuracy) |" in table and "| recall (balanced accuracy) |" in table
    summary = {"intervals": {"statistics": {"accuracy": "accuracy"}, "also": [{"statistics": {"f1": "pr_f1_gold"}}]}}
    assert [header_of(summary, m) for m in ("accuracy", "f1", "macro_f1", "kappa")] == [
        "accuracy", "F1 (2PR/(P+R))", "macro-F1", "kappa"]


def test_two_groupings_of_one_metric_share_its_value_and_join_their_breakdowns():
    rows = [{"instance_id": str(n), "image": f"i{n}", "category": "near" if n < 4 else "far",
             "relation": "left" if n % 2 else "right", "gold": 1, "pred": 1 if n < 6 else 0} for n in range(8)]
    by_category = Resampling((0, 1), ("image",), group="category", part="category {}", pooled=True,
                             metrics={"accuracy": "accuracy"})
    by_relation = Resampling((0, 1), ("image",), group="relation", part="relation {}", pooled=True,
                             metrics={"accuracy": "accuracy"})
    metrics, _ = measured({}, [by_category, by_relation], rows, seed=0, resamples=30)
    accuracy = metrics["accuracy"]
    assert (accuracy.mean, accuracy.n) == (75.0, 8)
    assert {k: v.mean for k, v in accuracy.breakdown.items()} == {
        "category near": 100.0, "category far": 50.0, "relation right": 75.0, "relation left": 75.0}
    assert all(part.resampled for part in accuracy.breakdown.values())


def test_a_resampling_naming_an_unknown_statistic_is_refused_where_it_is_declared():
    with pytest.raises(ValueError, match="unknown statistic 'f1_macro'; known: accuracy"):
        Resampling(("a", "b"), metrics={"f1": "f1_macro"})


class Erratic:
    """Says "larger" for some pairs and "smaller" for others, by the length of the prompt: right
    on some rows of every fold, wrong on others, so the folds' figures differ."""

    name = "erratic"

    def __init__(self, dataset):
        pass

    def describe(self):
        return {"scorer": self.name, "model": self.name, "weights_sha256": "0"}

    def score(self, requests, progress=None):
        return [tuple(0.0 if (w == "larger") == (len(r.prefix) % 3 == 0) else -5.0 for w in r.options)
                for r in requests]


def test_a_probe_run_reports_per_fold_scikit_learn_figures_and_their_mean_and_population_sigma(tmp_path):
    import json

    from spatialprobe.probing.run import ProbeSettings, run_probe
    from spatialprobe.prompts.templates import Candidates
    from spatialprobe.tasks import data as task_data

    cands = Candidates("size", ("[A] is [MASK] than [B].",), {"larger": ("larger",), "smaller": ("smaller",)},
                       "test")
    ds = task_data.load("size")
    summary = run_probe(ds, cands, ProbeSettings(model="erratic"), tmp_path / "run", scorer=Erratic(ds))
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    labels = ["larger", "smaller"]
    for name, score in (("accuracy", lambda g, p: 100 * accuracy_score(g, p)),
                        ("macro_f1", lambda g, p: 100 * f1_score(g, p, labels=labels, average="macro",
                                                                 zero_division=0))):
        folds = [score([r["gold"] for r in rows if r["fold"] == f], [r["pred"] for r in rows if r["fold"] == f])
                 for f in range(5)]
        metric = summary["metrics"][name]
        assert [metric["breakdown"][f"fold {f}"]["mean"] for f in range(5)] == folds  # bit for bit
        assert [f[name] for f in summary["details"]["folds"]] == folds
        assert metric["mean"] == float(np.mean(folds)) and metric["std"] == float(np.std(folds))
        assert len(set(folds)) > 1  # the folds differ: σ is measured, not 0


def test_the_confusion_matrix_equals_scikit_learns_values_outside_the_labels_left_out():
    from sklearn.metrics import confusion_matrix

    from spatialprobe.metrics.classification import confusion

    gold = ["a", "b", "c", "a", "b", "x", "a", "c"]
    pred = ["a", "c", "c", "b", "--", "a", "a", "a"]
    for labels in (["a", "b", "c"], ["c", "a"], ["b", "a", "c", "d"]):
        assert confusion(gold, pred, labels) == {
            "labels": labels, "matrix": confusion_matrix(gold, pred, labels=labels).tolist()}
