"""`spatialprobe report A B`: the paired difference, its interval and permutation p-value."""

import pytest
from scipy import stats
from test_intervals import CANDS, FirstLabel, Oracle
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.errors import UsageError
from spatialprobe.files import read_json, read_jsonl
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.metrics.paired import paired_differences, unpaired_reason
from spatialprobe.probing.run import ProbeSettings, run_probe
from spatialprobe.prompts.templates import resolve
from spatialprobe.reports.tables import p_text
from spatialprobe.tasks import data as task_data

runner = CliRunner()


def run(tmp_path, scorer_class, name, seed=0, task="size"):
    ds = task_data.load(task)
    scorer = scorer_class(ds) if scorer_class else None
    model = scorer_class.name if scorer_class else "dummy"
    cands = CANDS if task == "size" else resolve("manual", task)
    run_probe(ds, cands, ProbeSettings(model=model, seed=seed), tmp_path / name, scorer=scorer)
    return tmp_path / name


def rows_of(path):
    return read_jsonl(path / "predictions.jsonl")


SIZE = Resampling(("larger", "smaller"), ("obj_a", "obj_b"), group="fold")


def test_an_oracle_against_an_order_blind_run_is_a_real_difference(tmp_path):
    oracle, blind = run(tmp_path, Oracle, "oracle"), run(tmp_path, FirstLabel, "blind")
    accuracy, macro_f1 = paired_differences(rows_of(oracle), rows_of(blind), SIZE, 1000, seed=0)
    assert (accuracy.a, accuracy.b, accuracy.difference) == (100.0, 50.0, 50.0)
    assert accuracy.ci == (50.0, 50.0)  # the blind run is 50 % in every resample, the oracle 100 %
    assert accuracy.p < 0.05 and accuracy.significant
    assert macro_f1.difference == pytest.approx(200 / 3) and macro_f1.p < 0.05 and macro_f1.significant
    # the difference is 50 for every draw of objects (no cluster has influence on it): its standard
    # error is 0, so p is the exact sign-flip p over the 25 objects, 2 / 2^25, printed "< 0.001"
    assert accuracy.p == macro_f1.p == 2 / 2 ** 25
    result = runner.invoke(app, ["report", str(oracle), str(blind), "--out", str(tmp_path / "r.md")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "r.md").read_text()
    assert f"## Paired: A = `{oracle}` (oracle), B = `{blind}` (first-label) (same items)" in text
    assert "| accuracy | 100.0 | 50.0 | +50.0 | [50.0, 50.0] | < 0.001 | significant |" in text
    assert "one cluster-robust standard error of A − B over objects" in text


def test_two_runs_of_the_same_model_differ_by_zero_and_are_not_flagged(tmp_path):
    first, second = run(tmp_path, None, "dummy1"), run(tmp_path, None, "dummy2")
    for d in paired_differences(rows_of(first), rows_of(second), SIZE, 1000, seed=0):
        assert d.difference == 0.0 and d.ci == (0.0, 0.0) and d.p == 1.0 and not d.significant
    result = runner.invoke(app, ["report", str(first), str(second)])
    assert result.exit_code == 0, result.output
    assert "| +0.0 | [0.0, 0.0] | 1.000 | n.s. |" in result.output


def test_the_paired_test_is_deterministic_for_a_seed(tmp_path):
    dummy, blind = run(tmp_path, None, "dummy"), run(tmp_path, FirstLabel, "blind")
    first = paired_differences(rows_of(dummy), rows_of(blind), SIZE, 500, seed=4)
    again = paired_differences(rows_of(dummy), rows_of(blind), SIZE, 500, seed=4)
    assert first == again
    # the untrained scorer is near chance like the blind one: no real difference in accuracy
    assert not first[0].significant and first[0].ci[0] < 0 < first[0].ci[1] and first[0].p > 0.05


def test_runs_on_different_items_are_shown_side_by_side_without_a_paired_test(tmp_path):
    seed0, seed1 = run(tmp_path, None, "seed0"), run(tmp_path, None, "seed1", seed=1)
    reason = unpaired_reason(read_json(seed0 / "summary.json"), rows_of(seed0),
                             read_json(seed1 / "summary.json"), rows_of(seed1))
    assert reason is not None and "not for the same items" in reason
    result = runner.invoke(app, ["report", str(seed0), str(seed1)])
    assert result.exit_code == 0, result.output
    assert "No paired test of A = " in result.output and "not for the same items" in result.output
    height = run(tmp_path, None, "height", task="height")
    result = runner.invoke(app, ["report", str(seed0), str(height)])
    assert "they were run on different data (size@" in result.output and "| run | probe size acc" in result.output


def test_with_few_units_the_permutation_test_is_exact():
    # six instances, A right and B wrong on each: of the 2^6 swap patterns only "none" and "all" are
    # as extreme, one on each side: two-sided p = 2 * 1/64
    a = [{"instance_id": str(i), "gold": "y", "pred": "y"} for i in range(6)]
    b = [dict(row, pred="n") for row in a]
    accuracy, _ = paired_differences(a, b, Resampling(("y", "n")), 1000, seed=0)
    assert (accuracy.difference, accuracy.ci, accuracy.p) == (100.0, (100.0, 100.0), 2 / 64)
    assert accuracy.significant
    # with four instances the best p is 2 * 1/16: the interval excludes 0, but that is not enough
    four, _ = paired_differences(a[:4], b[:4], Resampling(("y", "n")), 1000, seed=0)
    assert four.p == 2 / 16 and four.ci == (100.0, 100.0) and not four.significant


def test_two_judge_runs_on_the_same_images_are_paired(tmp_path):
    # posrel judged by the VDG rule and by the release's legacy rule, on the same five images: the rows
    # are paired by (instance_id, image_index) and resampled by the scenes' objects (obj_b)
    from judge_helpers import write_run

    plan = [("above", "above", True), ("below", "below", True), ("inside", "inside", True),
            ("beside", "beside", True), ("above", "below", True)]
    write_run(tmp_path / "images", "posrel", plan)
    for name, rule in (("vdg", "vdg"), ("legacy", "vdg-legacy")):
        result = runner.invoke(app, ["judge", "posrel", str(tmp_path / "images"), "--detector", "colour",
                                     "--rule", rule, "--out", str(tmp_path / name), "--no-gallery"])
        assert result.exit_code == 0, result.output
    summaries = [read_json(tmp_path / name / "summary.json") for name in ("vdg", "legacy")]
    spec = Resampling.described(summaries[0]["intervals"])
    assert spec.clusters == ("obj_b",) and spec.key == ("instance_id", "image_index")
    assert spec.metrics == {"accuracy": "accuracy", "macro_f1": "macro_f1_seen"}
    rows = [rows_of(tmp_path / name) for name in ("vdg", "legacy")]
    assert unpaired_reason(summaries[0], rows[0], summaries[1], rows[1], spec) is None
    accuracy, macro_f1 = paired_differences(rows[0], rows[1], spec, 1000, seed=0)
    # VDG: 4 of 5 right; legacy reads above/below the other way round: 3 of 5 (the drawn-below one right).
    # Objects: motorcycle (2 scenes: one right for each rule), airplane (VDG right), bus (both right).
    # Row differences (points) by object: motorcycle +100, -100; airplane +100; bus 0, 0: A - B = 20.
    # Influences sum((d - 20) / 5): -8, 16, -8; variance (64 + 256 + 64) * 3/2 = 576, SE 24, t_2.
    assert (accuracy.a, accuracy.b, accuracy.difference) == (80.0, 60.0, 20.0)
    t2 = stats.t(2)
    assert accuracy.ci == (pytest.approx(20 - t2.ppf(0.975) * 24, abs=1e-6), 100.0)  # clipped at 100
    assert accuracy.p == pytest.approx(2 * t2.sf(20 / 24)) and not accuracy.significant
    result = runner.invoke(app, ["report", str(tmp_path / "vdg"), str(tmp_path / "legacy")])
    assert result.exit_code == 0, result.output
    assert "## Paired: A = " in result.output and "(same items)" in result.output
    assert f"| accuracy | 80.0 | 60.0 | +20.0 | [-83.3, 100.0] | {accuracy.p:.3f} | n.s. |" in result.output
    assert macro_f1.a == summaries[0]["macro_f1"]["mean"] and macro_f1.b == summaries[1]["macro_f1"]["mean"]


def test_a_probe_and_a_judge_run_are_not_paired_and_the_note_says_why(tmp_path):
    # The README's quick start compares the dummy probe with the judge of the shapes scenes: a probe
    # predicts one row per (instance, fold), a judge one per (instance, image), so no paired test.
    from judge_helpers import write_run

    probe = run(tmp_path, None, "probe", task="posrel")
    write_run(tmp_path / "images", "posrel", [("above", "above", True), ("below", "below", True)])
    judged = runner.invoke(app, ["judge", "posrel", str(tmp_path / "images"), "--detector", "colour",
                                 "--out", str(tmp_path / "judge"), "--no-gallery"])
    assert judged.exit_code == 0, judged.output
    result = runner.invoke(app, ["report", str(probe), str(tmp_path / "judge")])
    assert result.exit_code == 0, result.output
    assert ("A's predictions are one per (instance_id, fold) and B's one per (instance_id, image_index): "
            "runs of different kinds (probe, judge) do not predict the same rows.") in " ".join(result.output.split())


def test_rows_only_b_has_are_refused_not_dropped():
    a = [{"instance_id": str(i), "gold": "y", "pred": "y"} for i in range(6)]
    b = [dict(row, pred="n") for row in a] + [{"instance_id": "extra", "gold": "y", "pred": "n"}]
    with pytest.raises(UsageError, match=r"0 keys .* only in A, 1 only in B"):
        paired_differences(a, b, Resampling(("y", "n")))


def test_a_p_value_is_never_printed_as_zero():
    assert [p_text(p) for p in (0.0, 2 / 2 ** 25, 0.0004, 0.0123, 1.0, float("nan"))] == [
        "< 0.001", "< 0.001", "< 0.001", "0.012", "1.000", "–"]


def test_a_run_of_several_image_conditions_pairs_its_first_conditions_rows():
    from spatialprobe.reports.paired_report import primary_rows

    blind = {"details": {"conditions": ["real", "blank", "none"]}}
    real = [{"instance_id": k, "condition": "real"} for k in "ab"]
    rows_a = real + [{"instance_id": k, "condition": c} for c in ("blank", "none") for k in "ab"]
    plain = [{"instance_id": k} for k in "ab"]  # a kind without conditions (CLIP) saw the real images
    kept, line, reason = primary_rows([blind, {"details": {}}], [rows_a, plain])
    assert kept == [real, plain] and reason is None
    assert line == "\nPaired on the `real` condition's rows (A also asked blank, none: not paired).\n"
    _, _, reason = primary_rows([blind, {"details": {"conditions": ["blank"]}}], [rows_a, plain])
    assert reason == "their primary image conditions differ (real vs blank)"


def test_runs_that_report_different_statistics_pair_on_those_both_report(tmp_path):
    """A run written when its benchmark reported one statistic fewer (an older toolkit) still pairs
    with a newer run of the same items: on the statistics both report, the other one left out."""
    import json

    oracle, blind = run(tmp_path, Oracle, "oracle"), run(tmp_path, FirstLabel, "blind")
    summary = read_json(blind / "summary.json")
    assert set(summary["intervals"]["statistics"]) == {"accuracy", "macro_f1"}
    summary["intervals"]["statistics"].pop("macro_f1")
    summary["metrics"].pop("macro_f1")
    (blind / "summary.json").write_text(json.dumps(summary))
    result = runner.invoke(app, ["report", str(oracle), str(blind), "--out", str(tmp_path / "r.md")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "r.md").read_text()
    assert "| accuracy | 100.0 | 50.0 | +50.0 | [50.0, 50.0] | < 0.001 | significant |" in text
    assert "macro-F1 |" not in text.split("## Paired")[1] and "resample different clusters" not in text
