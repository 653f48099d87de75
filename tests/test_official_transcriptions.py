"""The transcriptions in tests/official/ pinned on hand-picked replies from the issues (42, 43) and
the authors' code, and run over random replies of every shape (tests/official/replies.py).

Each expected value below is what the authors' function gives (traced by hand through their code,
cited in each module's docstring), not what a reader ought to give. Nothing here imports
spatialprobe."""

from __future__ import annotations

import random
import string
from collections import Counter

import numpy as np
import pytest
from official import blink, comfort, mmsi, site, spatialeval, spatialmqa, viewspatial, vlmeval, vlmeval_spatial, whatsup
from official import lmms_first_letter as lmms
from official.replies import SHAPES, every_shape, replies, reply

OPTIONS = ["left", "right", "above", "below"]
LETTERS = list("ABCD")


def choices():
    return dict(zip(LETTERS, OPTIONS, strict=True))


# -- SITE -------------------------------------------------------------------------------------
@pytest.mark.parametrize("reply, letter", [
    ("I think it is B", "B"), ("B or C", "C"), ("A cat is on the left", "A"), ("(B) or (C)", "B"),
    ("B. right", "B"), ("The answer is B", "B"), ("(C)", "C"), ("B:", "B"), ("Answer: D", "D"),
    ("the USA.", "A"), ("b", None), ("right", None), ("", None), ("B\n\nC", None)])
def test_site_parser(reply, letter):
    assert site.parse_multi_choice_response(reply.strip(), LETTERS, site.NoDraw()) == letter


def test_site_random_fallback_is_seedable_and_draws_from_the_items_letters():
    draws = [site.parse_multi_choice_response("right", LETTERS, random.Random(seed)) for seed in range(40)]
    assert set(draws) == set(LETTERS)
    assert draws == [site.parse_multi_choice_response("right", LETTERS, random.Random(s)) for s in range(40)]
    two = site.parse_multi_choice_response("no idea", ["A", "B"], random.Random(1))
    assert two in {"A", "B"}


def test_site_accuracy_and_chance_adjusted_accuracy():
    docs = [{"options": ["x", "y"], "answer": "A", "category": "counting & existence", "dataset": "d1"},
            {"options": ["x", "y", "z", "w"], "answer": "B", "category": "counting & existence", "dataset": "d2"},
            {"options": ["x", "y", "z", "w"], "answer": "C", "category": "other", "dataset": "d2"}]
    out = [site.spatial_process_results(d, [r]) for d, r in zip(docs, ["A", "The answer is B", "D"], strict=True)]
    assert site.spatial_aggregate_results([o["accuracy"] for o in out]) == pytest.approx(66.66667)
    # Σ(right − 1/k) / Σ(1 − 1/k) = (0.5 + 0.75 − 0.25) / (0.5 + 0.75 + 0.75)
    assert site.spatial_aggregate_results([o["chance_adjusted_acc"] for o in out]) == pytest.approx(50.0)
    assert site.POST_PROMPT == "Give me the answer letter directly. The best answer is:"


# -- MMSI-Bench -------------------------------------------------------------------------------
@pytest.mark.parametrize("reply, code, readme, lmms_letter", [
    ("The answer is ``A``.", "A", "A", "A"),
    ("{B}", "B", "B", "B"),
    ("Option A: no. Answer: {B}", "A", "B", "B"),
    ("`C`", "C", "C", "C"),
    ("a", None, None, "A"),
    ("The answer is b", None, None, "B"),
    ("A bike is parked on the left", None, None, None),
    ("E", None, None, "E"),
    ("B. right", "B", "B", "B"),
    ("", None, None, None)])
def test_mmsi_three_published_extractors(reply, code, readme, lmms_letter):
    assert mmsi.extract_code(reply) == code
    assert mmsi.letter_readme(reply) == readme
    assert mmsi.letter_lmms(reply) == lmms_letter
    assert mmsi.extract_readme(reply, "B") == (None if readme is None else float(readme == "B"))
    assert mmsi.extract_lmms(reply, "B") == (None if lmms_letter is None else float(lmms_letter == "B"))
    assert mmsi.evaluate_code_row(reply, "B") == float(code == "B")


