"""The small things a newcomer trips over, each through the CLI: the dummy's seed, ``hf:NAME`` offline
at once, ``--items`` with ``--limit``, no image files for ``--image-condition none``, ``--out``
optional for every run command, POSQA's which-one prior by option position, rounded summary lines."""

import json
import random
import re
import socket

import pytest
from typer.testing import CliRunner

from spatialprobe.cli import app


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def rows(run):
    return [json.loads(x) for x in (run / "predictions.jsonl").read_text().splitlines()]


def test_the_dummy_takes_its_seed_records_it_and_a_replay_gives_the_same(tmp_path):
    base = ("probe", "size", "--model", "dummy", "--candidates", "manual")
    assert invoke(*base, "--out", tmp_path / "s0").exit_code == 0
    assert invoke(*base, "--scorer-arg", "seed=1", "--out", tmp_path / "s1").exit_code == 0
    config = json.loads((tmp_path / "s1" / "config.json").read_text())
    assert config["settings"]["scorer"]["args"] == {"seed": 1}
    assert [r["pred"] for r in rows(tmp_path / "s1")] != [r["pred"] for r in rows(tmp_path / "s0")]
    # the scorer's seed defaults to the run's --seed, as before
    assert invoke(*base, "--seed", "1", "--out", tmp_path / "fold1").exit_code == 0
    assert json.loads((tmp_path / "fold1" / "config.json").read_text())["settings"]["scorer"]["args"] == {"seed": 1}
    replay = invoke("run", tmp_path / "s1", "--out", tmp_path / "again")
    assert replay.exit_code == 0, replay.output
    assert rows(tmp_path / "again") == rows(tmp_path / "s1")
    bad = invoke(*base, "--scorer-arg", "seed=x", "--out", tmp_path / "bad")
    assert bad.exit_code == 2 and "seed" in bad.output


def test_a_hub_name_not_in_the_cache_is_refused_without_contacting_the_network(tmp_path, monkeypatch):
    pytest.importorskip("datasets")
    reached = []

    def nowhere(*args, **kwargs):
        reached.append(args)
        raise OSError("the test machine has no network")

    monkeypatch.setattr(socket, "getaddrinfo", nowhere)
    monkeypatch.setattr(socket, "create_connection", nowhere)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    said = invoke("bench", "posqa", "--data", "hf:nobody/absent-benchmark", "--model", "dummy", "--out", tmp_path / "r")
    assert said.exit_code == 2 and "hf:nobody/absent-benchmark: not in the local Hugging Face cache" in said.output
    assert reached == [] and "Retry" not in said.output


def posqa_demo(tmp_path, *more):
    said = invoke("bench", "posqa", "--demo", "--data", tmp_path / "posqa", "--model", "dummy", *more)
    assert said.exit_code == 0, said.output
    return said


def test_items_with_limit_asks_the_first_n_of_the_subset_and_replays(tmp_path):
    from spatialprobe.engine.subset import write_subset

    posqa_demo(tmp_path, "--out", tmp_path / "whole")
    order = [r["instance_id"] for r in rows(tmp_path / "whole")]
    dataset = json.loads((tmp_path / "whole" / "summary.json").read_text())["dataset"]
    keep = order[-5:]  # beyond the first two items: a --limit read first would miss them all
    subset = write_subset({"dataset": dataset, "keys": keep}, tmp_path / "subset.json")
    base = ("bench", "posqa", "--data", tmp_path / "posqa" / "posqa.json", "--model", "dummy", "--items", subset)
    said = invoke(*base, "--limit", "2", "--out", tmp_path / "two")
    assert said.exit_code == 0, said.output
    assert [r["instance_id"] for r in rows(tmp_path / "two")] == keep[:2]
    source = json.loads((tmp_path / "two" / "config.json").read_text())["settings"]["source"]
    assert source["limit"] == 2 and source["items"]["n"] == 5
    replay = invoke("run", tmp_path / "two", "--out", tmp_path / "two-again")
    assert replay.exit_code == 0, replay.output
    assert [r["instance_id"] for r in rows(tmp_path / "two-again")] == keep[:2]


