"""Benchmark-level scores of a judge run (T2I-CompBench, GenEval) and the release's conventions
(zero-area / zero-height boxes, the depth region), on hand-chosen boxes.

Each expected number is computed in the test from the peer's own formula, written out here.
"""

import json
import random

import numpy as np
import pytest
from judge_helpers import write_run
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.detectors.base import Detection
from spatialprobe.detectors.rules import geneval_relations
from spatialprobe.judging.box import JudgeConfig, judge_image
from spatialprobe.judging.box_scores import benchmark_metrics
from spatialprobe.judging.rulebook.geneval import geneval_position_correct
from spatialprobe.judging.rulebook.t2i_compbench import t2i_compbench_image_score
from spatialprobe.registry import Spec

runner = CliRunner()
COLOUR = ["--detector", "colour"]
POSREL = ["above", "below", "inside", "beside"]


def invoke(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def row(box_a=None, score_a=None, box_b=None, score_b=None, gold="above"):
    return {"found_a": box_a is not None, "found_b": box_b is not None, "box_a": box_a,
            "box_b": box_b, "score_a": score_a, "score_b": score_b, "gold": gold}


def preds(out):
    return [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]


# ---- T2I-CompBench ------------------------------------------------------------------------------

def peer_t2i_score(conf_1, conf_2, position):
    """T2I-CompBench UniDet_eval/2D_spatial_eval.py, main(): the image score from the two
    objects' confidences (None: not detected) and determine_position's value."""
    if conf_1 is not None and conf_2 is not None:
        score = 0.25 * conf_1 + 0.25 * conf_2
        score += position / 2
    elif conf_1 is not None:
        score = 0.25 * conf_1
    elif conf_2 is not None:
        score = 0.25 * conf_2
    else:
        score = 0
    if score < 0.5:
        score = 0
    return score


T2I_CASES = [
    # A straight above B, no overlap: determine_position('on the top of') = 1
    (row((40, 0, 60, 20), 0.9, (40, 50, 60, 70), 0.8, "above"), peer_t2i_score(0.9, 0.8, 1.0)),
    # 'next to' with both centre offsets 300 >= 150: 150 / max(300, 300) = 0.5; total exactly 0.5 stays
    (row((0, 0, 10, 10), 0.6, (300, 300, 310, 310), 0.4, "beside"), peer_t2i_score(0.6, 0.4, 150 / 300)),
    # A below B, overlapping: IoU = 200 / (400 + 400 - 200) = 1/3 >= 0.1 -> 0.1 / (1/3); total 0.4 -> 0
    (row((0, 10, 20, 30), 0.5, (0, 0, 20, 20), 0.5, "below"), peer_t2i_score(0.5, 0.5, 0.1 / (1 / 3))),
    # only A detected: 0.25 x 0.9 -> 0
    (row((0, 0, 10, 10), 0.9, gold="above"), peer_t2i_score(0.9, None, 0.0)),
    # 'inside' has no T2I-CompBench relation (its else: 0); two sure detections still give 0.5
    (row((28, 28, 36, 36), 1.0, (22, 22, 42, 42), 1.0, "inside"), peer_t2i_score(1.0, 1.0, 0.0)),
]


@pytest.mark.parametrize("image, expected", T2I_CASES)
def test_t2i_compbench_image_score_is_the_peer_formula(image, expected):
    """T2I-CompBench UniDet_eval/2D_spatial_eval.py, main() and determine_position()."""
    assert t2i_compbench_image_score(image, image["gold"]) == pytest.approx(expected)


def test_t2i_compbench_benchmark_mean_over_images():
    """T2I-CompBench UniDet_eval/2D_spatial_eval.py, main(): avg_score / len(result)."""
    rows = [dict(image) for image, _ in T2I_CASES]
    expected = [0.925, 0.5, 0.0, 0.0, 0.5]
    assert [e for _, e in T2I_CASES] == pytest.approx(expected)
    metrics = benchmark_metrics("t2i-compbench", rows, {})
    assert metrics["t2i_compbench_score"].to_dict() == {"mean": pytest.approx(sum(expected) / 5),
                                                        "std": None, "n": 5}
    assert [r["t2i_compbench_score"] for r in rows] == pytest.approx(expected)
    # the rule's thresholds reach the position score: IoU 1/3 < 0.5 now counts as no overlap
    assert t2i_compbench_image_score(rows[2], "below", iou_threshold=0.5) == peer_t2i_score(0.5, 0.5, 1.0)


# ---- GenEval --------------------------------------------------------------------------------------

def peer_top_box(detections, threshold=0.3):
    """GenEval evaluation/evaluate_images.py, evaluate_image(): np.argsort of the class's scores,
    reversed, kept above the threshold; evaluate() reads the first (count 1)."""
    scores = np.array([d.score for d in detections])
    ordering = np.argsort(scores)[::-1]
    ordering = ordering[scores[ordering] > threshold]
    return detections[ordering[0]] if len(ordering) else None


def peer_geneval_correct(dets_a, dets_b, expected_rel, threshold=0.3):
    """GenEval evaluate(): both classes found, and expected_rel in relative_position(A, B)."""
    top_a, top_b = peer_top_box(dets_a, threshold), peer_top_box(dets_b, threshold)
    if top_a is None or top_b is None:
        return False
    return expected_rel in geneval_relations(top_a.box, top_b.box, 0.1)


def geneval_row(dets_a, dets_b, gold):
    cfg = JudgeConfig(task="posrel", detector=Spec("colour", {}), rule="geneval")
    judged = judge_image(cfg, [*dets_a, *dets_b], None, {"obj_a": "man", "obj_b": "box"})
    return {**judged, "gold": gold}


B_BOX = Detection("box", (40, 40, 60, 60), 0.9)
ABOVE = (40, 0, 60, 20)
BELOW = (40, 80, 60, 100)


def test_geneval_keeps_the_last_of_tied_top_boxes():
    """GenEval evaluation/evaluate_images.py, evaluate_image(): np.argsort(...)[::-1] puts the
    later of two tied scores first."""
    dets_a = [Detection("man", ABOVE, 0.7), Detection("man", BELOW, 0.7)]
    image = geneval_row(dets_a, [B_BOX], "above")
    assert image["box_a"] == list(BELOW) and image["pred"] == "below"
    assert geneval_position_correct(image, "above") is peer_geneval_correct(dets_a, [B_BOX], "above") is False
    assert geneval_position_correct(image, "below") is peer_geneval_correct(dets_a, [B_BOX], "below") is True


def test_geneval_confidence_cut_is_strict_and_an_argument():
    """GenEval evaluate_image(): bbox[index][ordering, 4] > confidence_threshold (0.3 by default)."""
    dets_a = [Detection("man", ABOVE, 0.3)]
    image = geneval_row(dets_a, [B_BOX], "above")
    assert image["pred"] == "above"  # our classifier reads the box; GenEval's cut drops it
    assert geneval_position_correct(image, "above") is peer_geneval_correct(dets_a, [B_BOX], "above") is False
    assert geneval_position_correct(image, "above", confidence_threshold=0.25) is True
    assert peer_geneval_correct(dets_a, [B_BOX], "above", threshold=0.25) is True


def test_geneval_position_threshold_and_beside():
    """GenEval relative_position(): offsets shrunk by 0.1 x (size A + size B); 'beside' (no GenEval
    prompt) holds as left of or right of."""
    dets_a = [Detection("man", (0, 36, 20, 56), 0.8)]  # offset (-40, -4): the margin removes dy
    image = geneval_row(dets_a, [B_BOX], "above")
    assert geneval_relations(dets_a[0].box, B_BOX.box) == {"left of"}
    assert geneval_position_correct(image, "above") is peer_geneval_correct(dets_a, [B_BOX], "above") is False
    assert geneval_position_correct(image, "beside") is peer_geneval_correct(dets_a, [B_BOX], "left of") is True
    assert geneval_position_correct(geneval_row(dets_a, [], "beside"), "beside") is False  # no B
    rows = [geneval_row([Detection("man", ABOVE, 0.7), Detection("man", BELOW, 0.7)], [B_BOX], "above"),
            geneval_row(dets_a, [B_BOX], "beside"), geneval_row([Detection("man", ABOVE, 0.31)], [B_BOX], "above")]
    metrics = benchmark_metrics("geneval", rows, {})
    assert metrics["geneval_position_accuracy"].to_dict() == {"mean": pytest.approx(200 / 3), "std": None, "n": 3}
    assert [r["geneval_correct"] for r in rows] == [False, True, True]
    assert benchmark_metrics("vdg", rows, {}) == {}


# ---- through the command ---------------------------------------------------------------------------

# (gold, drawn answer, recognized) on 64x64 colour scenes: A and B fully visible score 1.0; in the
# inside scene A covers 64 of B's 400 pixels, so B scores 336/400 = 0.84; unrecognized: B not drawn.
PLAN = [("above", "above", True), ("inside", "inside", True), ("beside", "beside", True),
        ("above", "below", True), ("below", "below", False)]


def test_judge_posrel_t2i_compbench_reports_its_score(tmp_path):
    write_run(tmp_path / "images", "posrel", PLAN)
    out = tmp_path / "t2i"
    invoke("judge", "posrel", tmp_path / "images", *COLOUR, "--rule", "t2i-compbench", "--out", out,
           "--no-gallery")
    summary = json.loads((out / "summary.json").read_text())
    # above: position 1; inside: 0 (no such relation) -> 0.46 -> 0; beside: offset 24 < 150 -> 1;
    # A drawn below for gold above: position 0 -> 0.5; unrecognized: 0.25 -> 0
    expected = [peer_t2i_score(1, 1, 1), peer_t2i_score(1, 0.84, 0), peer_t2i_score(1, 1, 1),
                peer_t2i_score(1, 1, 0), peer_t2i_score(1, None, 0)]
    assert expected == pytest.approx([1.0, 0.0, 1.0, 0.5, 0.0])
    # the interval is cluster-robust over the posrel objects (one per scenario here), the score a mean
    # over images: a t interval on few objects, which a mean (unbounded statistic) is not clipped to 0-1
    assert summary["metrics"]["t2i_compbench_score"] == {"mean": pytest.approx(0.5), "std": None, "n": 5,
                                                         "ci": [-0.245241, 1.245241]}
    assert summary["intervals"]["also"][-1] == {"labels": [], "pred": "t2i_compbench_score",
                                                "statistics": {"t2i_compbench_score": "mean"}}
    assert [p["t2i_compbench_score"] for p in preds(out)] == pytest.approx(expected)
    assert "T2I-CompBench 2-D spatial score (mean over 5 images, 0-1; its UniDet_eval/2D_spatial_eval.py): " \
           "0.5000 [-0.2452, 1.2452]" in (out / "table.md").read_text()
    assert "geneval_position_accuracy" not in summary["metrics"]
    assert summary["details"]["benchmark_args"] == {"iou_threshold": 0.1, "distance_threshold": 150.0}


def test_judge_posrel_geneval_reports_position_accuracy_with_its_cut(tmp_path):
    write_run(tmp_path / "images", "posrel", PLAN)
    out = tmp_path / "geneval"
    invoke("judge", "posrel", tmp_path / "images", *COLOUR, "--rule", "geneval", "--out", out, "--no-gallery")
    summary = json.loads((out / "summary.json").read_text())
    # above: correct; inside: shared centre, no relation; beside: left of; drawn below: wrong; no B
    assert [p["geneval_correct"] for p in preds(out)] == [True, False, True, False, False]
    assert summary["metrics"]["geneval_position_accuracy"] == {"mean": 40.0, "std": None, "n": 5,
                                                               "ci": [9.336543, 81.188238]}  # Wilson
    assert summary["details"]["benchmark_args"] == {"confidence_threshold": 0.3, "margin": 0.1}
    assert "GenEval position accuracy (correct images of 5; its evaluation/evaluate_images.py): 40.0% " \
        "[9.3, 81.2]" in (out / "table.md").read_text()
    # the cut is a rule argument (a setting): every box scores at most 1.0, none above 1.0
    strict = tmp_path / "strict"
    invoke("judge", "posrel", tmp_path / "images", *COLOUR, "--rule", "geneval", "--rule-arg",
           "confidence_threshold=1.0", "--out", strict, "--no-gallery")
    summary = json.loads((strict / "summary.json").read_text())
    assert summary["metrics"]["geneval_position_accuracy"]["mean"] == 0.0
    assert summary["accuracy"] == json.loads((out / "summary.json").read_text())["accuracy"]
    assert json.loads((strict / "config.json").read_text())["settings"]["rule_args"] == {"confidence_threshold": 1.0}


@pytest.mark.parametrize("options, message", [
    (["--rule", "t2i-compbench", "--rule-arg", "confidence_threshold=0.5"],
     "--rule-arg confidence_threshold applies to --rule geneval only"),
    (["--rule", "geneval", "--rule-arg", "confidence_threshold=2"],
     "--rule-arg confidence_threshold must be a number in [0, 1], not 2."),
    (["--depth-region", "covered"], "--depth-region applies to judge size and height only"),
])
def test_benchmark_and_depth_options_are_refused_where_they_do_not_apply(tmp_path, options, message):
    write_run(tmp_path / "images", "posrel", [("above", "above", True)])
    result = runner.invoke(app, ["judge", "posrel", str(tmp_path / "images"), *COLOUR, *options,
                                 "--out", str(tmp_path / "j")])
    assert result.exit_code == 2 and not (tmp_path / "j").exists()
    assert result.stderr.startswith("Error: ") and message in result.stderr


# ---- the release's conventions: boxes without area or height, the depth region --------------------

@pytest.mark.parametrize("task, flat_box, what", [("height", (20, 30, 40, 30), "height"),
                                                  ("size", (20, 30, 20, 50), "area")])
def test_box_without_height_or_area_is_not_recognized(task, flat_box, what):
    """spatial-commonsense code/size/image_probing_box.py: judged only ``if size_a>0 and size_b>0``
    (height: ``height_a>0 and height_b>0``)."""
    cfg = JudgeConfig(task=task, detector=Spec("colour", {}), depth=Spec("colour", {}))
    dets = [Detection("man", flat_box, 0.9), Detection("box", (0, 0, 10, 10), 0.8)]
    judged = judge_image(cfg, dets, np.ones((64, 64)), {"obj_a": "man", "obj_b": "box"})
    assert judged["found_a"] and judged["found_b"] and judged["pred"] is None
    assert judged["explanation"] == f"not recognized: box of zero {what} for man"


class FlatDetector:
    """Finds both objects; object A's box has zero height in the images listed in ``flat``."""

    name = "flat"

    def __init__(self, flat):
        self.flat, self.calls = flat, 0

    def describe(self):
        return {"name": self.name, "model": "hand-made boxes (untrained)"}

    def detect(self, images, queries):
        out = []
        for a, b in queries:
            top = 20 if self.calls in self.flat else 4
            out.append([Detection(a, (4, top, 10, 20), 0.9), Detection(b, (30, 4, 36, 34), 0.9)])
            self.calls += 1
        return out


def test_zero_height_image_gets_the_seeded_guess_on_the_whole_set(tmp_path):
    from spatialprobe.detectors.colour import ColourDepth
    from spatialprobe.judging.box import JudgeRun, JudgeRunSettings
    from spatialprobe.runner import execute

    plan = [("taller", "taller", True), ("shorter", "shorter", True), ("taller", "taller", True)]
    write_run(tmp_path / "images", "height", plan)
    cfg = JudgeConfig(task="height", detector=Spec("colour", {}), depth=Spec("colour", {}), batch_size=8)
    kind = JudgeRun(JudgeRunSettings.of(tmp_path / "images", cfg), detector=FlatDetector({1}), depth=ColourDepth())
    summary = execute(kind, tmp_path / "j")
    rows = preds(tmp_path / "j")
    assert [r["recognized"] for r in rows] == [True, False, True]
    assert rows[1]["pred"] == random.Random(0).choice(["taller", "shorter"])
    assert "box of zero height" in rows[1]["explanation"]
    assert summary["metrics"]["recognized_ratio"]["mean"] == pytest.approx(200 / 3)


def test_depth_region_release_and_covered():
    """rules.mean_depth: the release's int()-truncated box, or every pixel the box touches."""
    depth = np.arange(100, dtype=float).reshape(10, 10) + 1
    dets = [Detection("man", (0.5, 0.5, 2.5, 4.5), 0.9), Detection("box", (5, 5, 7.5, 9), 0.9)]
    meta = {"obj_a": "man", "obj_b": "box"}
    release = judge_image(JudgeConfig(task="size", detector=Spec("colour", {})), dets, depth, meta)
    covered = judge_image(JudgeConfig(task="size", detector=Spec("colour", {}), depth_region="covered"),
                          dets, depth, meta)
    assert release["depth_a"] == depth[0:4, 0:2].mean() and release["depth_b"] == depth[5:9, 5:7].mean()
    assert covered["depth_a"] == depth[0:5, 0:3].mean() and covered["depth_b"] == depth[5:9, 5:8].mean()


def test_depth_region_is_a_setting_of_size_and_height(tmp_path):
    write_run(tmp_path / "images", "size", [("larger", "larger", True), ("smaller", "smaller", True)])
    out = tmp_path / "j"
    invoke("judge", "size", tmp_path / "images", *COLOUR, "--depth", "colour", "--depth-region", "covered",
           "--out", out, "--no-gallery")
    config = json.loads((out / "config.json").read_text())
    assert config["settings"]["depth_region"] == "covered"
    assert json.loads((out / "summary.json").read_text())["details"]["depth_region"] == "covered"
    result = runner.invoke(app, ["judge", "size", str(tmp_path / "images"), *COLOUR, "--depth", "colour",
                                 "--out", str(out)])
    assert result.exit_code == 2 and "depth_region: 'covered' -> 'release'" in result.stderr
    bad = runner.invoke(app, ["judge", "height", str(tmp_path / "images"), *COLOUR, "--depth", "colour",
                              "--depth-region", "touched", "--out", str(tmp_path / "k")])
    assert bad.exit_code == 2 and "--depth-region must be one of release, covered, not 'touched'." in bad.stderr


# ---- the table names its rule and mode, what it can answer, its own headline ---

def test_each_rule_can_answer_the_relations_its_code_finds():
    from spatialprobe.judging.box_scores import answerable

    assert answerable("posrel", "vdg") == ("above", "below", "inside", "beside")
    for rule in ("visor", "geneval", "t2i-compbench", "heim"):  # no rule of a benchmark finds "inside"
        assert answerable("posrel", rule) == ("above", "below", "beside")
    # "beside" is "left of" or "right of", which come first in posrel2d: only T2I-CompBench's
    # next-to score (1 where boxes overlap and its left/right score is damped) ever answers it
    for rule in ("vdg", "visor", "geneval", "heim"):
        assert answerable("posrel2d", rule) == ("left of", "right of", "above", "below")
    assert answerable("posrel2d", "t2i-compbench") == ("left of", "right of", "above", "below", "beside")
    assert answerable("size", "vdg") == ("larger", "smaller")


def test_the_table_names_rule_mode_and_headlines_the_rules_own_score(tmp_path):
    lines = ["a dog on the left of a cat", "a cat on the right of a book", "a book on the top of a lamp",
             "a lamp on the bottom of a frog", "a frog next to a bowl"]
    prompts = tmp_path / "spatial_val.txt"
    prompts.write_text("\n".join(lines))
    invoke("synthesize", "--prompts", f"t2i-compbench:{prompts}", "--backend", "shapes", "-n", "1",
           "--out", tmp_path / "images")
    invoke("judge", "posrel2d", tmp_path / "images", *COLOUR, "--rule", "t2i-compbench", "--out", tmp_path / "t2i",
           "--no-gallery")
    table = (tmp_path / "t2i" / "table.md").read_text()
    assert "Rule: t2i-compbench, mode corrected. On posrel2d it can answer left of, right of, above, below, beside." \
        in table
    head = table.index("**Headline (the rule's own score)**: T2I-CompBench 2-D spatial score (mean over 5 images")
    assert head < table.index("| subset |") and "): 1.0000 [1.0000, 1.0000]" in table
    # error-free scenes: the benchmark's score is 1, but a "beside" scene (drawn apart, side by side)
    # is classified "left of", which comes first: accuracy 4 of 5
    assert json.loads((tmp_path / "t2i" / "summary.json").read_text())["metrics"]["accuracy"]["mean"] == 80.0
    invoke("judge", "posrel2d", tmp_path / "images", *COLOUR, "--rule", "geneval", "--mode", "corrected",
           "--out", tmp_path / "geneval", "--no-gallery")
    table = (tmp_path / "geneval" / "table.md").read_text()
    assert ("Rule: geneval, mode corrected. On posrel2d it can answer left of, right of, above, below; never "
            "beside (an image whose prompt asks it counts wrong in accuracy and macro-F1; the rule's own score "
            "asks each image's relation only).") in table
    assert "**Headline (the rule's own score)**: GenEval position accuracy (correct images of 5" in table
    invoke("judge", "posrel2d", tmp_path / "images", *COLOUR, "--out", tmp_path / "vdg", "--no-gallery")
    assert "**Headline**: accuracy 80.0 [" in (tmp_path / "vdg" / "table.md").read_text()
