"""A macro-F1 of rows all right (or all wrong) gets a Wilson boundary interval, not [100, 100]."""

from interval_helpers import plain_wilson

from spatialprobe.metrics.intervals import Resampling, metric_intervals


def rows(right: bool, yes: int = 15, no: int = 5) -> list[dict]:
    golds = ["y"] * yes + ["n"] * no
    return [{"instance_id": str(i), "gold": g, "pred": g if right else ("n" if g == "y" else "y")}
            for i, g in enumerate(golds)]


SPEC = Resampling(("y", "n"), metrics={"accuracy": "accuracy", "macro_f1": "macro_f1"})


def test_all_right_macro_f1_is_wilson_at_labels_times_the_rarest_labels_rows():
    found = metric_intervals(rows(True), SPEC)
    # 20 independent rows (no design effect, no t shrink): accuracy counts 20, macro-F1 2 labels x
    # 5 rows of the rarer
    assert found["accuracy"][""] == plain_wilson(20, 20)
    assert found["macro_f1"][""] == plain_wilson(10, 10)
    assert found["macro_f1"][""][0] < found["accuracy"][""][0] < 100.0


def test_all_wrong_macro_f1_is_wilson_of_none_right_and_balanced_labels_match_accuracy():
    assert metric_intervals(rows(False), SPEC)["macro_f1"][""] == plain_wilson(0, 10)
    balanced = metric_intervals(rows(True, 10, 10), SPEC)
    assert balanced["macro_f1"][""] == balanced["accuracy"][""] == plain_wilson(20, 20)
