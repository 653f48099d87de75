"""Numeric answers: the reader (numbers, number words, units, the reason when nothing reads),
Mean Relative Accuracy equal to thinking-in-space's own code (tests/official/vsibench.py) on
random replies, the registered statistics with their intervals, and the row-level path of an
asked-items run through ``spatialprobe bench`` reporting MRA exactly as the authors aggregate it."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from official import vsibench
from quality_helpers import registered, write_items, write_model
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.metrics import statistics
from spatialprobe.metrics.intervals import Resampling, metric_intervals
from spatialprobe.metrics.relative import MRA_THRESHOLDS, mean_relative_accuracy, within_ratio
from spatialprobe.readers.numeric import AREA_SQUARE_METERS, LENGTH_METERS, first_token_number, read_number

READ = [  # reply, units, value, rule
    ("3", None, 3.0, "digits"),
    ("-2.5", None, -2.5, "digits"),
    ("1,250 chairs", None, 1250.0, "digits"),
    ("3/4", None, 0.75, "digits"),
    ("two", None, 2.0, "words"),
    ("twenty-one", None, 21.0, "words"),
    ("Three hundred and twenty-one", None, 321.0, "words"),
    ("two thousand five hundred", None, 2500.0, "words"),
    ("I count 3 chairs and 2 tables", None, 3.0, "digits"),
    ("Let me think: 2 chairs, 1 lamp. The answer is 4.", None, 4.0, "digits"),
    ("180 cm", LENGTH_METERS, 1.8, "digits+unit"),
    ("It is about 7 ft away", LENGTH_METERS, 2.1336, "digits+unit"),
    ("3 in the room", LENGTH_METERS, 3.0, "digits"),
    ("12 square feet", AREA_SQUARE_METERS, 12 * 0.09290304, "digits+unit"),
    ("two meters", LENGTH_METERS, 2.0, "words+unit"),
]


@pytest.mark.parametrize(("reply", "units", "value", "rule"), READ, ids=[r[0] for r in READ])
def test_the_reader_reads_numbers_words_and_declared_units(reply, units, value, rule):
    found = read_number(reply, units)
    assert found.value == pytest.approx(value) and found.rule == rule and found.reason is None


def test_nothing_read_says_why():
    assert read_number("").reason == "the reply is empty"
    assert read_number("   ").value is None
    empty = read_number("I cannot tell from the image.")
    assert empty.value is None and empty.rule == "none" and "no number" in str(empty.reason)


def test_without_a_cue_the_reader_agrees_with_lmms_evals_extract_number():
    rng = random.Random(3)
    words = ["zero", "one", "seven", "twelve", "twenty-one", "forty five", "three hundred and two"]
    for _ in range(400):
        shape = rng.randrange(4)
        number = rng.choice([str(rng.randint(0, 999)), f"{rng.uniform(0, 50):.2f}", rng.choice(words)])
        reply = [number, f"{number} meters", f"maybe {number} or so", f"the chairs: {number}"][shape]
        assert read_number(reply).value == vsibench.lmms_extract_number(reply), reply


def random_reply(rng: random.Random, gold: float) -> str:
    """A reply of one of the shapes models give: a number near the gold (bare, with a unit, with a
    trailing dot, as a word), exactly at a threshold's edge, or no number."""
    near = gold * rng.choice([1.0, rng.uniform(0.3, 1.7), 1.45, 0.55, 1.5, 1.05, 0.95])
    return rng.choice([f"{near}", f"{near:.2f} meters", f"{near:.1f}.", "two", "The answer is 3", "", "abc",
                       f"{near:.3f}"])


def test_mra_equals_thinking_in_space_on_random_replies():
    rng = random.Random(7)
    for _ in range(3000):
        gold = rng.choice([rng.uniform(0.1, 20), float(rng.randint(1, 15)), 2.0, 0.5])
        reply = random_reply(rng, gold)
        doc = {"question_type": "object_abs_distance", "ground_truth": str(gold)}
        official = vsibench.process_result(doc, reply)["MRA:.5:.95:.05"]
        assert mean_relative_accuracy(first_token_number(reply), float(str(gold))) == official, (reply, gold)


