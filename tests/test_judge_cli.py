import json
import random

import pytest
from judge_helpers import write_run
from typer.testing import CliRunner

from spatialprobe import store
from spatialprobe.cli import app
from spatialprobe.synthesis import load_prompts

runner = CliRunner()
COLOUR = ["--detector", "colour", "--depth", "colour"]


def invoke(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def expected_whole(rows_golds_preds, labels, seed=0):
    """Accuracy with unrecognized items guessed by random.Random(seed) in order (documented)."""
    rng = random.Random(seed)
    hits = 0
    for gold, pred in rows_golds_preds:
        hits += gold == (pred if pred is not None else rng.choice(labels))
    return 100 * hits / len(rows_golds_preds)


@pytest.mark.parametrize("task,labels", [("size", ["larger", "smaller"]),
                                         ("height", ["taller", "shorter"])])
def test_judge_comparison_end_to_end(tmp_path, task, labels):
    big, small = labels
    # (gold, answer drawn, recognized): 6 recognized of which 4 right; 2 unrecognized.
    plan = [(big, big, True), (big, big, True), (big, small, True),
            (small, small, True), (small, small, True), (small, big, True),
            (big, big, False), (small, small, False)]
    write_run(tmp_path / "images", task, plan)
    out = tmp_path / "judged"
    invoke("judge", task, tmp_path / "images", *COLOUR, "--out", out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "judge" and summary["task"] == task
    assert summary["dataset"] == load_prompts(task).source  # name@version, as synthesize records it
    assert summary["model"] == "test:drawn-shapes"
    assert summary["recognized_ratio"] == pytest.approx(75.0)
    rec = summary["recognized_subset"]
    assert rec["n"] == 6 and rec["accuracy"] == pytest.approx(400 / 6)
    assert rec["macro_f1"] == pytest.approx(200 / 3)  # each class: precision = recall = 2/3
    whole = expected_whole([(g, a if r else None) for g, a, r in plan], labels)
    assert summary["accuracy"] == {"mean": pytest.approx(whole), "std": None}
    assert summary["whole_set"]["n"] == 8
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [p["recognized"] for p in preds] == [r for _, _, r in plan]
    assert [p["pred"] for p in preds[:6]] == [a for _, a, _ in plan[:6]]
    assert all(p["pred"] in labels for p in preds)
    assert preds[0]["depth_a"] == pytest.approx(255 / 64)  # drawn far: disparity 64/255
    assert "depth" in preds[0]["explanation"]
    obj = preds[0]["obj_a"]
    assert summary["per_object"][obj]["n"] >= 1
    assert (out / "table.md").read_text().count("|") > 10
    assert (out / "gallery.html").exists()
    indexed = [r for r in store.list_runs() if r["path"] == str(out.resolve())]
    assert indexed and indexed[0]["accuracy"] == pytest.approx(whole)


def test_judge_posrel_rules_and_legacy(tmp_path):
    plan = [("above", "above", True), ("below", "below", True), ("inside", "inside", True),
            ("beside", "beside", True), ("above", "below", True)]
    write_run(tmp_path / "images", "posrel", plan)
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--out", tmp_path / "vdg")
    summary = json.loads((tmp_path / "vdg" / "summary.json").read_text())
    assert summary["accuracy"]["mean"] == pytest.approx(80.0)
    assert summary["recognized_ratio"] == 100.0
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--rule", "vdg-legacy",
           "--out", tmp_path / "legacy")
    preds = [json.loads(line) for line in (tmp_path / "legacy" / "predictions.jsonl").read_text().splitlines()]
    assert [p["pred"] for p in preds] == ["below", "above", "inside", "beside", "above"]
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--rule-arg",
           'above=[80, 100]', "--out", tmp_path / "narrow")
    config = json.loads((tmp_path / "narrow" / "config.json").read_text())
    assert config["rule_args"] == {"above": [80, 100]}
    assert config["provenance"]["toolkit"] == "spatialprobe"


def test_rule_without_an_answer_counts_as_not_recognized(tmp_path):
    # Drawn "inside" shares B's centre: GenEval finds no relation there. That image must get the
    # seeded guess (not a "none" class of its own in accuracy and macro-F1).
    write_run(tmp_path / "images", "posrel", [("inside", "inside", True), ("above", "above", True)])
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--rule", "geneval",
           "--out", tmp_path / "g", "--no-gallery")
    summary = json.loads((tmp_path / "g" / "summary.json").read_text())
    preds = [json.loads(line) for line in (tmp_path / "g" / "predictions.jsonl").read_text().splitlines()]
    assert [p["recognized"] for p in preds] == [False, True]
    assert preds[0]["found_a"] and preds[0]["found_b"] and "no relation" in preds[0]["explanation"]
    assert preds[0]["pred"] == random.Random(0).choice(["above", "below", "inside", "beside"])
    assert summary["recognized_ratio"] == 50.0
    assert summary["recognized_subset"] == {"accuracy": 100.0, "macro_f1": 100.0, "n": 1}


