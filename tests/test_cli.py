import json

import pytest
from mlm_helpers import set_output_bias, tiny_wordpiece_bert
from typer.testing import CliRunner

from spatialprobe.cli import app

runner = CliRunner()


def invoke(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result


@pytest.fixture(scope="module")
def always_larger(tmp_path_factory):
    """A tiny BERT that always prefers 'larger' over 'smaller'."""
    path = tiny_wordpiece_bert(tmp_path_factory.mktemp("bert"))
    set_output_bias(path, {"larger": 3.0, "smaller": 1.0, "bigger": 2.0})
    return path


def test_probe_size_end_to_end_with_a_local_model(always_larger, tmp_path):
    out = tmp_path / "run"
    result = invoke("probe", "size", "--model", always_larger, "--out", out, "--candidates", "manual",
                    "--device", "cpu", "--batch-size", "128")
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["task"] == "size" and summary["model"] == str(always_larger)
    assert len(summary["details"]["folds"]) == 5
    for fold in summary["details"]["folds"]:  # always "larger": half of every fold's test pairs are right
        assert fold["accuracy"] == 50.0 and fold["size"] == 320
        assert fold["answers"] == {"larger": "larger", "smaller": "smaller"}
        assert fold["macro_f1"] == pytest.approx(100 * (2 / 3) / 2)
    assert {k: summary["accuracy"][k] for k in ("mean", "std")} == {"mean": 50.0, "std": 0.0}
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 1600 and {r["pred"] for r in rows} == {"larger"}
    # order-blind: exactly 50 % in every resample of objects (both orders of a pair weigh the same)
    assert summary["accuracy"]["ci"] == [50.0, 50.0]
    assert "| mean ± σ |  | 50.0 ± 0.0 [50.0, 50.0] |" in (out / "table.md").read_text()
    assert "50.0" in result.output and "fold" in result.output


def test_release_file_and_pairs_file_run_through_the_same_probe(tmp_path):
    data = tmp_path / "posrel.jsonl"
    invoke("datasets", "export", "posrel", "--out", data)
    result = invoke("probe", "posrel", "--model", "dummy", "--data", data, "--out", tmp_path / "p",
                    "--candidates", "manual")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "p" / "summary.json").read_text())["dataset"].startswith("posrel.jsonl@")
    pairs = tmp_path / "rs.tsv"
    objects = ["ant", "cup", "dog", "bus", "house", "plane", "coin", "shoe", "tiger", "truck"]
    lines = ["x\ty\tbigger"] + [f"{a}\t{b}\t{a if i > j else b}" for i, a in enumerate(objects)
                                for j, b in enumerate(objects) if a != b]
    pairs.write_text("\n".join(lines) + "\n")
    result = invoke("probe", "size", "--model", "dummy", "--pairs", pairs, "--first", "x", "--second", "y",
                    "--answer", "bigger", "--out", tmp_path / "rs")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "rs" / "summary.json").read_text())
    assert summary["metrics"]["whole_set_accuracy"]["n"] == 90 and len(summary["details"]["folds"]) == 5


def test_malformed_input_is_one_clear_error(tmp_path):
    bad = tmp_path / "size.jsonl"
    bad.write_text('{"text": "x", "obj_a": "ant", "obj_b": "cup", "label": 1}\n{"text": "x", "obj_a": "ant"}\n')
    result = invoke("probe", "size", "--model", "dummy", "--data", bad, "--out", tmp_path / "r")
    assert result.exit_code == 2
    assert f"{bad}, line 2, field 'obj_b': missing" in result.output
    assert not (tmp_path / "r").exists()


def test_unknown_task_and_unloadable_model(tmp_path):
    assert "unknown task 'width'" in invoke("probe", "width", "--model", "dummy").output
    result = invoke("probe", "size", "--model", tmp_path / "missing", "--out", tmp_path / "r", "--device", "cpu")
    assert result.exit_code == 2 and "Could not load" in result.output and "Traceback" not in result.output


def test_runs_and_report_put_runs_side_by_side(tmp_path):
    for task in ("size", "posrel"):
        assert invoke("probe", task, "--model", "dummy", "--out", tmp_path / task,
                      "--candidates", "manual").exit_code == 0
    listed = invoke("runs")
    assert listed.exit_code == 0 and "dummy" in listed.output and "posrel" in listed.output
    table = tmp_path / "table.md"
    result = invoke("report", tmp_path / "size", tmp_path / "posrel", "--out", table)
    assert result.exit_code == 0, result.output
    headers = [line for line in table.read_text().splitlines() if line.startswith("| run ")]
    assert headers == ["| run | probe size acc | probe size macro-F1 |",
                       "| run | probe posrel acc | probe posrel macro-F1 |"]
    assert table.read_text().splitlines()[2].startswith("| A: dummy [untrained] | ")
    assert "No paired test of A = " in table.read_text() and "different data" in table.read_text()
    assert f"`{tmp_path / 'size'}`: model `dummy` · dataset `size@size-" in table.read_text()
    assert invoke("report").exit_code == 0  # every indexed run
    assert invoke("report", tmp_path / "nothing").exit_code == 2


def test_listing_commands():
    assert "hf-mlm" in invoke("ls").output
    assert "posrel" in invoke("datasets", "list").output
    shown = json.loads(invoke("prompts", "show", "size", "--candidates", "manual").output)
    assert shown["templates"] == ["[A] is [MASK] than [B]."]


def test_datasets_validate(tmp_path, shared_dir):
    good = invoke("datasets", "validate", shared_dir / "data" / "spatial-commonsense" / "posrel.jsonl")
    assert good.exit_code == 0, good.output
    assert "224 posrel instances" in good.output and "inside 16, beside 112" in good.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "A man drives the car.", "label": 9, "obj_a": "man", "obj_b": "car"}\n')
    result = invoke("datasets", "validate", bad, "--task", "posrel")
    assert result.exit_code == 2 and "line 1, field 'label'" in result.output
