"""MindCube (spatialprobe/benchmarks/mindcube.py): the authors' data/ folder (tiny and full),
their extract_answer and BasicEvaluator (translation left out of the overall) equal to
tests/official on thousands of random replies, the chance and frequency baselines, and
``spatialprobe bench mindcube`` on a synthetic copy."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from bench_a_helpers import bench_a, needs_a_llava
from five_copies import mindcube as write_copy
from five_helpers import random_script, rows, run_scripted, scored_rows
from official import mindcube as theirs
from official.replies import replies

from spatialprobe.engine.metrics import official_metrics
from spatialprobe.engine.rebuild import rebuild_source
from spatialprobe.errors import DataError, UsageError
from spatialprobe.readers.mindcube import lmms_setting, read_mindcube, setting_of


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    return write_copy(tmp_path_factory.mktemp("mindcube"), n=60)


def test_tiny_and_full_are_read_from_the_data_folder_with_their_settings_and_groups(copy):
    data, _ = copy
    tiny = rebuild_source({"name": "mindcube", "data": str(data)}, 0)
    full = rebuild_source({"name": "mindcube", "data": str(data), "subset": "full"}, 0)
    one_file = rebuild_source({"name": "mindcube", "data": str(data / "raw" / "MindCube_tinybench.jsonl")}, 0)
    assert (len(tiny.items), len(full.items)) == (60, 120)
    assert [i.key for i in one_file.items] == [i.key for i in tiny.items]
    assert Counter(i.fields["setting"] for i in full.items) == {"among": 30, "around": 30, "rotation": 30,
                                                                "translation": 30}
    assert len({i.fields["group"] for i in full.items}) == 40  # three questions a group
    assert [len(i.options) for i in full.items[:3]] == [3, 4, 5]
    assert [1 + len(i.views) for i in full.items[:3]] == [2, 3, 4]
    among = rebuild_source({"name": "mindcube", "data": str(data), "options": {"setting": "among"}}, 0)
    assert {i.fields["setting"] for i in among.items} == {"among"}
    with pytest.raises(UsageError, match="subsets are tiny, full"):
        rebuild_source({"name": "mindcube", "data": str(data), "subset": "huge"}, 0)


def test_the_reader_and_the_settings_are_the_authors():
    for text in ("B. Left", "E.g. the answer is B", "A is wrong, the answer is B", "<Answer> my answer is D",
                 "**B**", "a", "", "A. left\nB. right", "I think C", "Answer: D because"):
        assert read_mindcube(text) == theirs.extract_answer(text), text
    for key in ("around_abc_q2_7", "among_aroundtable_q1", "translation_x", "rotation_group000_q3", ""):
        assert setting_of(key) == theirs.get_setting_from_id(key)
        assert lmms_setting(key) == theirs.lmms_setting(key)


def test_the_official_numbers_equal_the_basic_evaluator_on_random_replies(copy):
    data, records = copy
    source = rebuild_source({"name": "mindcube", "data": str(data), "subset": "full"}, 0)
    for round_ in range(25):  # 3,000 replies
        said = [replies(list(i.options), i.gold, 1, seed=round_ * 1000 + n)[0].text for n, i in enumerate(source.items)]
        assert [read_mindcube(r) for r in said] == [theirs.extract_answer(r) for r in said]
        got = scored_rows(source, said)
        metrics, _ = official_metrics(got, source.spec, source.official, strict=True)
        expected = theirs.basic_evaluate([{**rec, "answer": r} for rec, r in zip(records, said, strict=True)])
        assert metrics["accuracy"].mean == pytest.approx(100 * expected["gen_cogmap_accuracy"], abs=1e-9)
        for setting, part in expected["settings"].items():
            if part["total"]:
                found = metrics["accuracy_by_setting"].breakdown[f"setting {setting}"].mean
                assert found == pytest.approx(100 * part["gen_cogmap_accuracy"], abs=1e-9)


def test_the_chance_and_frequency_baselines_are_computed_from_the_items(copy):
    data, _ = copy
    source = rebuild_source({"name": "mindcube", "data": str(data), "subset": "full"}, 0)
    rows = scored_rows(source, ["A"] * len(source.items))
    metrics, _ = official_metrics(rows, source.spec, source.official, strict=True)
    assert "strict_chance" not in metrics and "strict_frequency" not in metrics  # baselines read no answer
    counted = [i for i in source.items if i.fields["setting"] != "translation"]
    assert metrics["chance"].mean == pytest.approx(100 * sum(1 / len(i.options) for i in counted) / len(counted))
    top, n = Counter(i.gold for i in counted).most_common(1)[0]
    assert source.details["frequent_gold"] == top
    assert metrics["frequency"].mean == pytest.approx(100 * n / len(counted))
    rotation = [i for i in counted if i.fields["setting"] == "rotation"]
    assert metrics["chance"].breakdown["setting rotation"].mean == pytest.approx(
        100 * sum(1 / len(i.options) for i in rotation) / len(rotation))


def test_bench_on_a_synthetic_copy_reports_the_authors_numbers_and_the_baselines(tmp_path):
    data, records = write_copy(tmp_path / "copy", n=40)
    source = rebuild_source({"name": "mindcube", "data": str(data)}, 0)
    script = random_script(source, 5)
    summary = run_scripted("mindcube", data, script, tmp_path)
    said = [script[i.question][0] for i in source.items]
    expected = theirs.basic_evaluate([{**rec, "answer": r} for rec, r in zip(records[:40], said, strict=True)])
    metrics = summary["metrics"]
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * expected["gen_cogmap_accuracy"])
    assert metrics["accuracy"]["ci"][0] < metrics["accuracy"]["mean"] < metrics["accuracy"]["ci"][1]
    assert metrics["chance"]["mean"] < 40 and metrics["frequency"]["ci"] is not None
    assert summary["intervals"]["clusters"] == ["group"]
    found = rows(tmp_path)
    counted = [r for r in found if r["setting"] != "translation"]
    assert metrics["strict_accuracy"]["mean"] == pytest.approx(
        100 * sum(r["pred_strict"] == r["gold"] for r in counted) / len(counted))
    assert metrics["strict_accuracy_by_setting"]["ci"] is not None and "strict_chance" not in metrics
    assert summary["details"]["readers"]["official"] == "mindcube"


def test_a_question_whose_options_cannot_be_read_is_refused_naming_its_line(tmp_path):
    data, records = write_copy(tmp_path / "copy", n=4)
    records[1]["question"] = "Where is the chair? Left or right?"
    (data / "raw" / "MindCube_tinybench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[:4]))
    with pytest.raises(DataError, match=r"line 2, field 'question'"):
        rebuild_source({"name": "mindcube", "data": str(data)}, 0)


@needs_a_llava
def test_a_tiny_model_answering_a(tmp_path):
    data, records = write_copy(tmp_path / "copy", n=12)
    metrics = bench_a("mindcube", data, tmp_path / "run")
    counted = [r for r in records[:12] if not r["id"].startswith("translation")]
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * sum(r["gt_answer"] == "A" for r in counted)
                                                         / len(counted))
