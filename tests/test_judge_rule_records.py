"""Judge rules are records: every registered rule keeps the record's contract, and a rule with its
own benchmark score, registered at test time from one file (``tests/toy_rule.py``), runs through
``spatialprobe judge``, ``judge compare``, ``spatialprobe ls`` and replay like a built-in rule."""

from __future__ import annotations

import inspect
import json
import pickle

import pytest
from judge_helpers import write_run
from typer.testing import CliRunner

from spatialprobe import registry, tasks
from spatialprobe.cli import app
from spatialprobe.judging.rulebook.lookup import JUDGE_KINDS, default_rule, judged_tasks, rule_named
from spatialprobe.judging.rulebook.record import JudgeRule
from spatialprobe.metrics import statistics

runner = CliRunner()
RULES = [(kind, name) for kind in JUDGE_KINDS for name in registry.names(kind)]


@pytest.mark.parametrize("kind,name", RULES, ids=[f"{k}:{n}" for k, n in RULES])
def test_every_registered_rule_is_a_complete_record(kind, name):
    rule = registry.lookup(kind, name)
    assert isinstance(rule, JudgeRule) and rule.name == name
    assert pickle.loads(pickle.dumps(rule)).name == name  # a run on Ray ships its rule to the workers
    assert rule.tasks and all(tasks.get(task).judge_rule for task in rule.tasks)
    assert set(rule.default_for) <= set(rule.tasks)
    assert set(rule.defaults()) == set(rule.thresholds), "every threshold has the geometry's default"
    modes = [rule.corrected] + ([rule.reference] if rule.reference is not None else [])
    for mode in modes:
        assert callable(mode.geometry) and callable(mode.boxes)
    if rule.reference is not None and not rule.same_in_modes:
        assert rule.reference.follows, "a reference mode names the code it follows"
    if rule.score is not None:
        assert rule.score.how in ("share", "mean") and statistics.get(rule.score.how).name == rule.score.how
        assert all(0 <= cut <= 1 for cut in rule.score.cuts.values())
        assert "{n}" in rule.score.words
        params = inspect.signature(rule.score.of_row).parameters if rule.score.of_row else {}
        assert rule.score.of_row is None or len(params) == 3


def test_every_judged_task_has_one_default_rule_that_judges_it():
    for task in judged_tasks():
        rule = rule_named(default_rule(task))
        assert task in rule.tasks
    assert default_rule("posrel") == "vdg" and default_rule("posrel3d") == "t2i-compbench-3d"
    assert default_rule("size") == "area*depth^2"


def invoke(*args, code=0):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output + repr(result.exception)
    return result


@pytest.fixture
def toy(monkeypatch):
    """``toy-edges`` registered as a position judge for this test only (one registry line)."""
    import toy_rule

    monkeypatch.setitem(registry._REGISTRY["position-judge"], "toy-edges",
                        ("toy_rule:TOY_EDGES", "toy: edges of the boxes, with its own toy_score"))
    return toy_rule.TOY_EDGES


PLAN = [("above", "above", True), ("below", "below", True), ("beside", "beside", True),
        ("inside", "inside", True), ("above", "below", True), ("below", "below", False)]
"""(gold, drawn, B drawn): the toy finds above, below and beside; in the inside scene it finds no
relation (not recognized); the fifth image is drawn wrong and the last has no B (not recognized)."""


def judged(tmp_path, name, *options):
    out = tmp_path / name
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--rule", "toy-edges", *options,
           "--out", out, "--no-gallery")
    summary = json.loads((out / "summary.json").read_text())
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    return out, summary, rows


