"""Pins the transcriptions in ``tests/official`` of five benchmarks' official scoring code.

Each case is worked out by hand from the authors' source (cited in each module's docstring), so a
change to a transcription that alters what the authors' code would do fails here. The quirks are
kept on purpose: they are the official behaviour the engine's reference modes must reproduce.
"""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path

import pytest
from official import mindcube, omnispatial, spatialscore, viewspatial, vsibench

OFFICIAL = Path(__file__).resolve().parent / "official"


def test_no_module_imports_spatialprobe():
    for path in sorted(OFFICIAL.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "spatialprobe" for a in node.names), path
            elif isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] != "spatialprobe", path


# --- ViewSpatial-Bench -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("a cat", "A"),  # the article reads as option A
        ("It is a B", "A"),  # the first whole letter wins
        ("I'd say B", "D"),  # "'d" is a whole letter d
        ("Answer: C", "C"),
        ("The answer is B", "B"),
        ("b", "B"),
        ("right", None),
        ("", None),
        ("A. right", "A"),
    ],
)
def test_viewspatial_extract_option(text, letter):
    assert viewspatial.extract_option(text) == letter


def test_viewspatial_reads_the_last_line_only():
    assert viewspatial.is_correct("Let me think: A is wrong.\nB", "B. down")
    assert not viewspatial.is_correct("B\n", "B. down")  # the last line is empty
    assert not viewspatial.is_correct("B\nso the answer is a bit unclear", "B. down")  # "a" on the last line
    assert not viewspatial.is_correct(None, "B. down")  # a failed call counts wrong


def test_viewspatial_question_text():
    item = {"question": "Where is the sink?", "choices": "A. left\nB. right"}
    expected = "Where is the sink?A. left\nB. right\nReply only to the corresponding option.\nAnswer:"
    assert viewspatial.build_question(item) == expected


def test_viewspatial_accuracy_per_type_and_overall():
    items = [
        {"question_type": "Camera perspective - Relative Direction", "answer": "A. right"},
        {"question_type": "Camera perspective - Relative Direction", "answer": "B. left"},
        {"question_type": "Person perspective - Relative Direction", "answer": "C. front"},
        {"question_type": "Person perspective - Relative Direction", "answer": "D. back"},
        {"question_type": "Person perspective - Relative Direction", "answer": "A. back"},
    ]
    replies = ["a", "A", "C", None, "I'd pick A"]
    out = viewspatial.evaluate(items, replies)
    assert out["per_type"]["Camera perspective - Relative Direction"] == {"correct": 1, "total": 2, "accuracy": 0.5}
    assert out["per_type"]["Person perspective - Relative Direction"]["correct"] == 1
    assert out["per_type"]["Person perspective - Relative Direction"]["total"] == 3
    assert (out["correct"], out["total"], out["accuracy"]) == (2, 5, 0.4)


def test_viewspatial_on_the_shared_annotations(shared_dir):
    path = shared_dir / "data" / "viewspatial" / "ViewSpatial-Bench.json"
    if not path.is_file():
        pytest.skip("../shared/data/viewspatial is not present")
    items = json.loads(path.read_text(encoding="utf-8"))
    assert len(items) == 5712
    assert {it["question_type"] for it in items} == set(viewspatial.QUESTION_TYPES)
    # every gold reads as its first character
    assert all(viewspatial.extract_option(it["answer"]) == it["answer"][0] for it in items)
    # a model that always says "a cat" scores the share of A-gold items
    out = viewspatial.evaluate(items, ["a cat"] * len(items))
    assert out["correct"] == sum(it["answer"].startswith("A") for it in items) == 1459
    # random letters: the official accuracy is the count of first-letter matches
    rng = random.Random(7)
    replies = [rng.choice("ABCD") for _ in items]
    out = viewspatial.evaluate(items, replies)
    assert out["correct"] == sum(r == it["answer"][0] for r, it in zip(replies, items, strict=True))


# --- MindCube --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("B. Left", "B"),
        ("I pick C.", "C"),
        ("E.g. the answer is B", "E"),  # "X." anywhere has the highest priority
        ("A is wrong, the answer is B", "A"),  # a letter at the line start outranks "answer is X"
        ("The answer is A", "A"),
        ("<Answer> my answer is D", "D"),
        ("**B**", "B"),
        ("Answer: D", "D"),
        ("a", None),  # case-sensitive
        ("", None),
        ("A. left\nB. right", "B"),  # the last match of the first pattern that matches
    ],
)
def test_mindcube_extract_answer(text, letter):
    assert mindcube.extract_answer(text) == letter


