"""Tasks as data: the weight task works end to end from its task file alone, and a task file is
checked when it is read."""

import json

import pytest
from typer.testing import CliRunner

from spatialprobe import tasks
from spatialprobe.cli import app
from spatialprobe.prompts.templates import builtin, fill
from spatialprobe.tasks import _from_json
from spatialprobe.tasks import data as task_data


class WeightOracle:
    """Knows which object is heavier: the gold label's answer words score 0, the others -5."""

    name = "oracle"

    def __init__(self, dataset, candidates):
        self.gold = {}
        for inst in dataset.instances:
            for template in candidates.templates:
                self.gold[fill(template, inst)] = set(candidates.answers[inst.label])

    def describe(self):
        return {"scorer": "oracle", "model": "oracle", "weights_sha256": "0"}

    def score(self, requests, progress=None):
        return [tuple(0.0 if w in self.gold[(r.prefix, r.suffix)] else -5.0 for w in r.options)
                for r in requests]


def test_weight_built_in_set_follows_its_levels():
    data = task_data.load("weight")
    levels = {obj: n for n, level in enumerate(tasks.get("weight").levels) for obj in level}
    assert len(data) == 500 and data.labels == ("heavier", "lighter")
    for inst in data.instances:
        assert inst.label == ("heavier" if levels[inst.obj_a] > levels[inst.obj_b] else "lighter")


def test_weight_probe_with_a_model_that_knows_the_facts_scores_100(tmp_path):
    from spatialprobe.probing.run import ProbeSettings, run_probe

    data = task_data.load("weight")
    candidates = builtin("weight")
    summary = run_probe(data, candidates, ProbeSettings(model="oracle"), tmp_path / "run",
                        scorer=WeightOracle(data, candidates))
    assert summary["task"] == "weight"
    assert {k: summary["accuracy"][k] for k in ("mean", "std")} == {"mean": 100.0, "std": 0.0}
    assert summary["metrics"]["whole_set_accuracy"]["mean"] == 100.0


def test_weight_release_file_round_trips_through_export_and_probe(tmp_path):
    runner = CliRunner()
    out = tmp_path / "weight.jsonl"
    assert runner.invoke(app, ["datasets", "export", "weight", "--out", str(out)]).exit_code == 0
    first = json.loads(out.read_text().splitlines()[0])
    assert first["question"] == "Is an ant heavier than a bird?" and first["label"] == 0
    loaded = task_data.load_release(out)  # the task is told by the question word
    assert loaded.task == "weight" and [i.label for i in loaded.instances] == [
        i.label for i in task_data.load("weight").instances]
    result = runner.invoke(app, ["probe", "weight", "--model", "dummy", "--data", str(out),
                                 "--candidates", "manual", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["task"] == "weight"


def test_a_task_file_is_checked_when_read():
    good = json.loads((tasks.resources.files("spatialprobe.tasks") / "size.json").read_text())
    with pytest.raises(ValueError, match="unknown task field"):
        _from_json({**good, "colour": "red"}, "tasks/size.json")
    with pytest.raises(ValueError, match="named after its task"):
        _from_json(good, "tasks/other.json")
    with pytest.raises(ValueError, match="two labels and a question_word"):
        _from_json({**good, "labels": ["larger"]}, "tasks/size.json")


def test_unknown_task_suggests_the_close_one():
    result = CliRunner().invoke(app, ["probe", "wieght", "--model", "dummy"])
    assert result.exit_code == 2 and "weight" in result.output
