"""Yes/no question sets: balance, wording, distractors, the release's posrel_qa format."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.files import write_jsonl
from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.yes_no import build_qa, load_qa, posrel_distractor, questions_for, to_qa_records

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "spatial-commonsense"


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))


@pytest.mark.parametrize("task, n", [("size", 1000), ("height", 1000), ("posrel", 512)])
def test_sets_are_balanced(task, n):
    qa = build_qa(task_data.load(task))
    assert len(qa) == n
    assert Counter(item.answer for item in qa.items) == {"yes": n // 2, "no": n // 2}


def test_size_questions_ask_both_comparatives():
    first, second = build_qa(task_data.load("size")).items[:2]  # ant vs bird
    assert (first.question, first.answer) == ("Is an ant larger than a bird?", "no")
    assert (second.question, second.answer) == ("Is an ant smaller than a bird?", "yes")
    assert first.context == "An ant and a bird." and first.instance_id == "size-0000"


def test_posrel_true_question_then_distractor():
    qa = build_qa(task_data.load("posrel"))
    first, second = qa.items[:2]
    assert first.full_text == "A man drives the bus. Is the man inside the bus?"
    assert (first.answer, second.answer) == ("yes", "no")
    assert second.question == "Is the man beside the bus?"
    rides = next(i for i in qa.items if i.context == "A girl rides the camel." and i.answer == "yes")
    assert rides.question == "Is the girl on the camel?"


def test_distractor_rule():
    assert posrel_distractor("inside", ["inside", "beside"]) == "beside"
    assert posrel_distractor("beside", ["below", "beside", "below"]) == "below"
    assert posrel_distractor("beside", ["beside"]) == "inside"


def test_export_round_trip(tmp_path):
    qa = build_qa(task_data.load("height"))
    path = tmp_path / "qa.jsonl"
    write_jsonl(path, to_qa_records(qa))
    loaded = load_qa(path)
    assert loaded.items == qa.items


def test_questions_for_a_dataset_file_and_a_qa_file(tmp_path):
    data = tmp_path / "posrel.jsonl"
    write_jsonl(data, task_data.to_release_records(task_data.load("posrel")))
    qa, label = questions_for(None, data)
    assert qa.task == "posrel" and len(qa) == 512 and label.startswith("posrel.jsonl@")
    release_like = tmp_path / "qa.jsonl"
    write_jsonl(release_like, [{"question": "A boy flies the kite. Is the boy under the kite?", "label": 1},
                               {"question": "A boy flies the kite. Is the boy beside the kite?", "label": 0}])
    qa, _ = questions_for(None, release_like)
    assert [i.relation for i in qa.items] == ["below", "beside"]
    assert [i.instance_id for i in qa.items] == ["posrel-0000", "posrel-0000"]
    assert qa.items[0].context == "A boy flies the kite." and qa.items[0].question == "Is the boy under the kite?"


def test_bad_qa_record_names_file_line_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question": "A man drives the car. Is the man inside the car?", "label": 1}\n'
                    '{"question": "A man drives the car.", "label": 1}\n')
    with pytest.raises(task_data.DataError, match=r"bad.jsonl, line 2, field 'question'"):
        load_qa(path)


def test_qa_context_null_is_absent_and_a_non_string_is_refused(tmp_path):
    path = tmp_path / "qa.jsonl"
    write_jsonl(path, [{"question": "A man drives the car. Is the man inside the car?", "label": 1, "context": None},
                       {"question": "A man drives the car. Is the man on the car?", "label": 0}])
    assert [i.context for i in load_qa(path).items] == ["A man drives the car.", "A man drives the car."]
    write_jsonl(path, [{"question": "Is the man inside the car?", "label": 1, "context": 5}])
    with pytest.raises(task_data.DataError, match=r"qa\.jsonl, line 1, field 'context': expected str, got 5"):
        load_qa(path)


@pytest.mark.skipif(not (SHARED / "posrel_qa.jsonl").exists(), reason="shared data absent")
def test_release_posrel_qa_loads_and_is_reproduced_exactly():
    released = load_qa(SHARED / "posrel_qa.jsonl")
    assert len(released) == 448
    assert Counter(i.answer for i in released.items) == {"yes": 224, "no": 224}
    built = build_qa(task_data.load_release(SHARED / "posrel.jsonl"))
    assert [(i.full_text, i.answer) for i in built.items] == [(i.full_text, i.answer) for i in released.items]
    assert [i.instance_id for i in built.items] == [i.instance_id for i in released.items]


def test_cli_export(tmp_path):
    out = tmp_path / "size_qa.jsonl"
    result = CliRunner().invoke(app, ["qa", "export", "--task", "size", "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1000 and rows[0]["question"] == "An ant and a bird. Is an ant larger than a bird?"
    assert sum(r["label"] for r in rows) == 500


def test_bare_comparison_questions_get_their_task(tmp_path):
    path = tmp_path / "qa.jsonl"
    write_jsonl(path, [{"question": "Is a giraffe taller than a cup?", "label": 1},
                       {"question": "Is a giraffe shorter than a cup?", "label": 0}])
    qa = load_qa(path)
    assert qa.task == "height" and [i.instance_id for i in qa.items] == ["height-0000"] * 2
    assert [i.relation for i in qa.items] == ["taller", "shorter"] and qa.items[0].context == ""
