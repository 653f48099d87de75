"""Tasks worded as questions from their files' ``questions`` block (no task names in code)."""

from __future__ import annotations

import json

import pytest

from spatialprobe import tasks
from spatialprobe.errors import UsageError
from spatialprobe.prompts.questions import choice_question, yes_no_question
from spatialprobe.tasks import _from_json
from spatialprobe.tasks import data as task_data


def _inst(task: str, obj_a: str, obj_b: str):
    return next(i for i in task_data.load(task).instances if (i.obj_a, i.obj_b) == (obj_a, obj_b))


def test_comparison_questions_name_the_objects_and_mean_the_labels():
    inst = _inst("size", "ant", "bottle")  # gold: smaller
    asked = choice_question("size", inst)
    assert asked.prompt == "Which is larger: an ant or a bottle?"
    assert asked.options == ("An ant", "A bottle") and asked.labels == ("larger", "smaller")
    assert asked.label_of("A bottle") == asked.gold == "smaller" and asked.label_of(None) is None
    assert yes_no_question("size", inst, "smaller").prompt == "Is an ant smaller than a bottle?"
    assert yes_no_question("size", inst, "smaller").gold == "yes"
    assert yes_no_question("size", inst, "larger").gold == "no"


def test_position_questions_carry_the_scenario_and_the_yes_no_words_of_the_file():
    inst = next(i for i in task_data.load("posrel").instances if i.text == "A woman is driving the bus.")
    asked = choice_question("posrel", inst)
    assert asked.prompt == ("A woman is driving the bus. Where is the woman relative to the bus: "
                            "above, below, inside or beside?")
    assert asked.options == ("Above", "Below", "Inside", "Beside") and asked.gold == "inside"
    assert yes_no_question("posrel", inst, "above").prompt == "A woman is driving the bus. Is the woman on the bus?"
    assert yes_no_question("posrel", inst, "inside").gold == "yes"


def test_every_task_file_words_every_label():
    for name in tasks.names():
        spec = tasks.get(name)
        assert set(spec.labels) <= set(spec.questions["words"])
        assert spec.question("a cat", "a dog") == spec.questions["annotation"].format(a="a cat", b="a dog")


def test_a_task_file_without_a_question_wording_is_refused_naming_what_is_missing():
    data = json.loads((tasks.resources.files("spatialprobe.tasks") / "size.json").read_text())
    del data["questions"]["yes_no"]
    with pytest.raises(UsageError, match=r"tasks/size.json: its questions block lacks \['yes_no'\]"):
        _from_json(data, "tasks/size.json")
    data = json.loads((tasks.resources.files("spatialprobe.tasks") / "size.json").read_text())
    del data["questions"]["words"]["smaller"]
    with pytest.raises(UsageError, match=r"questions.words has no word for the label\(s\) \['smaller'\]"):
        _from_json(data, "tasks/size.json")
