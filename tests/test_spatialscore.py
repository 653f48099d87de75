"""SpatialScore version_0 (spatialprobe/benchmarks/spatialscore.py): its JSON layout with images
under dataset/, the scripts' readers per answer type and their per-source / per-category summary
equal to tests/official on thousands of random replies, the published Hard file (when the
mirror is here), and ``spatialprobe bench spatialscore`` on a synthetic copy."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from bench_a_helpers import bench_a, needs_a_llava
from five_copies import spatialscore as write_copy
from five_helpers import rows, run_scripted, scored_rows
from official import spatialscore as theirs
from official.replies import replies
from test_official_transcriptions import strict as plain

from spatialprobe.engine.metrics import official_metrics
from spatialprobe.engine.rebuild import rebuild_source
from spatialprobe.errors import DataError
from spatialprobe.readers import spatialscore as ours

NUMERIC = ["3", "3.0", " 2.5 meters", "about 180 cm", "**1.2 m**", "\\scalar{2} \\distance_unit{feet}", "two",
           "There are three chairs.", "0", "I think 0.4", "ASSISTANT: (b)", "no idea", "<conclusion>7</conclusion>",
           "approximately 40 inches", "1.5 meters or 2 meters", "", "the first one", "It is roughly 3.7m."]
YES_NO = ["Yes", "no", "That is correct.", "Not at all", "It is right of it", "wrong", "maybe", "<conclusion>yes"
          "</conclusion>", "ASSISTANT: A", "Yes, but no"]


def _said(item, rng):
    if item.fields["question_type"] == "judgment":
        return rng.choice(YES_NO)
    if item.fields["question_type"] == "open-ended":
        return rng.choice([*NUMERIC, item.fields["answer"], f"{item.fields['answer']} ".upper()])
    return replies(list(item.options), item.gold, 1, seed=rng.randrange(10**9))[0].text


def test_the_copy_is_read_with_its_sources_and_answer_types(tmp_path):
    path, _ = write_copy(tmp_path, n=48)
    source = rebuild_source({"name": "spatialscore", "data": str(tmp_path)}, 0)  # the folder holding dataset/
    assert len(source.items) == 48
    assert Counter(i.fields["question_type"] for i in source.items) == {"multi-choice": 24, "judgment": 6,
                                                                       "open-ended": 18}
    assert all(len(i.options) == 4 for i in source.items if i.fields["question_type"] == "multi-choice")
    first = source.items[0]
    assert (first.fields["source"], first.fields["index_origin"], first.fields["category_origin"]) == \
        ("cvbench", "0", "cvbench_multi-choice")
    vgbench = next(i for i in source.items if i.fields["source"] == "VGBench")
    assert float(vgbench.gold) == pytest.approx(float(vgbench.fields["answer"].split()[0]))  # meters
    assert len({i.fields["unit"] for i in source.items if i.fields["source"] == "VSI-Bench_8"}) == 3
    assert next(1 + len(i.views) for i in source.items if i.fields["source"] == "VSI-Bench_8") == 8
    vsi = rebuild_source({"name": "spatialscore", "data": str(path), "subset": "VSI-Bench_8"}, 0)
    assert {i.fields["source"] for i in vsi.items} == {"VSI-Bench_8"}


def test_the_readers_and_summary_equal_the_scripts_on_random_replies(tmp_path):
    path, records = write_copy(tmp_path, n=96)
    source = rebuild_source({"name": "spatialscore", "data": str(path)}, 0)
    rng = random.Random(9)
    for _ in range(25):  # 2,400 replies
        said = [_said(i, rng) for i in source.items]
        for text in said:
            assert ours.extract_option(text) == theirs.extract_option(text)
            assert ours.extract_yes_no(text) == theirs.extract_yes_no(text)
            assert ours.extract_number(text) == theirs.extract_number(text)
            read = theirs.extract_numeric_with_unit(text)
            assert ours.value_and_unit(text) == (read["value"], read["unit"])
        got = scored_rows(source, said)
        # their generate_response strips each reply before it is scored
        scores = [theirs.score_item(rec, t.strip())[1] for rec, t in zip(records, said, strict=True)]
        assert [r["official_score"] for r in got] == pytest.approx(scores)
        metrics, _ = official_metrics(got, source.spec, source.official)
        summary = theirs.summarize([{**rec, "score": s} for rec, s in zip(records, scores, strict=True)])
        assert metrics["accuracy"].mean == pytest.approx(summary["overall"]["accuracy"])
        for group, key in (("by_source", "source"), ("by_category", "category")):
            for name, part in summary[group].items():
                assert metrics["accuracy"].breakdown[f"{key} {name}"].mean == pytest.approx(part["accuracy"])


def test_the_published_hard_file_is_read_when_the_mirror_holds_it(tmp_path):
    import subprocess

    mirror = "/work/.mirror/haoningwu3639+SpatialScore/repo"
    try:
        text = subprocess.run(["git", "-C", mirror, "show", "HEAD:version_0/dataset/SpatialScore-Hard.json"],
                              capture_output=True, check=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("the SpatialScore mirror is not here")
    (tmp_path / "SpatialScore-Hard.json").write_text(text)
    from spatialprobe.benchmarks.local_copy import text_only

    with text_only():
        source = rebuild_source({"name": "spatialscore", "data": str(tmp_path / "SpatialScore-Hard.json")}, 0)
    assert len(source.items) == 1400
    assert Counter(i.fields["question_type"] for i in source.items) == {"multi-choice": 1121, "open-ended": 187,
                                                                       "judgment": 92}
    assert Counter(i.fields["source"] for i in source.items)["VSI-Bench_8"] == 336
    assert all(i.options[0] != "A" for i in source.items if i.fields["question_type"] == "multi-choice")


def test_bench_on_a_synthetic_copy_reports_the_scripts_numbers(tmp_path):
    path, records = write_copy(tmp_path / "copy", n=48)
    source = rebuild_source({"name": "spatialscore", "data": str(path)}, 0)
    rng = random.Random(4)
    script = {i.question: [_said(i, rng)] for i in source.items}
    summary = run_scripted("spatialscore", path, script, tmp_path)
    said = [script[i.question][0].strip() for i in source.items]
    scores = [theirs.score_item(rec, t)[1] for rec, t in zip(records, said, strict=True)]
    metrics = summary["metrics"]
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * sum(scores) / len(scores))
    numeric = [r for r in rows(tmp_path) if r["mra"] is not None]
    words = [r for r in records if r["source"] == "RealWorldQA" and r["answer"] in ("Yes", "No")]
    assert words and len(numeric) == 18 - len(words)  # RealWorldQA's words: exact match only
    assert metrics["mra"]["mean"] == pytest.approx(100 * sum(r["mra"] for r in numeric) / len(numeric))
    assert summary["intervals"]["clusters"] == ["unit"]
    assert summary["details"]["readers"]["official"] == "spatialscore"
    # strict: a letter or Yes/No exactly, or exactly a number (in the gold's unit where it has one)
    by_key = {str(i.key): i for i in source.items}
    strict_scores, strict_mra = [], []
    for row in rows(tmp_path):
        item, text = by_key[row["instance_id"]], row["reply"].strip()
        if item.options:
            letter = plain(text, list(item.options))
            strict_scores.append(float(letter is not None and item.labels[ord(letter) - 65] == item.gold))
            continue
        value = _plain_number(text)
        if any(u in item.fields["answer"].lower() for u in theirs.UNIT_WORDS):
            unit = item.fields["answer"].split()[1]
            fed = "" if value is None else f"{text} {unit}"
            strict_scores.append(float(theirs.extract_numeric_with_unit(fed, item.fields["answer"])["is_correct"]))
            value = None if value is None else value * CM[unit.lower()] / 100
        else:
            strict_scores.append(theirs.score_item(item.fields, text)[1] if value is not None else
                                 float(text.lower() == item.fields["answer"].lower()))
        if row["mra"] is not None:
            strict_mra.append(0.0 if value is None else
                              theirs.mean_relative_accuracy(value, float(item.gold), .5, .95, .05))
    assert metrics["strict_accuracy"]["mean"] == pytest.approx(100 * sum(strict_scores) / len(strict_scores))
    assert metrics["strict_mra"]["mean"] == pytest.approx(100 * sum(strict_mra) / len(strict_mra))
    assert metrics["strict_mra"]["ci"] is not None and metrics["strict_within_tolerance"]["ci"] is not None


CM = {"m": 100, "meter": 100, "meters": 100, "cm": 1, "feet": 30.48, "ft": 30.48, "inches": 2.54}


def _plain_number(text: str) -> float | None:
    """A reply that is exactly a number (digits, a sign, a point, an exponent) as one, else None."""
    import re

    return float(text) if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text) else None


def test_an_answer_of_another_type_is_refused_naming_its_record(tmp_path):
    path, records = write_copy(tmp_path, n=8)
    records[3]["answer"] = "Perhaps"
    path.write_text(json.dumps(records))
    with pytest.raises(DataError, match=r"record 4, field 'answer'.*neither yes nor no"):
        rebuild_source({"name": "spatialscore", "data": str(path)}, 0)


@needs_a_llava
def test_a_tiny_model_answering_a_is_scored_by_the_scripts(tmp_path):
    path, records = write_copy(tmp_path / "copy", n=16)
    metrics = bench_a("spatialscore", path, tmp_path / "run")
    scores = [theirs.score_item(rec, "A")[1] for rec in records]
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * sum(scores) / len(scores))
