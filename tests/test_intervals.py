"""Bootstrap intervals over objects: known answers, the pair rule, folds, determinism, the schema."""

import json

import numpy as np
import pytest
from interval_helpers import plain_wilson, wilson

from spatialprobe.files import read_jsonl
from spatialprobe.metrics.classification import accuracy_f1
from spatialprobe.metrics.intervals import INTERVAL, Resampling, encode, grouped, metric_intervals, row_weights
from spatialprobe.probing.run import ProbeSettings, run_probe
from spatialprobe.prompts.templates import Candidates, fill
from spatialprobe.runner.summary import Metric, check_summary
from spatialprobe.tasks import data as task_data

CANDS = Candidates("size", ("[A] is [MASK] than [B].",), {"larger": ("larger",), "smaller": ("smaller",)}, "test")


class Oracle:
    """Scores the gold answer word highest: every prediction is right."""

    name = "oracle"

    def __init__(self, dataset):
        self.gold = {fill(CANDS.templates[0], inst): inst.label for inst in dataset.instances}

    def describe(self):
        return {"scorer": self.name, "model": self.name, "weights_sha256": "0"}

    def score(self, requests, progress=None):
        return [tuple(0.0 if w == self.gold[(r.prefix, r.suffix)] else -5.0 for w in r.options) for r in requests]


class FirstLabel(Oracle):
    """Order-blind: always says the first object is larger, whatever the objects."""

    name = "first-label"

    def score(self, requests, progress=None):
        return [tuple(0.0 if w == "larger" else -5.0 for w in r.options) for r in requests]


def probe(tmp_path, scorer_class, name, seed=0, task="size"):
    ds = task_data.load(task)
    return run_probe(ds, CANDS, ProbeSettings(model=scorer_class.name, seed=seed), tmp_path / name,
                     scorer=scorer_class(ds))


def test_a_perfect_scorer_gets_the_wilson_interval_of_its_rows_not_100_100(tmp_path):
    # All right: no variance to measure a design effect from, so the effective size is the rows
    # (a fold's; their mean for the mean over folds), with t on 24 df (25 objects) - never [100, 100]
    summary = probe(tmp_path, Oracle, "oracle")
    folds = [p["n"] for p in summary["accuracy"]["breakdown"].values()]
    assert summary["accuracy"]["ci"] == wilson(1.0, 0.0, sum(folds) / len(folds), 25)
    rows = read_jsonl(tmp_path / "oracle" / "predictions.jsonl")
    objects = [len({r[f] for r in rows if f"fold {r['fold']}" == part for f in ("obj_a", "obj_b")})
               for part in summary["accuracy"]["breakdown"]]  # a fold's t has that fold's objects - 1 df
    assert [p["ci"] for p in summary["accuracy"]["breakdown"].values()] == [
        wilson(1.0, 0.0, n, k) for n, k in zip(folds, objects, strict=True)]
    whole = summary["metrics"]["whole_set_accuracy"]
    assert whole["mean"] == 100.0 and whole["ci"] == wilson(1.0, 0.0, whole["n"], 25)
    # macro-F1 of all right: the Wilson interval of all right at L x n_min rows; larger and smaller
    # are balanced (both orders of every pair), so it is the accuracy's own interval, not [100, 100]
    assert summary["metrics"]["macro_f1"]["mean"] == 100.0
    assert summary["metrics"]["macro_f1"]["ci"] == summary["accuracy"]["ci"]
    assert summary["metrics"]["whole_set_macro_f1"]["ci"] == whole["ci"]
    assert summary["intervals"] == {
        "method": "cluster-robust standard error over objects", "interval": INTERVAL, "level": 0.95,
        "clusters": ["obj_a", "obj_b"], "group": "fold", "labels": ["larger", "smaller"],
        "rows of two clusters": "covary through either object: sum_o S_o^2 - sum_pairs S_p^2 (variance components)",
        "gold": "gold", "pred": "pred",
        "key": ["instance_id", "fold"], "only": None, "pooled": False, "fold_case": False,
        "statistics": {"accuracy": "accuracy", "macro_f1": "macro_f1"},
        "metrics": ["accuracy", "macro_f1", "whole_set_accuracy", "whole_set_macro_f1"],
        "also": [{"group": None, "rows": "the whole set with the hand-written prompt, one row per instance",
                  "statistics": {"whole_set_accuracy": "accuracy", "whole_set_macro_f1": "macro_f1"}}]}
    table = (tmp_path / "oracle" / "table.md").read_text()
    assert "| mean ± σ |  | 100.0 ± 0.0 [98.7, 100.0] | 100.0 ± 0.0 [98.7, 100.0] |" in table
    assert "cluster-robust standard error over objects (obj_a, obj_b)." in table


