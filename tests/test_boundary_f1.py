"""A macro-F1 of rows all right (or all wrong) gets a Wilson boundary interval, not [100, 100] (issue 29)."""

from interval_helpers import wilson

from spatialprobe.metrics.intervals import Resampling, metric_intervals


def rows(right: bool, yes: int = 15, no: int = 5) -> list[dict]:
    golds = ["y"] * yes + ["n"] * no
    return [{"instance_id": str(i), "gold": g, "pred": g if right else ("n" if g == "y" else "y")}
            for i, g in enumerate(golds)]


SPEC = Resampling(("y", "n"), metrics={"accuracy": "accuracy", "macro_f1": "macro_f1"})


def test_all_right_macro_f1_is_wilson_at_labels_times_the_rarest_labels_rows():
    found = metric_intervals(rows(True), SPEC)
    # 20 independent rows (19 df): accuracy counts 20, macro-F1 2 labels x 5 rows of the rarer
    assert found["accuracy"][""] == wilson(1.0, 0.0, 20, 20)
    assert found["macro_f1"][""] == wilson(1.0, 0.0, 10, 20)
    assert found["macro_f1"][""][0] < found["accuracy"][""][0] < 100.0


def test_all_wrong_macro_f1_is_wilson_of_none_right_and_balanced_labels_match_accuracy():
    assert metric_intervals(rows(False), SPEC)["macro_f1"][""] == wilson(0.0, 0.0, 10, 20)
    balanced = metric_intervals(rows(True, 10, 10), SPEC)
    assert balanced["macro_f1"][""] == balanced["accuracy"][""] == wilson(1.0, 0.0, 20, 20)