def test_a_toy_rule_with_its_own_score_runs_through_the_judge_command(tmp_path, toy):
    write_run(tmp_path / "images", "posrel", PLAN)
    out, summary, rows = judged(tmp_path, "toy")
    assert [r["pred"] if r["recognized"] else None for r in rows] == ["above", "below", "beside", None,
                                                                      "below", None]
    assert [r["recognized"] for r in rows] == [True, True, True, False, True, False]
    assert summary["metrics"]["recognized_accuracy"]["mean"] == pytest.approx(75.0)  # 3 of 4 recognized
    # its own score: both boxes above the 0.5 cut and the gold relation found, over all 6 images
    assert [r["toy_correct"] for r in rows] == [True, True, True, False, False, False]
    assert summary["metrics"]["toy_score"]["mean"] == pytest.approx(50.0)
    assert summary["metrics"]["toy_score"]["n"] == 6
    assert summary["details"]["benchmark_args"] == {"gap": 0.0, "min_confidence": 0.5}
    table = (out / "table.md").read_text()
    assert "Rule: toy-edges, mode corrected. On posrel it can answer above, below, beside; never inside" in table
    assert "**Headline (the rule's own score)**: Toy edge score (correct images of 6): 50.0%" in table
    settings = json.loads((out / "config.json").read_text())["settings"]
    assert (settings["rule"], settings["mode"], settings["rule_args"]) == ("toy-edges", "corrected", {})

    # the cut reaches the score only; a threshold reaches the geometry and the score
    _, cut, cut_rows = judged(tmp_path, "cut", "--rule-arg", "min_confidence=1.0")
    assert cut["metrics"]["toy_score"]["mean"] == 0.0
    assert [r["pred"] for r in cut_rows] == [r["pred"] for r in rows]
    _, gap, _ = judged(tmp_path, "gap", "--rule-arg", "gap=1000")  # nothing is that far apart
    assert gap["metrics"]["recognized_ratio"]["mean"] == 0.0 and gap["metrics"]["toy_score"]["mean"] == 0.0

    # its reference mode swaps above and below
    _, ref, ref_rows = judged(tmp_path, "ref", "--mode", "reference")
    assert [r["pred"] if r["recognized"] else None for r in ref_rows] == ["below", "above", "beside", None,
                                                                          "above", None]
    assert ref["details"]["mode"] == "reference"
    assert ref["metrics"]["toy_score"]["mean"] == pytest.approx(50.0)  # the score is the benchmark's, not the mode's

    # replayed from its config.json with the same identity
    replay = invoke("run", out / "config.json")
    assert f"confirmed: identity {summary['identity'][:12]}" in replay.output


@pytest.mark.parametrize("options,message", [
    (["--rule-arg", "margin=0.1"], "--rule-arg margin does not apply to --rule toy-edges: its arguments are "
                                   "gap, min_confidence."),
    (["--rule-arg", "min_confidence=2"], "--rule-arg min_confidence must be a number in [0, 1], not 2."),
    (["--mode", "reference", "--rule-arg", "confidence_threshold=0.5"],
     "--rule-arg confidence_threshold applies to --rule geneval only (the cut of its benchmark score)."),
])
def test_the_toy_rule_refuses_what_does_not_apply(tmp_path, toy, options, message):
    write_run(tmp_path / "images", "posrel", PLAN[:1])
    result = invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--rule", "toy-edges",
                    *options, "--out", tmp_path / "j", code=2)
    assert result.stderr == f"Error: {message}\n" and not (tmp_path / "j").exists()


def test_the_toy_rule_is_refused_for_a_task_it_does_not_judge(tmp_path, toy):
    write_run(tmp_path / "images", "posrel", PLAN[:1])  # the rule is refused before any image is read
    result = invoke("judge", "posrel2d", tmp_path / "images", "--detector", "colour", "--rule", "toy-edges",
                    "--out", tmp_path / "j", code=2)
    assert result.stderr == "Error: --rule toy-edges judges the 2-D relations of judge posrel, not posrel2d.\n"
    unknown = invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--rule", "toy-edge",
                     "--out", tmp_path / "j", code=2)
    assert "Unknown judge rule 'toy-edge'. Did you mean 'toy-edges'?" in unknown.stderr


def test_ls_and_judge_compare_read_the_toy_record(tmp_path, toy):
    listing = invoke("ls").output
    assert "toy-edges" in listing and "toy_score" in listing
    write_run(tmp_path / "images", "posrel", PLAN)
    judged(tmp_path, "toy")
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--out", tmp_path / "vdg",
           "--no-gallery")
    invoke("judge", "compare", tmp_path / "toy", tmp_path / "vdg", "--out", tmp_path / "cmp")
    table = (tmp_path / "cmp" / "table.md").read_text()
    assert "; toy-edges's own score toy_score 50.0% of 6 images)" in table
    runs = json.loads((tmp_path / "cmp" / "compare.json").read_text())["runs"]
    assert runs[0]["rule_score"] == {"rule": "toy-edges", "metric": "toy_score", "mean": 50.0, "n": 6,
                                     "digits": 1, "unit": "%"}
    assert "rule_score" not in runs[1]  # VDG has no score of its own