def test_mindcube_setting_from_id():
    assert mindcube.get_setting_from_id("around_abc_q2_7") == "around"
    assert mindcube.get_setting_from_id("among_group693_q1") == "among"
    assert mindcube.get_setting_from_id("rotation_group000_q3") == "rotation"
    assert mindcube.get_setting_from_id("translation_x") == "translation"
    assert mindcube.get_setting_from_id("among_aroundtable_q1") == "around"  # substring, "around" first
    assert mindcube.get_setting_from_id("") == "other"
    assert mindcube.lmms_setting("among_aroundtable_q1") == "among"  # lmms-eval: the first field
    assert mindcube.lmms_setting("aroundnew_x_q1") == "around"
    assert mindcube.lmms_setting("translation_x") == "other"


def test_mindcube_basic_evaluate_leaves_translation_out_of_the_overall():
    data = [
        {"id": "among_1", "gt_answer": "A", "answer": "A. Yes"},
        {"id": "among_2", "gt_answer": "B", "answer": "A. Yes"},
        {"id": "rotation_1", "gt_answer": "C", "answer": "C. Door", "cogmap_gen_answer": "D. Wall"},
        {"id": "translation_1", "gt_answer": "A", "answer": "A."},
        {"id": "around_1", "gt_answer": "", "answer": "A."},  # no gold: skipped
        {"id": "around_2", "gt_answer": "B", "answer": "no idea"},
    ]
    res = mindcube.basic_evaluate(data)
    assert res["unfiltered_total"] == 6
    assert (res["total"], res["gen_cogmap_correct"]) == (4, 1)  # translation excluded, skipped item not counted
    assert res["gen_cogmap_accuracy"] == 0.25
    assert res["settings"]["translation"] == {
        "total": 1,
        "gen_cogmap_correct": 1,
        "gen_cogmap_accuracy": 1.0,
        "include_in_overall": False,
    }
    assert res["settings"]["rotation"]["gen_cogmap_correct"] == 0  # cogmap_gen_answer is read first
    assert res["settings"]["around"]["total"] == 1
    assert res["settings"]["other"]["gen_cogmap_accuracy"] == 0.0
    assert res["error_ids"] == ["around_2"]


def test_mindcube_lmms_overall_counts_every_item():
    records = [
        {"id": "among_1", "gt_answer": "A"},
        {"id": "translation_1", "gt_answer": "A"},
        {"id": "rotation_1", "gt_answer": "B"},
    ]
    out = mindcube.lmms_aggregate(records, ["  A. Yes  ", "A.", "C."])
    assert out["overall_accuracy"] == pytest.approx(2 / 3)
    assert (out["among_accuracy"], out["rotation_accuracy"], out["around_accuracy"]) == (1.0, 0.0, 0.0)


# --- OmniSpatial -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "eval_type", "letter"),
    [
        ("Reasoning...\nAnswer: B", "re", "B"),
        ("answer: b", "re", "b"),  # case-insensitive match, not upper-cased
        ("Answer: A\nAnswer: C", "re", "C"),  # the last match
        ("Answer:E", "re", "A"),  # outside A-D: no match, read as "A"
        ("nothing", "re", "A"),
        ('```json\n{"analysis": "x", "answer": "c"}\n```', "json", "C"),
        ("{bad json", "json", "A"),
        (" b) left", "direct", "B"),
        ("The answer is C", "direct", "T"),
    ],
)
def test_omnispatial_read_letter(text, eval_type, letter):
    assert omnispatial.read_letter(text, eval_type) == letter


def test_omnispatial_lowercase_answer_is_wrong_and_fallback_is_a():
    assert not omnispatial.is_correct("answer: b", 1, "re")
    assert omnispatial.is_correct("I cannot tell", 0, "re")  # the "A" fallback hits gold A
    assert omnispatial.gt_letter(3) == "D"


def test_omnispatial_prompt_and_image_path():
    assert omnispatial.build_prompt("Q?", ["2.7s", "14.7s"]) == "Q?\nA. 2.7s\nB. 14.7s\n"
    assert omnispatial.image_relpath({"task_type": "Complex_Logic", "id": "15_1"}) == "Complex_Logic/15.png"