def test_mmsi_prompt():
    question = "Which is closer?\nOptions: A: the cup, B: the chair"
    assert mmsi.build_prompt_text(question) == (
        question + "\nAnswer with the option's letter from the given choices directly. "
        "Enclose the option's letter within ``.")


# -- lmms-eval first letter: CV-Bench, EmbSpatial ------------------------------------------------
@pytest.mark.parametrize("reply, letter", [
    ("The answer is B", "T"), ("answer: B", "A"), ("b", "B"), ("**B**", ""), ("", ""), ("(C) above", "C"),
    ("  B.", "B"), ("A cat is on the left", "A"), ("Definitely C", "D"), ("Because it is left", "B"),
    ("\nB", "B")])
def test_lmms_first_letter(reply, letter):
    assert lmms._extract_answer_letter(reply) == letter


def test_cv_bench_and_embspatial_scoring():
    rows = [("ADE20K", "(A)", "A"), ("ADE20K", "(B)", "The answer is B"), ("COCO", "(B)", "B"),
            ("Omni3D", "(A)", "(A)"), ("Omni3D", "(B)", "C")]
    results = [lmms.cv_bench_process_results({"answer": g, "idx": n, "type": "2D", "task": "t", "source": s},
                                             [r])["cv_bench_acc"] for n, (s, g, r) in enumerate(rows)]
    assert [r["is_correct"] for r in results] == [True, False, True, True, False]
    assert lmms.cv_bench_default_aggregate_results(results) == pytest.approx(0.5 * ((0.5 + 1.0) / 2 + 0.5))
    assert lmms.cv_bench_aggregate_results(results) == pytest.approx(0.6)
    docs = [{"answer": 1, "question_id": 1, "relation": "left", "data_source": "mp3d"},
            {"answer": 0, "question_id": 2, "relation": "left", "data_source": "scannet"}]
    emb = [lmms.embspatial_process_results(d, [r])["embspatial_acc"]
           for d, r in zip(docs, ["B", "The answer is A"], strict=True)]
    assert [e["is_correct"] for e in emb] == [True, False]  # "The answer is A" reads "T"
    assert lmms.embspatial_aggregate_results(emb) == 0.5 and lmms.aggregate_by_source(emb, "mp3d") == 1.0


# -- VLMEvalKit can_infer, ImageMCQDataset, 3DSRBench --------------------------------------------
@pytest.mark.parametrize("reply, expected", [
    ("(B)", "B"), ("B. right", "B"), ("The answer is B", "B"), ("right", "B"),  # the four
    ("B", "B"), ("b", False), ("the answer is b", "B"), ("B or C", False), ("**B**", "B"), ("{B}", "B"),
    ("A cat is here", "A"), ("A cat is sitting there", False), ("Cannot determine the answer", "Z"), ("Z", "Z"),
    ("", False),
    ("left or right", False), ("upright", "B"), ("Failed to obtain answer via API", False),
    ("B is correct because the object is clearly placed there", False)])
def test_can_infer(reply, expected):
    assert vlmeval.can_infer(reply, choices(), verbose=False) == expected


def test_can_infer_quirks():
    long = "The correct answer is **B**. Here's why: it is obvious from the picture here"
    assert vlmeval.can_infer(long, choices(), verbose=False) == "B"  # PR #1552's regex
    assert vlmeval.can_infer(long, choices(), verbose=False, verbose_answer_regex=False) is False
    # VERBOSE set (to anything) and "A" among more than three words: "A might be a quantifier"
    assert vlmeval.can_infer_option("A cat is here", choices(), verbose="0") is False
    assert vlmeval.can_infer_option("A cat is here", choices(), verbose=False) == "A"
    mutated = {"A": "Left", "B": "Right"}
    assert vlmeval.can_infer_text("left", mutated) == "A" and mutated == {"A": "left", "B": "right"}
    assert vlmeval.can_infer_text("it is definitely on the left side " * 3, choices()) is False  # too long