def test_an_order_blind_scorer_is_exactly_50_in_every_resample(tmp_path):
    # Every pair is asked in both orders; a pair's two orders get the same weight c_a * c_b in every
    # resample, and exactly one of them is right: 50 % exactly, whatever objects are drawn.
    summary = probe(tmp_path, FirstLabel, "blind")
    assert summary["accuracy"]["mean"] == 50.0 and summary["accuracy"]["ci"] == [50.0, 50.0]
    low, high = summary["accuracy"]["ci"]
    assert low <= 50.0 <= high
    # macro-F1: "larger" has precision 1/2 and recall 1 (F1 2/3), "smaller" is never said (F1 0)
    assert summary["macro_f1"]["mean"] == pytest.approx(100 / 3)
    assert summary["macro_f1"]["ci"] == pytest.approx([100 / 3, 100 / 3])


def test_the_interval_is_the_same_for_every_seed_nothing_is_drawn(tmp_path):
    ds = task_data.load("size")
    rows = [{"instance_id": i.id, "obj_a": i.obj_a, "obj_b": i.obj_b, "gold": i.label,
             "pred": i.label if n % 3 else "larger"} for n, i in enumerate(ds.instances)]
    spec = Resampling(ds.labels, ("obj_a", "obj_b"))
    first, again = (metric_intervals(rows, spec, 1000, seed=7) for _ in range(2))
    other = metric_intervals(rows, spec, 1000, seed=8)
    assert first == again == other
    assert first["accuracy"][""][0] < accuracy_f1([r["gold"] for r in rows], [r["pred"] for r in rows],
                                                   ds.labels)["accuracy"] < first["accuracy"][""][1]


def test_a_run_records_its_seed_and_reproduces_its_intervals(tmp_path):
    runs = [probe(tmp_path, Oracle, f"run{n}", seed=3) for n in range(2)]
    assert "seed" not in runs[0]["intervals"] and "resamples" not in runs[0]["intervals"]  # nothing drawn
    assert runs[0]["metrics"] == runs[1]["metrics"]


def test_rows_of_two_objects_count_as_often_as_the_pair_can_be_formed():
    # objects 0, 1, 2 drawn as (0, 0, 1): counts 2, 1, 0
    keys = np.array([[0, 1], [1, 0], [1, 2], [0, 2], [0, 0]])
    weights = row_weights(np.array([[0, 0, 1]]), keys, 3)
    assert weights.tolist() == [[2.0, 2.0, 0.0, 0.0, 4.0]]
    one_key = row_weights(np.array([[2, 2, 2], [0, 1, 2]]), np.array([[0], [2]]), 3)
    assert one_key.tolist() == [[0.0, 3.0], [1.0, 1.0]]


