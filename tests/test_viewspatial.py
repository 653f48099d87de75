"""ViewSpatial-Bench (spatialprobe/benchmarks/viewspatial.py): the real annotations through the
loader, the authors' reader and per-type accuracy equal to their evaluate.py (tests/official) on
thousands of random replies, and ``spatialprobe bench viewspatial`` on a synthetic checkout."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from bench_a_helpers import bench_a, needs_a_llava
from five_copies import viewspatial as write_copy
from five_helpers import random_script, rows, run_scripted, scored_rows
from official import viewspatial as theirs
from official.replies import replies
from typer.testing import CliRunner

from spatialprobe.benchmarks.local_copy import text_only
from spatialprobe.cli import app
from spatialprobe.engine.metrics import official_metrics
from spatialprobe.engine.rebuild import rebuild_source
from spatialprobe.errors import DataError
from spatialprobe.readers.viewspatial import read_viewspatial

ANNOTATIONS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "viewspatial" / "ViewSpatial-Bench.json"


@pytest.fixture(scope="module")
def shared_items():
    path = ANNOTATIONS
    if not path.is_file():
        pytest.skip("../shared/data/viewspatial is not present")
    with text_only():  # the images are not shared: the items alone
        source = rebuild_source({"name": "viewspatial", "data": str(path)}, 0)
    return source, json.loads(path.read_text(encoding="utf-8"))


def test_the_real_annotations_are_read_with_their_counts(shared_items):
    source, records = shared_items
    assert len(source.items) == 5712
    assert Counter(i.fields["question_type"] for i in source.items) == {
        "Camera perspective - Relative Direction": 1773,
        "Person perspective - Scene Simulation Relative Direction": 1105,
        "Camera perspective - Object View Orientation": 996, "Person perspective - Object View Orientation": 996,
        "Person perspective - Relative Direction": 842}
    assert Counter(len(i.options) for i in source.items) == {4: 5539, 2: 173}
    assert Counter(i.gold for i in source.items) == {"A": 1459, "B": 1506, "C": 1359, "D": 1388}
    scenes = {i.fields["first_image"].split("/")[2] for i in source.items if "scannet" in i.fields["first_image"]}
    assert len(scenes) == 279
    coco = {i.fields["first_image"] for i in source.items if "val2017" in i.fields["first_image"]}
    assert len({i.fields["unit"] for i in source.items}) == 279 + len(coco)
    assert source.items[0].question == theirs.build_question(records[0])  # the authors' prompt, to the letter
    assert sum(1 + len(i.views) for i in source.items) == sum(len(r["image_path"]) for r in records)


def _official(source, rows_):
    metrics, _ = official_metrics(rows_, source.spec, source.official, strict=True)
    return metrics["accuracy"]


def test_the_official_reading_and_accuracy_equal_the_authors_on_random_replies(shared_items):
    source, records = shared_items
    for round_ in range(2):  # 11,424 replies: every item twice
        said = [replies(list(i.options), i.gold, 1, seed=round_ * 10_000 + n)[0].text
                for n, i in enumerate(source.items)]
        got = scored_rows(source, said)
        assert [r["pred"] == r["gold"] for r in got] == [theirs.is_correct(reply, rec["answer"])
                                                                 for reply, rec in zip(said, records, strict=True)]
        assert [read_viewspatial(reply) for reply in said] == [theirs.read(reply) for reply in said]
        expected = theirs.evaluate(records, said)
        accuracy = _official(source, got)
        assert accuracy.mean == pytest.approx(100 * expected["accuracy"], abs=1e-9)
        for kind, part in expected["per_type"].items():
            assert accuracy.breakdown[f"question_type {kind}"].mean == pytest.approx(100 * part["accuracy"], abs=1e-9)


def test_the_article_a_reads_as_option_a_and_a_trailing_newline_as_nothing():
    assert read_viewspatial("It is a B") == "A"
    assert read_viewspatial("B\n") is None
    assert read_viewspatial("Let me see.\nB") == "B"
    assert read_viewspatial(None) is None


def test_bench_on_a_synthetic_checkout_reports_the_authors_numbers(tmp_path):
    root, records = write_copy(tmp_path / "ViewSpatial-Bench")
    source = rebuild_source({"name": "viewspatial", "data": str(root)}, 0)
    script = random_script(source, 3)
    summary = run_scripted("viewspatial", root, script, tmp_path)
    said = [script[i.question][0] for i in source.items]
    expected = theirs.evaluate(records, said)
    accuracy = summary["metrics"]["accuracy"]
    assert accuracy["mean"] == pytest.approx(100 * expected["accuracy"])
    low, high = accuracy["ci"]
    assert low < accuracy["mean"] < high
    for kind, part in expected["per_type"].items():
        assert accuracy["breakdown"][f"question_type {kind}"]["mean"] == pytest.approx(100 * part["accuracy"])
    assert summary["intervals"]["clusters"] == ["unit"]
    assert len({r["unit"] for r in rows(tmp_path)}) == 4 + 7  # four ScanNet scenes, seven COCO images
    assert max(len(i.views) for i in source.items) == 2  # Scene Simulation: three frames asked together


def test_a_record_whose_answer_is_no_choice_is_refused_naming_it(tmp_path):
    root, records = write_copy(tmp_path / "copy", n=5)
    records[2]["answer"] = "D. nowhere" if records[2]["choices"].count("\n") == 1 else "E. nowhere"
    (root / "eval" / "ViewSpatial-Bench.json").write_text(json.dumps(records))
    with pytest.raises(DataError, match=r"record 3, field 'answer'"):
        rebuild_source({"name": "viewspatial", "data": str(root)}, 0)


def test_the_annotations_without_images_are_audited_blind(shared_items):
    said = CliRunner().invoke(app, ["audit", "blind", "viewspatial", "--data", str(ANNOTATIONS), "--limit", "400"])
    assert said.exit_code == 0, said.output
    assert "Blind audit of viewspatial@" in said.output


@needs_a_llava
def test_a_tiny_model_answering_a_scores_the_a_share_under_the_authors_reader(tmp_path):
    root, records = write_copy(tmp_path / "copy", n=15)
    metrics = bench_a("viewspatial", root, tmp_path / "run")
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * sum(r["answer"][0] == "A" for r in records) / 15)


def test_the_strict_reading_is_the_plain_reader_and_reported_beside(shared_items):
    from test_official_transcriptions import strict as plain

    source, _ = shared_items
    said = [replies(list(i.options), i.gold, 1, seed=7 + n)[0].text for n, i in enumerate(source.items[:3000])]
    first = replace(source, items=source.items[:3000])
    got = scored_rows(first, said)
    assert [r["pred_strict"] for r in got] == [plain(t, list(i.options)) or "--"
                                               for t, i in zip(said, first.items, strict=True)]
    metrics, _ = official_metrics(got, source.spec, source.official, strict=True)
    assert metrics["strict_accuracy"].mean < metrics["accuracy"].mean  # the official reader reads more
    assert set(metrics["strict_accuracy"].breakdown) == set(metrics["accuracy"].breakdown)


def test_the_run_reports_both_readings_and_their_disagreements(tmp_path):
    root, _ = write_copy(tmp_path / "ViewSpatial-Bench")
    source = rebuild_source({"name": "viewspatial", "data": str(root)}, 0)
    summary = run_scripted("viewspatial", root, random_script(source, 8), tmp_path)
    readers = summary["details"]["readers"]
    assert readers["official"] == "viewspatial" and readers["cited"].startswith("ZJU-REAL/ViewSpatial-Bench")
    found = rows(tmp_path)
    assert readers["n"] == sum(r["pred"] != r["pred_strict"] for r in found) > 0
    strict = summary["metrics"]["strict_accuracy"]
    assert strict["mean"] == pytest.approx(100 * sum(r["pred_strict"] == r["gold"] for r in found) / len(found))
    assert strict["ci"] is not None