def test_the_default_run_folder_is_one_rule_and_the_same_command_resumes_it(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        said = invoke("bench", "posqa", "--demo", "--model", "dummy")
        assert said.exit_code == 0, said.output
    folders = sorted((tmp_path / "runs").iterdir())
    assert [f.name[:-8] for f in folders] == ["ask-posqa-dummy-"]
    assert "all 16 items were already computed" in caplog.text
    assert f"Run written to runs/{folders[0].name}" in said.output


def test_the_which_one_prior_answers_the_most_frequent_gold_position(tmp_path):
    posqa_demo(tmp_path, "--subset", "special", "--out", tmp_path / "special")
    summary = json.loads((tmp_path / "special" / "summary.json").read_text())
    records = json.loads((tmp_path / "posqa" / "posqa.json").read_text())
    positions = [1 if r["special_question_label"] == r["h_name"] else 2 for r in records.values()]
    top = max((1, 2), key=positions.count)
    assert summary["details"]["answer_prior"]["label"] == f"option {top}"
    assert summary["metrics"]["answer_prior"]["mean"] == pytest.approx(100 * positions.count(top) / len(positions))
    table = (tmp_path / "special" / "table.md").read_text()
    assert "| answer prior (majority option position of the test items" in table


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llava") / "llava"
    assert invoke("models", "tiny", "llava", "--out", folder).exit_code == 0
    return folder


def test_image_condition_none_needs_no_image_file_and_its_replay_neither(tmp_path, llava):
    import shutil

    said = invoke("bench", "cv-bench", "--demo", "--data", tmp_path / "cv", "--model", llava, "--limit", "1",
                  "--out", tmp_path / "first", "--device", "cpu")
    assert said.exit_code == 0, said.output
    shutil.rmtree(tmp_path / "cv" / "img")  # the images are gone
    base = ("bench", "cv-bench", "--data", tmp_path / "cv" / "test.jsonl", "--model", llava, "--device", "cpu")
    refused = invoke(*base, "--out", tmp_path / "real")
    assert refused.exit_code == 2 and "image 'img/2D/ade20k_0.png' not found" in refused.output
    said = invoke(*base, "--image-condition", "none", "--out", tmp_path / "none")
    assert said.exit_code == 0, said.output
    assert {r["condition"] for r in rows(tmp_path / "none")} == {"none"} and len(rows(tmp_path / "none")) == 12
    replay = invoke("run", tmp_path / "none")
    assert replay.exit_code == 0, replay.output
    vsr = invoke("vsr", "--demo", "--data", tmp_path / "vsr", "--model", llava, "--limit", "1", "--device", "cpu",
                 "--out", tmp_path / "vsr-first")
    assert vsr.exit_code == 0, vsr.output
    shutil.rmtree(tmp_path / "vsr" / "images")
    none = invoke("vsr", "--data", tmp_path / "vsr", "--model", llava, "--image-condition", "none", "--device", "cpu",
                  "--out", tmp_path / "vsr-none")
    assert none.exit_code == 0, none.output


def test_summary_lines_print_one_decimal(tmp_path, llava):
    said = invoke("vsr", "--demo", "--data", tmp_path / "vsr", "--model", llava, "--device", "cpu",
                  "--out", tmp_path / "run")
    assert said.exit_code == 0, said.output
    mean = json.loads((tmp_path / "run" / "summary.json").read_text())["accuracy"]["mean"]
    assert re.search(rf"VSR random/test accuracy {mean:.1f}% over 12 of 12 examples", said.output)
    assert not re.search(r"\d\.\d{2,}%", said.output)


def test_the_demo_copies_are_deterministic():
    from spatialprobe.benchmarks import demo_copy

    first, second = random.Random(3), random.Random(3)
    assert demo_copy.lettered(first) == demo_copy.lettered(second)
