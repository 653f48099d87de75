"""Metrics of a question-answering run, on rows whose answers are known."""

from __future__ import annotations

from spatialprobe.engine.metrics import asked_metrics
from spatialprobe.metrics.intervals import Resampling

LABELS = ("yes", "no")
SPEC = Resampling(LABELS, ("image",), key=("instance_id", "condition"), pooled=True, unit="images")


def _rows(condition, likelihood, generate):
    gold = ["yes", "no"] * 6
    return [{"instance_id": f"q{n}", "image": f"im{n // 2}", "condition": condition, "gold": g,
             "pred_likelihood": lk, "pred_generate": gen}
            for n, (g, lk, gen) in enumerate(zip(gold, likelihood, generate, strict=True))]


def test_a_seeing_model_scores_100_real_50_blind_with_both_protocols_and_the_prior():
    gold = ["yes", "no"] * 6
    rows = _rows("real", gold, [*gold[:10], None, None]) + _rows("none", ["yes"] * 12, ["yes"] * 12)
    spec = Resampling(LABELS, ("image",), key=("instance_id",), pooled=True, unit="images")
    metrics, details = asked_metrics(rows, LABELS, ("likelihood", "generate"), ("real", "none"), spec,
                                     prior_labels=["no", "no", "yes"])
    assert metrics["accuracy"].mean == 100.0 and metrics["macro_f1"].mean == 100.0
    assert metrics["accuracy_likelihood"].mean == 100.0
    assert round(metrics["accuracy_generate"].mean, 4) == round(100 * 10 / 12, 4)
    assert round(metrics["parse_failure_rate"].mean, 4) == round(100 * 2 / 12, 4)
    assert metrics["vision_gain_none"].mean == 50.0 and metrics["vision_gain_none"].ci == (50.0, 50.0)
    assert details["vision_gain"]["none"]["significant"]
    assert metrics["answer_prior"].mean == 50.0 and details["answer_prior"]["label"] == "no"
    assert round(details["protocol_comparison"]["agreement"], 4) == round(100 * 10 / 12, 4)


def test_a_blind_model_gains_exactly_0_and_folds_give_mean_and_sigma():
    answers = ["yes", "yes", "no", "yes"] * 3
    rows = []
    for fold in (0, 1):
        for condition in ("real", "blank"):
            rows += [{**r, "fold": fold} for r in _rows(condition, answers, answers)]
    spec = Resampling(LABELS, ("image",), group="fold", part="fold {}", key=("instance_id", "fold"))
    metrics, _ = asked_metrics(rows, LABELS, ("likelihood",), ("real", "blank"), spec,
                               prior_labels={0: ["yes"], 1: ["no", "no"]}, folds=True)
    assert metrics["vision_gain_blank"].mean == 0.0 and metrics["vision_gain_blank"].ci == (0.0, 0.0)
    assert metrics["accuracy"].mean == 25.0 and metrics["accuracy"].std == 0.0
    assert set(metrics["accuracy"].breakdown) == {"fold 0", "fold 1"}
    assert metrics["answer_prior"].mean == 50.0  # both folds' majorities are right on half the rows
    assert "accuracy_likelihood" not in metrics and "parse_failure_rate" not in metrics