def test_vlmeval_exact_matching_and_judge_fallbacks():
    item = dict(choices(), question="Where is the cup?", prediction="B or C", GT="B")
    assert vlmeval.extract_answer_from_item(None, item)["opt"] == "Z"  # no judge: 'Z', wrong
    asked = []
    assert vlmeval.extract_answer_from_item(lambda p: asked.append(p) or "B", item)["opt"] == "B"
    assert "Answer: B or C\nYour output: " in asked[0] and "B. right\n" in asked[0]
    draw = vlmeval.extract_answer_from_item(lambda p: "no idea", item, rng=random.Random(3))["opt"]
    assert draw in {"A", "B", "C", "D", "Z"}
    rows = [dict(choices(), question="q", prediction=p, answer="B")
            for p in ["(B)", "B. right", "The answer is B", "right", "B or C"]]
    assert vlmeval.mcq_vanilla_hits(rows) == [1, 1, 1, 1, 0]


def test_3dsrbench_groupings():
    rows = [{"qid": "abcdefgh", "hit": 1}, {"qid": "abcdefgh-1", "hit": 0}, {"qid": "abcdefgh-flip", "hit": 1},
            {"qid": "ijklmnop", "hit": 1}, {"qid": "ijklmnop-1", "hit": 1}]
    got = vlmeval.threedsr_settings(rows)
    assert got["vanilla"]["Overall"] == pytest.approx(0.8)
    # flip: abcdefgh (its own hit × its -flip's), abcdefgh-1, ijklmnop, ijklmnop-1
    assert got["flip_eval"]["Overall"] == pytest.approx(0.75)
    # circular: qid[:8] (qid[:13] for -flip rows): abcdefgh 0 (its -1 wrong), the -flip row alone 1, ijklmnop 1
    assert got["circ_eval"]["Overall"] == pytest.approx(2 / 3)
    assert got["flip_circ_eval"]["Overall"] == pytest.approx(0.5)
    with pytest.raises(KeyError):
        vlmeval.threedsr_settings([{"qid": "abcdefgh-flip", "hit": 1}])


# -- VLMEvalKit's spatial suite: can_match_option -------------------------------------------------
@pytest.mark.parametrize("reply, expected", [
    ("B or C", False), ("(B)", "B"), ("The answer is ``A``.", "A"), ("{B}", "B"), ("b", "B"),
    ("A cat is on the left", "A"), ("I think B is right, not C.", False), ("", False),
    ("<think>A or B?</think>\nB", "B"), ("right", False)])
def test_can_match_option(reply, expected):
    assert vlmeval_spatial.can_match_option(reply) == expected


def test_compute_mcq_hit_compares_lower_cased_strings():
    assert vlmeval_spatial.compute_mcq_hit("The answer is B", "B") == ("B", 1.0)
    assert vlmeval_spatial.compute_mcq_hit("B or C", "B") == (False, 0.0)


# -- BLINK ------------------------------------------------------------------------------------
ITEM = {"question": "Which point is closer?", "choices": ["left", "right"]}


@pytest.mark.parametrize("reply, prediction", [
    ("B", "(B)"), ("(B)", "(B)"), ("The answer is (B)", "(B)"), ("(A) no\n\nSo (B)", "(B)"),
    ("B.", blink.JUDGE_FAILED), ("The answer is (B).", blink.JUDGE_FAILED), ("(A) or (B)", blink.JUDGE_FAILED),
    ("B\n", blink.JUDGE_FAILED), ("right", blink.JUDGE_FAILED), ("", blink.JUDGE_FAILED)])