def test_omnispatial_repeats_are_pooled_with_eps():
    data = [
        {"id": "0_0", "answer": 0, "task_type": "Dynamic_Reasoning", "sub_task_type": "Motion_Analysis"},
        {"id": "1_0", "answer": 1, "task_type": "Perspective_Taking", "sub_task_type": "Allocentric"},
    ]
    replies = [["Answer: A", "Answer: B"], ["Answer: A", "Answer: C"]]
    out = omnispatial.evaluate(data, replies)
    assert out["Overall"] == 3 / (4 + 1e-6) * 100
    assert out["Dynamic_Reasoning"]["Motion_Analysis"] == 2 / (2 + 1e-6) * 100
    assert out["Perspective_Taking"]["Allocentric"] == 1 / (2 + 1e-6) * 100
    assert out["Complex_Logic"]["Total"] == 0.0  # empty: 0 / 1e-6
    # pooled = mean of the two runs' accuracies when every run holds every item
    assert out["Overall"] == pytest.approx((100 + 50) / 2, rel=1e-6)


def test_omnispatial_lmms_copies():
    assert omnispatial.lmms_omnispatial_flag("Answer: B", "B")
    assert not omnispatial.lmms_omnispatial_flag("answer: b", "B")
    agg = omnispatial.lmms_omnispatial_aggregate(
        [
            {"is_correct": True, "task": "Complex_Logic", "sub_task": "omnispatial_pattern_recognition"},
            {"is_correct": False, "task": "Complex_Logic", "sub_task": "omnispatial_geometric_reasoning"},
        ]
    )
    assert agg["omnispatial"] == 0.5 and agg["task"]["Complex_Logic"] == 0.5
    assert omnispatial.lmms_strip_think("<think>A</think> <answer>C</answer>") == "C"
    assert omnispatial.lmms_strip_think("reasoning</thought>\n B") == "B"
    assert omnispatial.lmms_omni_spatial_score("<think>B?</think>c. maybe", 2) == 1
    assert omnispatial.lmms_omni_spatial_score("", 0) == 0


# --- SpatialScore ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("(B)", "B"),
        ("b.", "B"),
        ("I think it is a cat", "A"),  # a standalone "a"
        ("None of them", "E"),  # no structured letter: the first a-f anywhere ("e" of "None")
        ("The answer is C", "C"),
        ("The answer: a lamp", "A"),
        ("ASSISTANT: (c)", "C"),
        ("<conclusion>(D) Yes.</conclusion>", "D"),
        ("12", "12"),  # no letter: the cleaned text comes back
    ],
)
def test_spatialscore_extract_option(text, letter):
    assert spatialscore.extract_option(text) == letter


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("no", "No"),
        ("NO", "No"),
        ("Not sure, yes", "Yes"),
        ("That is right", "Yes"),
        ("No, that's not correct", "Yes"),  # the yes words ("correct") are tried first
        ("I cannot say", "I cannot say"),  # "cannot" is not "not"
        ("<conclusion>no</conclusion>", "No"),
    ],
)
def test_spatialscore_extract_yes_no(text, answer):
    assert spatialscore.extract_yes_no(text) == answer


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("7", "7"),
        ("three chairs", "3"),
        ("There are 2.5 meters", "2.5"),
        ("I see 3 or 4", "3"),
        ("twenty-one", "20"),  # starts with "twenty"
        ("first", "1"),
        ("none", "none"),
        ("someone", "someone"),
    ],
)
def test_spatialscore_extract_number(text, number):
    assert spatialscore.extract_number(text) == number


@pytest.mark.parametrize(
    ("pred", "gt", "correct"),
    [
        ("about 3 meters", "250 cm", True),  # 300 vs 250 cm: ratio 1.2
        ("5 feet", "1 m", True),  # 152.4 vs 100 cm
        ("2 m", "1 m", False),  # ratio exactly 2 is not < 2
        ("3 m", "1 m", False),
        ("\\scalar{1.5} \\distance_unit{meters}", "150 cm", True),
        ("0 m", "0 m", True),
        ("roughly 2 inches", "1 m", False),
        ("about three meters", "3 m", False),  # no digits: no value
    ],
)
def test_spatialscore_numeric_with_unit(pred, gt, correct):
    assert spatialscore.extract_numeric_with_unit(pred, gt)["is_correct"] is correct