def test_mra_keeps_the_authors_ten_thresholds_and_their_floating_point():
    assert MRA_THRESHOLDS.tolist() == vsibench.mra_thresholds() and len(MRA_THRESHOLDS) == 10
    # a relative error of exactly 0.45 fails θ = .55 (1 − .55 is 0.44999999999999996), as in the authors' code
    assert mean_relative_accuracy(29.0, 20.0) == vsibench.MRA(29.0, 20.0) == 0.1  # 9 / 20 is 0.45
    assert mean_relative_accuracy(None, 3.0) == 0.0
    with pytest.raises(ValueError, match="gold is 0"):
        mean_relative_accuracy(1.0, 0.0)


def test_within_ratio_is_spatialscores_tolerance():
    assert within_ratio(3.9, 2.0) and not within_ratio(4.0, 2.0) and not within_ratio(None, 1.0)
    assert within_ratio(0.0, 0.0) and not within_ratio(0.0, 1.0) and not within_ratio(-2.0, 2.0)


def test_the_registered_statistics_average_each_rows_value_with_an_interval():
    rows = [{"instance_id": str(i), "scene": f"s{i % 6}", "mra": v, "tol": int(v > 0.5)}
            for i, v in enumerate([0.1, 0.9, 1.0, 0.0, 0.5, 0.7, 0.3, 0.8, 0.6, 1.0, 0.2, 0.4])]
    assert statistics.get("mra").numeric and statistics.get("within_tolerance").proportion
    spec = Resampling((), ("scene",), metrics={"mra": "mra"}, pred="mra", pooled=True)
    from spatialprobe.metrics.estimates import point_estimates

    assert point_estimates(rows, spec)["mra"].mean == pytest.approx(100 * np.mean([r["mra"] for r in rows]))
    low, high = metric_intervals(rows, spec)["mra"][""]
    assert 0 < low < 50.833 < high < 100
    perfect = [{**r, "mra": 1.0} for r in rows]
    assert metric_intervals(perfect, spec)["mra"][""][1] == 100.0  # never [100, 100]
    assert metric_intervals(perfect, spec)["mra"][""][0] < 100.0


def test_an_asked_run_of_numeric_items_reports_mra_as_the_authors_aggregate_it(tmp_path):
    rng = random.Random(11)
    records, script, expected = [], {}, []
    for i in range(30):
        gold = round(rng.uniform(0.5, 9.0), 2)
        reply = rng.choice([f"{gold * rng.uniform(0.4, 1.6):.3f}", f"{gold}", "no idea", f"{gold * 1.45}"])
        question = f"How far apart are the two objects of scene {i}?"
        records.append({"id": f"q{i}", "question": question, "answer": str(gold), "scene": f"scene{i // 3}"})
        script[question] = [reply]
        doc = {"question_type": "object_abs_distance", "ground_truth": str(gold)}
        expected.append(vsibench.process_result(doc, reply))
    data = write_items(tmp_path / "items.jsonl", records)
    model = write_model(tmp_path / "model", script)
    with registered():
        result = CliRunner().invoke(app, ["bench", "quality-demo", "--data", str(data), "--model", str(model),
                                          "--protocol", "generate", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    official = vsibench.aggregate([{**d, "question_type": "object_abs_distance"} for d in expected])
    assert summary["metrics"]["mra"]["mean"] == pytest.approx(official["object_abs_distance_MRA:.5:.95:.05"])
    low, high = summary["metrics"]["mra"]["ci"]
    assert low < summary["metrics"]["mra"]["mean"] < high
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    unread = [r for r in rows if r["number"] is None]
    assert unread and all(r["mra"] == 0 and r["read"] for r in unread)
    assert "| mra |" in result.output


def test_numeric_items_are_asked_by_generate_and_refused_by_the_likelihood_protocol(tmp_path):
    """Without --protocol, a benchmark with numeric items is asked by generate (the one protocol that
    reads them); --protocol likelihood is refused in one sentence."""
    data = write_items(tmp_path / "items.jsonl", [{"id": 1, "question": "How far?", "answer": "2", "scene": "a"}])
    model = write_model(tmp_path / "model", {"How far?": ["2"]})
    with registered():
        asked = CliRunner().invoke(app, ["bench", "quality-demo", "--data", str(data), "--model", str(model),
                                         "--out", str(tmp_path / "run")])
        refused = CliRunner().invoke(app, ["bench", "quality-demo", "--data", str(data), "--model", str(model),
                                           "--protocol", "likelihood", "--out", str(tmp_path / "run2")])
    assert asked.exit_code == 0, asked.output
    assert json.loads((tmp_path / "run" / "config.json").read_text())["settings"]["protocol"] == "generate"
    assert refused.exit_code == 2 and "--protocol generate" in refused.output