def test_blink_analyze_answer(reply, prediction):
    assert blink.read(reply, ITEM) == prediction


def test_blink_judge_reply_is_stored_raw_and_scored_by_equality():
    assert blink.read("right", ITEM, judge=lambda p: "(B)") == "(B)"
    assert blink.read("right", ITEM, judge=lambda p: "(B) Point B") == "(B) Point B"  # != "(B)": wrong
    assert blink.read(None, ITEM) is None  # their except: pass
    answers = {"val_Spatial_Relation_1": "(A)", "val_Spatial_Relation_2": "(B)", "val_Relative_Depth_1": "(A)"}
    predictions = {"val_Spatial_Relation_1": "(A)", "val_Spatial_Relation_2": "(B) Point B",
                   "val_Relative_Depth_1": "(A)"}
    got = blink.eval_prediction(answers, predictions, ["Spatial_Relation", "Relative_Depth"])
    assert got == {"Spatial_Relation": 0.5, "Relative_Depth": 1.0, "Total": 0.75}


# -- SpatialEval ------------------------------------------------------------------------------
def test_spatialeval_quirks():
    assert spatialeval.official_correct("None of the paths.", "mazenav.1.2", "No") == 1  # "none"/"no"
    assert spatialeval.official_correct("gibberish", "mazenav.1.2", "No") == 1  # str(None) holds "no"
    assert spatialeval.official_correct("There are 90 objects.", "spatialmap.1.2", "0") == 1  # "90" holds "0"
    assert spatialeval.official_correct("B. 3", "spatialmap.1.2", "3") == 1
    assert spatialeval.official_correct("anything", "spatialmap.1.3", "1") is None  # ValueError: skipped
    assert spatialeval.accuracy([1, None, 0, 1]) == 0.5  # ... but counted in the denominator
    assert spatialeval.extract_answer_from_text_spatialgrid("two cats and 5 dogs", 0) == 2
    with pytest.raises(AttributeError):  # their None model name on a spatialmap question-1 fallback
        spatialeval.extract_answer_from_text_spatialmap("nothing here", 1, None)


# -- SpatialMQA -------------------------------------------------------------------------------
def test_spatialmqa_verdicts():
    assert spatialmqa.experiment_result("B", "on/above") == (1, "b")  # "b" is in "above"
    assert spatialmqa.experiment_result("It is left of the car.", "left of")[0] == 1  # answer in output
    assert spatialmqa.experiment_result("", "below") == (0, "--")
    assert spatialmqa.zero_shot_result("", "below") == (1, "")  # "" in anything: right
    assert spatialmqa.zero_shot_result("It is left of the car.", "left of")[0] == 0  # one way only
    assert spatialmqa.strict_result("Left of.", "left of") == 1 and spatialmqa.strict_result("B", "on/above") == 0


def test_calculate_xyz_as_it_runs_ignores_its_on_above_clause():
    records = [{"id": 1, "result": 0, "output": "in front of", "answer": "on/above"},
               {"id": 2, "result": 1, "output": "on/above", "answer": "on/above"},
               {"id": 600, "result": 1, "output": "left of", "answer": "left of"},
               {"id": 700, "result": 0, "output": "behind", "answer": "in front of"}]
    assert spatialmqa.xyz_as_run(records) == {"x": 1.0, "y": 0.5, "z": 0.0, "overall": 0.5}
    written = spatialmqa.xyz_with_clause_written_back(records)  # "on" in "in front of": right
    assert written == {"x": 1.0, "y": 1.0, "z": 0.0, "overall": 0.75}
    assert records[0]["result"] == 0  # the caller's records are not edited


def test_calculate_prf1():
    records = [{"result": 1, "output": "x", "answer": a} for a in spatialmqa.LABELS]
    records.append({"result": 0, "output": "left of", "answer": "right of"})
    got = spatialmqa.prf1(records)
    assert got["accuracy"] == pytest.approx(6 / 7)
    assert got["precision"] == pytest.approx((5 + 0.5) / 6) and got["recall"] == pytest.approx((5 + 0.5) / 6)