def test_judge_resumes_and_refuses_other_settings(tmp_path):
    write_run(tmp_path / "images", "size", [("larger", "larger", True), ("smaller", "larger", True)])
    out = tmp_path / "judged"
    invoke("judge", "size", tmp_path / "images", *COLOUR, "--out", out, "--no-gallery")
    first = (out / "predictions.jsonl").read_text()
    invoke("judge", "size", tmp_path / "images", *COLOUR, "--out", out, "--no-gallery")
    assert (out / "predictions.jsonl").read_text() == first
    result = runner.invoke(app, ["judge", "size", str(tmp_path / "images"), "--detector", "colour",
                                 "--depth", "colour", "--depth-arg", "shift=0.1", "--out", str(out)])
    assert result.exit_code == 2 and "already holds a run" in result.output
    assert "Traceback" not in result.output and result.output.strip().startswith("Error: ")


def test_judge_errors_are_clear(tmp_path):
    write_run(tmp_path / "images", "size", [("larger", "larger", True)])
    # Expected failures end with one "Error: ..." sentence and exit code 2, never a traceback.
    result = runner.invoke(app, ["judge", "height", str(tmp_path / "images"), *COLOUR])
    assert result.exit_code == 2 and "Error: " in result.output
    assert "no finished images of height" in result.output
    result = runner.invoke(app, ["judge", "size", str(tmp_path / "images"), "--detector", "owlvitt"])
    assert result.exit_code == 2 and "Did you mean 'owlvit'" in result.output
    result = runner.invoke(app, ["judge", "size", str(tmp_path / "images"), "--detector-model",
                                 str(tmp_path / "missing"), "--depth", "colour"])
    assert result.exit_code == 2 and "local directory" in result.output
    result = runner.invoke(app, ["judge", "gallery", str(tmp_path / "images")])
    assert result.exit_code == 2 and "is not a judge run" in result.output
    assert isinstance(result.exception, SystemExit)  # a clean exit, not an escaped exception


def test_gallery_command(tmp_path):
    write_run(tmp_path / "images", "posrel", [("above", "above", True), ("below", "beside", False)])
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--out", tmp_path / "j",
           "--no-gallery")
    invoke("judge", "gallery", tmp_path / "j", "--out", tmp_path / "g.html")
    page = (tmp_path / "g.html").read_text()
    assert page.count("<figure") == 2 and "data:image/jpeg;base64," in page
    assert "centre angle 90.0 deg" in page and "not recognized" in page


def test_missing_run_is_refused_without_creating_it(tmp_path):
    missing = tmp_path / "nope"
    result = runner.invoke(app, ["judge", "size", str(missing), *COLOUR])
    flat = " ".join(result.output.replace("│", " ").split())  # rich wraps the message in a box
    assert result.exit_code != 0 and "is not an image run" in flat
    assert not missing.exists()


def test_local_model_directories_are_recorded_absolute(tmp_path, monkeypatch):
    from spatialprobe.commands.judge import _spec

    (tmp_path / "owl").mkdir()
    monkeypatch.chdir(tmp_path)
    assert _spec("owlvit", "owl", []).args["model"] == str(tmp_path / "owl")
    assert _spec("owlvit", "google/owlvit-base-patch32", []).args["model"] == "google/owlvit-base-patch32"


def test_a_detector_that_returns_too_few_results_is_an_error_not_a_shorter_run(tmp_path, monkeypatch):
    from spatialprobe.detectors.colour import ColourDetector
    from spatialprobe.detectors.judge import JudgeConfig, judge_run
    from spatialprobe.registry import Spec

    write_run(tmp_path / "images", "posrel", [("above", "above", True)] * 3)
    detect = ColourDetector.detect
    monkeypatch.setattr(ColourDetector, "detect", lambda self, images, queries: detect(self, images, queries)[:-1])
    cfg = JudgeConfig(task="posrel", detector=Spec("colour"), batch_size=3)
    with pytest.raises(ValueError, match="zip\\(\\) argument 2 is shorter than argument 1"):
        judge_run(str(tmp_path / "images"), str(tmp_path / "judged"), cfg)