def test_spatialscore_score_item_by_question_type():
    vsi = {"question_type": "open-ended", "source": "VSI-Bench_8", "answer": "10"}
    assert spatialscore.score_item(vsi, "14") == ("accuracy", pytest.approx(0.3))
    assert spatialscore.score_item(vsi, "10") == ("accuracy", 1.0)
    assert spatialscore.score_item(vsi, "abc") == ("accuracy", 0.0)  # unreadable -> 0.0 -> wrong unless gold 0
    assert spatialscore.score_item({**vsi, "answer": "0"}, "zero") == ("accuracy", 1.0)
    assert spatialscore.score_item({"question_type": "open-ended", "source": "cvbench", "answer": "5"}, "five") == (
        True,
        1.0,
    )
    # a gold containing the letter "m" takes the unit path and fails to parse
    assert spatialscore.score_item({"question_type": "open-ended", "source": "x", "answer": "some"}, "some") == (
        False,
        0.0,
    )
    rwqa = {"question_type": "open-ended", "source": "RealWorldQA", "answer": "Right"}
    assert spatialscore.score_item(rwqa, "right")[0] is True
    # "Left" contains "ft": the unit path, where no number is found, so even "left" is wrong
    assert spatialscore.score_item({**rwqa, "answer": "Left"}, "left") == (False, 0.0)
    assert spatialscore.score_item({"question_type": "multi-choice", "answer": "(a)"}, "A") == (True, 1.0)
    assert spatialscore.score_item({"question_type": "judgment", "answer": "No"}, "No, that's not correct") == (
        False,
        0.0,
    )
    with pytest.raises(ValueError):  # an unreadable numeric gold raises there too
        spatialscore.score_item({"question_type": "open-ended", "source": "x", "answer": "lots"}, "3")


def test_spatialscore_mra_zero_target():
    assert spatialscore.abs_dist_norm(1.0, 0.0) == float("inf")
    assert spatialscore.mean_relative_accuracy(1.0, 0.0, 0.5, 0.95, 0.05) == 0.0


def test_spatialscore_summaries_floor_the_correct_count():
    entries = [
        {"source": "VSI-Bench_8", "category": "Counting", "score": 0.3},
        {"source": "VSI-Bench_8", "category": "Counting", "score": 0.9},
        {"source": "MMVP", "category": "Others", "score": 1.0},
    ]
    out = spatialscore.summarize(entries)
    assert out["overall"]["correct"] == 2  # int(2.2)
    assert out["overall"]["accuracy"] == pytest.approx(2.2 / 3 * 100)
    assert out["by_source"]["VSI-Bench_8"] == {
        "accuracy": pytest.approx(60.0),
        "correct": 1,
        "total": 2,
        "score_sum": pytest.approx(1.2),
    }
    assert list(out["by_category"]) == ["Counting", "Others"]


# --- VSI-Bench -------------------------------------------------------------------------------


def test_vsibench_mra_thresholds_are_ten():
    t = vsibench.mra_thresholds()
    assert len(t) == 10  # int(10.999999999999998)
    assert t[0] == 0.5 and t[-1] == 0.95


@pytest.mark.parametrize(
    ("pred", "gt", "mra"),
    [
        (10.0, 10.0, 1.0),
        (14.0, 10.0, 0.3),  # rel. error 0.4 passes .50, .55, .60
        (14.5, 10.0, 0.1),  # rel. error 0.45 fails 1 - .55 = 0.44999999999999996
        (11.0, 10.0, 0.9),  # 0.1 <= 1 - 0.8999999999999999, not <= 1 - .95
        (10.5, 10.0, 1.0),  # 0.05 <= 0.050000000000000044
        (5.0, 10.0, 0.1),
        (4.9, 10.0, 0.0),
        (30.0, 10.0, 0.0),
    ],
)
def test_vsibench_mean_relative_accuracy(pred, gt, mra):
    assert vsibench.MRA(pred, gt) == pytest.approx(mra, abs=1e-12)


@pytest.mark.parametrize(
    ("reply", "read"),
    [("B. chair", "B"), ("3.5 meters", "3.5"), ("The answer is B", "The"), ("3.", "3"), ("B)", "B)"), (" B", "")],
)
def test_vsibench_fuzzy_matching(reply, read):
    assert vsibench.fuzzy_matching(reply) == read


def test_vsibench_process_result():
    mca = {"question_type": "route_planning", "ground_truth": "B"}
    assert vsibench.process_result(mca, "b. turn left")["accuracy"] == 1.0
    assert vsibench.process_result(mca, "The answer is B")["accuracy"] == 0.0
    na = {"question_type": "object_counting", "ground_truth": "3"}
    assert vsibench.process_result(na, "3 chairs")["MRA:.5:.95:.05"] == 1.0
    assert vsibench.process_result(na, "three")["MRA:.5:.95:.05"] == 0.0  # to_float fails: worst case
    assert vsibench.process_result(na, "about 3")["MRA:.5:.95:.05"] == 0.0
    # lmms-eval reads number words and the first number anywhere
    assert vsibench.lmms_process_result(na, "three")["MRA:.5:.95:.05"] == 1.0
    assert vsibench.lmms_process_result(na, "about 3")["MRA:.5:.95:.05"] == 1.0
    with pytest.raises(ZeroDivisionError):
        vsibench.process_result({"question_type": "object_counting", "ground_truth": "0"}, "1")
    with pytest.raises(ValueError):
        vsibench.process_result({"question_type": "mystery", "ground_truth": "0"}, "1")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("three hundred and twenty-one", 321.0),
        ("one apple, room 2", 1.0),
        ("twenty one", 21.0),
        ("-2.5", -2.5),
        ("none", None),
        (None, None),
    ],
)
def test_vsibench_lmms_extract_number(text, value):
    assert vsibench.lmms_extract_number(text) == value