# -- What'sUp ---------------------------------------------------------------------------------
def _controlled(n_pairs):
    words = {"on": "on", "under": "under", "left_of": "to the left of", "right_of": "to the right of"}
    rows = []
    for k in range(n_pairs):
        for slot in words:
            others = [s for s in words if s != slot]
            rows.append({"image_path": f"data/controlled_images/mug{k}_{slot}_plate{k}.jpeg",
                         "caption_options": [f"A mug {words[s]} a plate" for s in (slot, *others)]})
    return rows


def test_whatsup_ties_count_right_and_pairs_and_sets():
    rows = _controlled(2)
    scores = np.zeros((8, 1, 4))  # all tied: argmax is caption 0, right
    assert whatsup.evaluate_scores(rows, scores, "A")[0] == (100.0, 100.0, 100.0)
    scores[0, 0, 1] = 1  # mug0 "on" wrong: its on/under pair and its set fail
    individual, pair, set_ = whatsup.evaluate_scores(rows, scores, "A")[0]
    assert (individual, pair, set_) == (87.5, 75.0, 50.0)
    rows[0]["caption_options"][1] = "A mug near a plate"  # no preposition in the predicted caption
    with pytest.raises(IndexError):
        whatsup.evaluate_scores(rows, scores, "A")


# -- COMFORT ----------------------------------------------------------------------------------
def test_comfort_drops_the_37th_point():
    angles = [10.0 * k for k in range(37)]
    # right at every angle but the 37th (360°, a repeat of 0°: cos > 0, gold yes; P(yes) 0.2 says no)
    p = [0.9 if np.cos(a / 180 * np.pi) > 1e-10 else 0.1 for a in angles]
    p[36] = 0.2
    data = [(a, {"Yes": v}) for a, v in zip(angles, p, strict=True)]
    config = {"relation": "totheleft"}
    assert comfort.accuracy_metric(data, config, "camera", mode="acc", normalize=False) == 1.0  # 36/36, not 36/37
    with pytest.raises(AssertionError):
        comfort.accuracy_metric(data[:36], config, "camera", mode="acc", normalize=False)
    # the error modes divide the 36 squared errors by 37
    flat = [(a, {"Yes": 0.5}) for a in angles]
    expected = np.sqrt(sum(((np.cos(a / 180 * np.pi) + 1) / 2 - 0.0) ** 2 for a in angles[:-1]) / 37)
    got = comfort.accuracy_metric(flat, config, "camera", mode="normalize")  # normalised: all 0
    assert got == pytest.approx(expected)


# -- ViewSpatial-Bench ------------------------------------------------------------------------
@pytest.mark.parametrize("reply, letter", [
    ("a cat on the left", "A"), ("The answer is B", "B"), ("It is a B", "A"), ("d)", "D"), ("B\n", None),
    ("Reasoning first.\nC. back", "C"), ("", None), ("E", None)])
def test_viewspatial_extract_option(reply, letter):
    assert viewspatial.read(reply) == letter


def test_viewspatial_verdict_and_question():
    assert viewspatial.is_correct("a cat", "A. right") and not viewspatial.is_correct("B\n", "B. left")
    item = {"question": "Where is the cup?", "choices": "A. left\nB. right"}
    assert viewspatial.question_text(item) == "Where is the cup?A. left\nB. right\nReply only to the corresponding " \
                                              "option.\nAnswer:"


# -- random replies ---------------------------------------------------------------------------
def strict(reply, options):
    """A plain strict reader (not any author's): the stripped reply equal to a letter or, ignoring
    case, to an option's text."""
    text = reply.strip()
    letters = list(string.ascii_uppercase[: len(options)])
    if text in letters:
        return text
    for letter, option in zip(letters, options, strict=True):
        if text.lower() == option.lower():
            return letter
    return None