def test_with_unit_weights_the_statistic_is_the_point_estimate_mean_over_folds(tmp_path):
    from spatialprobe.files import read_jsonl

    ds = task_data.load("size")
    summary = run_probe(ds, CANDS, ProbeSettings(model="dummy"), tmp_path / "dummy")
    rows = read_jsonl(tmp_path / "dummy" / "predictions.jsonl")
    enc = encode(rows, Resampling(ds.labels, ("obj_a", "obj_b"), group="fold"))
    ones = np.ones((1, len(rows)))
    for name in ("accuracy", "macro_f1"):
        values = grouped(enc, name, enc.pred, ones)[:, 0]
        assert values[-1] == pytest.approx(summary[name]["mean"], abs=1e-9)
        assert values[:-1] == pytest.approx([p["mean"] for p in summary[name]["breakdown"].values()], abs=1e-9)
        low, high = summary[name]["ci"]
        assert low < summary[name]["mean"] < high


def test_without_objects_instances_are_resampled():
    # one right, one wrong, each row its own cluster: independent rows, a design effect of 1 by
    # design, so Wilson's score interval of 1 of 2 itself (no K/(K-1), no t_1 shrink)
    rows = [{"instance_id": "a", "gold": "yes", "pred": "yes"}, {"instance_id": "b", "gold": "no", "pred": "yes"}]
    intervals = metric_intervals(rows, Resampling(("yes", "no")), 1000, seed=0)
    assert intervals["accuracy"] == {"": plain_wilson(1, 2)}
    assert Resampling(("yes", "no")).describe(10, 0)["method"] == "cluster-robust standard error over instances"


def test_the_summary_schema_carries_intervals_and_refuses_a_reversed_one():
    metric = Metric(50.0, 1.0, 10, {"fold 0": Metric(49.0, None, 5)}).with_intervals((40.0, 60.0),
                                                                                   {"fold 0": (30.0, 70.0)})
    assert metric.to_dict() == {"mean": 50.0, "std": 1.0, "n": 10, "ci": [40.0, 60.0],
                                "breakdown": {"fold 0": {"mean": 49.0, "std": None, "n": 5, "ci": [30.0, 70.0]}}}
    assert Metric(50.0, None, 10).to_dict() == {"mean": 50.0, "std": None, "n": 10}  # no interval: no key
    bad = dict.fromkeys(("schema", "kind", "task", "model", "dataset", "seed", "untrained", "accuracy",
                         "macro_f1", "details", "identity", "provenance"))
    bad["metrics"] = {"accuracy": {"mean": 50.0, "std": None, "n": 1, "ci": [60.0, 40.0]}}
    with pytest.raises(ValueError, match="not \\[low, high\\]"):
        check_summary(bad)


def test_posrel_resamples_objects_not_persons(tmp_path):
    ds = task_data.load("posrel")
    cands = Candidates("posrel", ("[SCENARIO] [PRONOUN] is [MASK] the [OBJECT].",),
                       {label: (label,) for label in ds.labels}, "manual")
    run_probe(ds, cands, ProbeSettings(model="dummy"), tmp_path / "posrel")
    summary = json.loads((tmp_path / "posrel" / "summary.json").read_text())
    assert summary["intervals"]["clusters"] == ["obj_b"]
    assert summary["intervals"]["labels"] == list(ds.labels)


def test_consistency_intervals_have_known_answers():
    from spatialprobe.metrics.consistency import consistency, consistency_intervals

    order = ["ant", "cup", "dog", "bus", "house"]
    right = [{"obj_a": a, "obj_b": b, "fold": 0, "pred": "larger" if order.index(a) > order.index(b) else "smaller"}
             for a in order for b in order if a != b]
    blind = [dict(r, pred="larger") for r in right]
    perfect = consistency_intervals(right, "larger", resamples=1000, seed=0)
    assert (perfect["symmetry_ci"], perfect["transitivity_ci"]) == ([100.0, 100.0], [100.0, 100.0])
    # always "larger": never symmetric, and every agreeing premise (both "larger") gives a "larger" conclusion
    assert consistency(blind, "larger")["symmetry"] == 0.0
    never = consistency_intervals(blind, "larger", resamples=1000, seed=0)
    assert (never["symmetry_ci"], never["transitivity_ci"]) == ([0.0, 0.0], [100.0, 100.0])
    assert never["intervals"]["seed"] == 0 and never["intervals"]["resamples"] == 1000
    # one pair flipped in one order: symmetry 9/10 pairs; the interval holds it, the same seed repeats it
    flipped = [dict(r, pred="larger") if (r["obj_a"], r["obj_b"]) == ("ant", "cup") else r for r in right]
    point = consistency(flipped, "larger")["symmetry"]
    first, again = (consistency_intervals(flipped, "larger", seed=5)["symmetry_ci"] for _ in range(2))
    assert point == 90.0 and first == again and first[0] < 90.0 <= first[1] == 100.0
    # one pair asked both ways: nothing to resample, no interval (not [100, 100])
    one = [r for r in right if {r["obj_a"], r["obj_b"]} == {"ant", "cup"}]
    assert consistency(one, "larger")["symmetry"] == 100.0
    assert consistency_intervals(one, "larger")["symmetry_ci"] is None