def _doc(question_type, metric, value):
    return {"question_type": question_type, metric: value}


def test_vsibench_aggregate_is_a_mean_of_categories():
    acc, mra = "accuracy", "MRA:.5:.95:.05"
    results = [
        _doc("object_rel_direction_easy", acc, 1.0),
        _doc("object_rel_direction_medium", acc, 0.0),
        _doc("object_rel_direction_medium", acc, 1.0),
        _doc("object_rel_direction_hard", acc, 0.0),
        _doc("object_rel_distance", acc, 1.0),
        _doc("route_planning", acc, 0.0),
        _doc("obj_appearance_order", acc, 1.0),
        _doc("object_abs_distance", mra, 0.3),
        _doc("object_counting", mra, 1.0),
        _doc("object_counting", mra, 0.0),
        _doc("object_size_estimation", mra, 0.9),
        _doc("room_size_estimation", mra, 0.1),
    ]
    out = vsibench.aggregate(results)
    rel_dir = (1.0 + 0.5 + 0.0) / 3  # levels weighted equally, not by items
    cats = [1.0, 0.0, 1.0, 0.3, 0.5, 0.9, 0.1, rel_dir]
    assert out["overall"] == pytest.approx(sum(cats) / 8 * 100)
    assert out["object_rel_direction_accuracy"] == pytest.approx(rel_dir * 100)
    assert out["object_counting_MRA:.5:.95:.05"] == pytest.approx(50.0)
    assert list(out)[:3] == ["overall", "object_counting_MRA:.5:.95:.05", "object_abs_distance_MRA:.5:.95:.05"]
    lmms = vsibench.lmms_subscores(results)
    assert lmms["overall"] == round(sum(cats) / 8, 6)


def test_vsibench_aggregate_missing_levels():
    only_easy = [_doc("object_rel_direction_easy", "accuracy", 1.0), _doc("route_planning", "accuracy", 0.0)]
    with pytest.raises(KeyError):
        vsibench.aggregate(only_easy)  # easy present, medium absent
    no_rel_dir = [_doc("route_planning", "accuracy", 1.0), _doc("object_counting", "MRA:.5:.95:.05", 0.5)]
    assert vsibench.aggregate(no_rel_dir)["overall"] == pytest.approx(75.0)
    with pytest.raises(KeyError):
        vsibench.lmms_subscores(no_rel_dir)  # lmms-eval pops unconditionally


def test_vsibench_frame_positions():
    assert vsibench.decord_uniform_indices(100, 8) == [0, 14, 28, 42, 56, 70, 84, 99]
    assert vsibench.decord_uniform_indices(100, 1) == [0]
    assert vsibench.pyav_indices(100, 7) == [0, 16, 33, 49, 66, 82, 99]
    assert vsibench.pyav_indices(100, 1) == [0, 99]  # the last frame appended
    assert vsibench.pyav_indices(5, 8) == [0, 1, 2, 3, 4]
    assert vsibench.gpt4v_indices(10, 3) == [0, 4, 9]
    assert vsibench.gpt4v_indices(100, 1) == [0, 99]
    assert vsibench.vila_indices(100, 8) == [0, 14, 28, 42, 56, 70, 84, 98]
    # segment midpoints: seg = 99 / 8 = 12.375; np.round(49.5) = 50 (half to even)
    assert vsibench.internvl2_indices(30.0, 99, num_segments=8) == [6, 18, 31, 43, 56, 68, 80, 93]
    assert vsibench.lmms_frame_indices(10, 32) == list(range(10))
    assert len(vsibench.lmms_frame_indices(3000)) == 32
    assert vsibench.video_relpath({"dataset": "scannet", "scene_name": "scene0011_00"}) == "scannet/scene0011_00.mp4"


def test_vsibench_debiased_split():
    records = [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 10}]
    debiased, pruned = vsibench.split_debiased(records, "2\n10\n")
    assert [r["id"] for r in debiased] == [1, 3]
    assert [r["id"] for r in pruned] == [2, 10]