READERS = {  # name -> (reply, options) -> a letter or None (what the authors' code compares)
    "site": lambda r, o: site.parse_multi_choice_response(r.strip(), LETTERS[: len(o)], site.NoDraw()),
    "mmsi_code": lambda r, o: mmsi.extract_code(r),
    "mmsi_readme": lambda r, o: mmsi.letter_readme(r),
    "mmsi_lmms": lambda r, o: mmsi.letter_lmms(r),
    "lmms_first_letter": lambda r, o: lmms._extract_answer_letter(r) or None,
    "vlmeval_can_infer": lambda r, o: vlmeval.can_infer(r, dict(zip(LETTERS, o, strict=False)), verbose=False) or None,
    "vlmeval_can_match_option": lambda r, o: vlmeval_spatial.can_match_option(r) or None,
    "blink": lambda r, o: (lambda p: p[1] if p in blink.CHOICES else None)(
        blink.read(r, {"question": "q", "choices": o})),
    "viewspatial": lambda r, o: viewspatial.read(r),
}


def test_every_shape_is_generated_and_the_generator_is_seeded():
    batch = replies(OPTIONS, "B", 3000, seed=7)
    assert batch == replies(OPTIONS, "B", 3000, seed=7) and batch != replies(OPTIONS, "B", 3000, seed=8)
    assert set(Counter(r.shape for r in batch)) == set(SHAPES)
    assert [r.shape for r in every_shape(OPTIONS, "B")] == list(SHAPES)
    assert {r.meant for r in batch if r.shape in ("empty", "whitespace", "refusal", "two_letters_or")} == {None}


@pytest.mark.parametrize("name", sorted(READERS))
def test_readers_on_random_replies(name):
    """Every reader reads one capital letter or nothing on 2,000 random replies; all of them read
    a bare capital letter as itself; the count of replies on which each differs from the strict
    reader is reported per shape (pytest -s)."""
    read = READERS[name]
    differ, shapes = Counter(), Counter()
    for gold, options in (("B", OPTIONS), ("A", ["yes", "no"])):
        for drawn in replies(options, gold, 1000, seed=name):
            shapes[drawn.shape] += 1
            got = read(drawn.text, options)
            # a capital letter, not always an option's: lmms-eval's "T", VLMEvalKit's 'Z', MMSI's "E"
            assert got is None or (len(got) == 1 and got in string.ascii_uppercase), drawn
            if drawn.shape == "bare":
                assert got == drawn.text, drawn
            if got != strict(drawn.text, options):
                differ[drawn.shape] += 1
    table = ", ".join(f"{shape} {differ[shape]}/{shapes[shape]}" for shape in SHAPES if differ[shape])
    print(f"\n{name}: differs from strict on {sum(differ.values())} of 2000 ({table})")


def reading_table(n=200):
    """Per shape (rows) and reader (columns, the strict reader first), the share of ``n`` random
    replies to a four-option item (gold B) read as the letter their writer meant (nothing, where
    the writer meant no single letter)."""
    readers = {"strict": strict, **READERS}
    table = {}
    for shape in SHAPES:
        rng = random.Random(shape)
        rows = [reply(rng, OPTIONS, "B", shape) for _ in range(n)]
        table[shape] = {name: sum(read(r.text, OPTIONS) == r.meant for r in rows) / len(rows)
                        for name, read in readers.items()}
    return table


def test_reading_table_bare_letters_are_read_by_all_and_empty_replies_by_none():
    table = reading_table(60)
    assert all(v == 1.0 for v in table["bare"].values())
    assert all(v == 1.0 for name, v in table["empty"].items() if name != "site")  # SITE draws at random
    readers = list(table["bare"])
    print("\n| shape | " + " | ".join(readers) + " |\n|---|" + "---|" * len(readers))
    for shape, row in table.items():
        print(f"| {shape} | " + " | ".join(f"{row[r]:.0%}" for r in readers) + " |")