def test_the_consistency_command_reports_intervals_of_an_order_blind_run(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    probe(tmp_path, FirstLabel, "blind", seed=2)
    result = CliRunner().invoke(app, ["consistency", str(tmp_path / "blind"), "--no-plot"])
    assert result.exit_code == 0, result.output
    assert "symmetry 0.0% [0.0, 0.0] over 800 pairs" in result.output
    assert "transitivity 100.0% [100.0, 100.0]" in result.output and "seed 2" in result.output
    data = json.loads((tmp_path / "blind" / "consistency.json").read_text())
    assert data["symmetry_ci"] == [0.0, 0.0] and data["intervals"]["seed"] == 2


def test_one_cluster_has_no_interval_never_the_point_posing_as_one():
    # scipy's bootstrap refuses one observation ("each sample in `data` must contain two or more
    # observations"); one cluster leaves nothing to resample, so the interval is None
    from spatialprobe.metrics.estimates import with_intervals

    rows = [{"instance_id": str(n), "obj_b": "bus", "gold": "yes", "pred": "yes" if n else "no"} for n in range(4)]
    assert metric_intervals(rows, Resampling(("yes", "no"), ("obj_b",)), 1000, seed=0) == {
        "accuracy": {"": None}, "macro_f1": {"": None}}
    # two clusters, but every row is the same pair: every resample weighs them alike, no interval either
    pair = [dict(r, obj_a="man") for r in rows]
    assert metric_intervals(pair, Resampling(("yes", "no"), ("obj_a", "obj_b")), 1000, seed=0)["accuracy"] == {"": None}
    metrics, _ = with_intervals({"accuracy": Metric(75.0, None, 4)}, [Resampling(("yes", "no"), ("obj_b",))], rows, 0)
    assert metrics["accuracy"].to_dict() == {"mean": 75.0, "std": None, "n": 4, "ci": None}  # null, not absent
    # a spec without rows (nothing answered) gives null intervals too
    metrics, _ = with_intervals({"accuracy": Metric(None, None, 0)}, [Resampling(("yes", "no"))], [], 0)
    assert metrics["accuracy"].to_dict() == {"mean": None, "std": None, "n": 0, "ci": None}


def test_the_bootstrap_statistics_equal_scikit_learn_on_the_data():
    from sklearn.metrics import f1_score, precision_recall_fscore_support

    from spatialprobe.metrics.weighted import STATISTICS

    labels = ("a", "b", "c")
    gold = ["a", "a", "b", "b", "c", "a", "b"]
    pred = ["a", "b", "b", "--", "a", "a", "x"]  # "--", "x": answers outside the labels
    rows = [{"instance_id": str(n), "gold": g, "pred": p} for n, (g, p) in enumerate(zip(gold, pred, strict=True))]
    enc = encode(rows, Resampling(labels, metrics={"f": "macro_f1"}))
    ones = np.ones((1, len(rows)))

    def value(name):
        return float(STATISTICS[name](enc.gold, enc.pred, ones, enc.n_labels)[0])

    assert value("accuracy") == pytest.approx(300 / 7)
    assert value("macro_f1") == pytest.approx(100 * f1_score(gold, pred, labels=list(labels), average="macro",
                                                             zero_division=0))
    # scikit-learn's default label set: every value in gold or predictions, "--" and "x" included
    assert value("macro_f1_seen") == pytest.approx(100 * f1_score(gold, pred, average="macro", zero_division=0))
    p, r, f, _ = precision_recall_fscore_support(gold, pred, labels=["a", "b", "c"], average="macro", zero_division=0)
    assert (value("precision_gold"), value("recall_gold"), value("macro_f1_gold")) == pytest.approx(
        (100 * p, 100 * r, 100 * f))
    assert value("pr_f1_gold") == pytest.approx(200 * p * r / (p + r))


def test_a_subset_is_taken_in_each_resample_and_pooled_groups_are_not_averaged():
    # "only": the recognized rows among all; the clusters are every row's, so an object whose rows
    # are all unrecognized still counts as drawn (and the subset shrinks when it is)
    rows = [{"instance_id": str(n), "obj_b": f"o{n % 4}", "rel": "left" if n < 6 else "right",
             "gold": "y", "pred": "y" if n % 3 else "n", "recognized": n % 4 != 3} for n in range(8)]
    spec = Resampling(("y", "n"), ("obj_b",), only="recognized", metrics={"accuracy": "accuracy"})
    enc = encode(rows, spec)
    assert enc.n_clusters == 4 and enc.mask.tolist() == [1, 1, 1, 0, 1, 1, 1, 0]
    assert grouped(enc, "accuracy", enc.pred, np.ones((1, 8)))[-1, 0] == pytest.approx(100 * 4 / 6)
    # pooled: the overall value is over all rows (6 of 8 "left"), not the mean of the two groups
    pooled = Resampling(("y", "n"), ("obj_b",), group="rel", pooled=True, metrics={"accuracy": "accuracy"})
    values = grouped(encode(rows, pooled), "accuracy", encode(rows, pooled).pred, np.ones((1, 8)))[:, 0]
    assert values.tolist() == pytest.approx([100 * 4 / 6, 100 * 1 / 2, 100 * 5 / 8])
    # shares of a field: the recognized ratio
    ratio = Resampling((), ("obj_b",), pred="recognized", metrics={"ratio": "share"})
    assert grouped(encode(rows, ratio), "share", encode(rows, ratio).pred, np.ones((1, 8)))[-1, 0] == 75.0
    # o3's rows are all unrecognized, the others' all recognized: 75 %; influences sum((y - 3/4) / 8)
    # = 1/16 (o0, o1, o2) and -3/16 (o3); variance (3/256 + 9/256) * 4/3 = 1/16
    assert metric_intervals(rows, ratio, 1000, seed=0)["ratio"][""] == wilson(0.75, 1 / 16, 8, 4)


def test_the_wilson_bounds_and_the_t_quantiles_equal_statsmodels_and_scipy_stats():
    # written out (statsmodels and scipy.stats cost a second of every run to import): equal, term for term
    from scipy import stats
    from statsmodels.stats.proportion import proportion_confint

    from spatialprobe.metrics.robust import Estimate, t_interval, t_test, wilson_bounds

    for count, n, level in [(0, 5, 0.95), (17, 20, 0.95), (3.7, 11.2, 0.9), (250, 500, 0.99), (9, 9, 0.95)]:
        assert wilson_bounds(count / n, n, level) == pytest.approx(
            proportion_confint(count, n, alpha=1 - level, method="wilson"), abs=1e-15)
    est = Estimate(value=4.0, variance=2.25, clusters=7, dof=5.5)
    half = stats.t.ppf(0.975, 5.5) * 1.5
    assert t_interval(est) == pytest.approx((4.0 - half, 4.0 + half), abs=1e-12)
    assert t_test(est) == pytest.approx(2 * stats.t.sf(4.0 / 1.5, 5.5), abs=1e-15)
