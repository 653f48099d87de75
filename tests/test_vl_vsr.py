"""VSR: loader (incl. malformed records), relation table, negation, CLIP evaluation run."""

from __future__ import annotations

import json

import pytest
from interval_helpers import plain_wilson, wilson
from vl_helpers import solid_image

from spatialprobe.benchmarks.coco_images import find_images
from spatialprobe.benchmarks.vsr import CATEGORIES, load_vsr, load_vsr_file, negate_caption, relations
from spatialprobe.files import DataError

RANDOM = [
    {"image": "000000000001.jpg", "caption": "The cat is left of the dog.", "label": 1,
     "relation": "left of", "annotator_id": 3, "vote_true_validator_id": "[2, 9]",
     "vote_false_validator_id": "[]", "reference_frame": 0.0},
    {"image": "000000000002.jpg", "caption": "The hot dog is on the table.", "label": 0,
     "relation": "on", "annotator_id": 4, "vote_true_validator_id": [], "vote_false_validator_id": [1],
     "reference_frame": None, "extra": "ignored"},
    {"image": "000000000404.jpg", "caption": "The car is near the cat.", "label": 1,
     "relation": "near", "annotator_id": 1, "vote_true_validator_id": "[1]", "vote_false_validator_id": "[]"},
]
ZEROSHOT = [{"image": "000000000001.jpg", "caption": "The cat is touching the dog.", "label": 0,
             "relation": "touching", "subj": "cat", "obj": "dog", "annotator_id": 2,
             "vote_true_validator_id": "[]", "vote_false_validator_id": "[2, 5]"}]


def write_split(root, split, part, rows):
    path = root / split / f"{part}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_relation_table_has_71_relations_in_7_categories():
    table = relations()
    assert len(table) == 71
    assert {r.category for r in table.values()} == set(CATEGORIES) | {None}
    assert table["left of"].negation == "right of" and table["left of"].category == "Projective"
    assert table["touching"].category == "Topological"
    assert all(r.negation and r.negation != r.name for r in table.values())
    # sizes of the authors' categories (rel_meta_category_dict.txt): 'among' kept once, in
    # Unallocated; 'congruent' (in the data, not in the list) in no category, as their script
    sizes = {c: sum(r.category == c for r in table.values()) for c in CATEGORIES}
    assert sizes == {"Adjacency": 10, "Directional": 16, "Orientation": 4, "Projective": 12,
                     "Proximity": 5, "Topological": 17, "Unallocated": 6}
    assert [r.name for r in table.values() if r.category is None] == ["congruent"]
    # the data writes "is congruent the X": the negation keeps that shape
    assert negate_caption("The couch is congruent the cat.", "congruent") == "The couch is not congruent the cat."


def test_negation_replaces_the_relation_not_words_in_object_names():
    assert negate_caption("The cat is left of the dog.", "left of") == "The cat is right of the dog."
    assert negate_caption("The hot dog is on the table.", "on") == "The hot dog is off the table."
    assert negate_caption("The cake contains the cat.", "contains") == "The cake does not contain the cat."
    with pytest.raises(ValueError, match="does not contain its relation"):
        negate_caption("The cat is near the dog.", "left of")


def test_loader_parses_both_splits_and_id_fields(tmp_path):
    write_split(tmp_path, "random", "test", RANDOM)
    write_split(tmp_path, "zeroshot", "test", ZEROSHOT)
    rows = load_vsr(tmp_path, "random", "test")
    assert [r.id for r in rows] == ["random-test-00000", "random-test-00001", "random-test-00002"]
    assert rows[0].vote_true == (2, 9) and rows[0].vote_false == () and rows[0].reference_frame == 0.0
    assert rows[1].vote_false == (1,) and (rows[1].subj, rows[1].obj) == ("hot dog", "table")
    zs = load_vsr(tmp_path / "zeroshot", "zeroshot", "test")
    assert (zs[0].subj, zs[0].obj, zs[0].vote_false) == ("cat", "dog", (2, 5))


@pytest.mark.parametrize("change, field", [
    ({"label": 2}, "label"), ({"label": "1"}, "label"), ({"caption": ""}, "caption"),
    ({"vote_true_validator_id": "[2, x]"}, "vote_true_validator_id"),
    ({"vote_false_validator_id": [1, "a"]}, "vote_false_validator_id"),
])
def test_malformed_records_name_file_line_and_field(tmp_path, change, field):
    path = write_split(tmp_path, "random", "dev", [RANDOM[0], {**RANDOM[1], **change}])
    with pytest.raises(DataError) as err:
        load_vsr_file(path)
    assert err.value.line == 2 and err.value.field == field and str(path) in str(err.value)


def test_missing_images_are_reported(tmp_path):
    write_split(tmp_path, "random", "test", RANDOM)
    solid_image(tmp_path / "coco" / "train2017" / "000000000001.jpg")
    solid_image(tmp_path / "coco" / "000000000002.jpg")
    found, missing = find_images(load_vsr(tmp_path, "random", "test"), tmp_path / "coco")
    assert sorted(found) == ["random-test-00000", "random-test-00001"]
    assert missing == ["random-test-00002"]


class FixedClip:
    """Scores a caption by a fixed table: lets the test know every prediction. The contrastive
    wording's options are (negation, caption)."""

    name = "fixed"

    def __init__(self, wins):
        self.wins = wins  # caption -> caption beats its negation

    def describe(self):
        return {"model": "fixed"}

    def score(self, requests):
        return [(0.0, 1.0) if self.wins[r.options[1]] else (1.0, 0.0) for r in requests]


def run_vsr(root, clip, out, skip_missing=False):
    """The random/test split of ``root`` asked of ``clip`` through the ask kind (contrastive wording)."""
    from spatialprobe.benchmarks.vsr import split_file, vsr_source
    from spatialprobe.engine.run import ask_run
    from spatialprobe.runner.settings import Component

    source, _ = vsr_source(split_file(root, "random", "test"), root / "coco", skip_missing=skip_missing)
    return ask_run(source, clip, Component("contrastive", {"model": "fixed"}), None, out)


def test_vsr_clip_run_metrics_summary_and_resume(tmp_path):
    from spatialprobe.store import list_runs

    write_split(tmp_path, "random", "test", RANDOM)
    for name in ("000000000001.jpg", "000000000002.jpg"):
        solid_image(tmp_path / "coco" / name)
    clip = FixedClip({"The cat is left of the dog.": True, "The hot dog is on the table.": True})
    # the third example's image is missing: refused, naming it, before anything is written
    with pytest.raises(DataError) as refused:
        run_vsr(tmp_path, clip, tmp_path / "run")
    assert str(refused.value) == (f"{tmp_path / 'coco'}: 1 of 3 examples have no image here (first: "
                                  "000000000404.jpg); add the images, or pass --skip-missing to evaluate "
                                  "the 2 that have one (counted and recorded)")
    assert not (tmp_path / "run").exists()
    summary = run_vsr(tmp_path, clip, tmp_path / "run", skip_missing=True)
    # first: gold yes, pred yes (right); second: gold no, pred yes (wrong); third: no image
    assert summary["kind"] == "ask" and summary["task"] == "vsr-random"
    # intervals are cluster-robust over the two images, one question each: independent rows, so
    # Wilson's own interval of 1 of 2; a group of one image has nothing to measure (null)
    assert summary["accuracy"] == {"mean": 50.0, "std": None, "n": 2, "ci": plain_wilson(1, 2), "breakdown": {
        "category Projective": {"mean": 100.0, "std": None, "n": 1, "ci": None},
        "category Topological": {"mean": 0.0, "std": None, "n": 1, "ci": None},
        "relation left of": {"mean": 100.0, "std": None, "n": 1, "ci": None},
        "relation on": {"mean": 0.0, "std": None, "n": 1, "ci": None}}}
    # F1(yes) = 2/3, F1(no) = 0; the first image alone: F1(yes) = 1, F1(no) = 0 (no "no" at all): 50; the second: 0
    assert summary["macro_f1"]["mean"] == pytest.approx(100 / 3)
    assert summary["macro_f1"]["ci"] == [0.0, 100.0]  # t_1, clipped
    assert summary["intervals"]["method"] == "cluster-robust standard error over images"
    assert summary["intervals"]["clusters"] == ["image"] and summary["intervals"]["labels"] == ["yes", "no"]
    details = summary["details"]
    assert details["missing_images"] == ["000000000404.jpg"] and details["model_info"] == {"model": "fixed"}
    assert details["coverage"] == {"used": 2, "total": 3, "skipped_missing": 1, "skip_missing": True, "limit": None}
    table = (tmp_path / "run" / "table.md").read_text().splitlines()
    assert table[0].startswith("Coverage: 2 of 3 examples (1 images missing, skipped with --skip-missing).")
    assert table[-9:-3] == ["| group | accuracy | n |", "|---|---|---|", "| category Projective | 100.0 [–] | 1 |",
                            "| category Topological | 0.0 [–] | 1 |", "| relation left of | 100.0 [–] | 1 |",
                            "| relation on | 0.0 [–] | 1 |"]
    for name in ("summary.json", "config.json", "predictions.jsonl", "table.md", "accuracy.png"):
        assert (tmp_path / "run" / name).exists()
    assert [r["kind"] for r in list_runs()] == ["ask"]
    # an unknown relation or a caption without its relation stops the run before any scoring
    bad = [dict(RANDOM[0], relation="onto", caption="The cat is onto the dog."),
           dict(RANDOM[0], caption="The cat is near the dog.")]
    for row, message in zip(bad, ("'onto', which is not among the 71", "does not contain its relation"), strict=True):
        write_split(tmp_path / "bad", "random", "test", [row])
        (tmp_path / "bad" / "coco").mkdir(exist_ok=True)
        solid_image(tmp_path / "bad" / "coco" / "000000000001.jpg")
        with pytest.raises(ValueError, match=message):
            run_vsr(tmp_path / "bad", FixedClip({}), tmp_path / "bad-run")
    # a second run on the same directory reuses stored results: a clip that fails if called
    again = run_vsr(tmp_path, FixedClip({}), tmp_path / "run", skip_missing=True)
    assert again["accuracy"] == summary["accuracy"]


def test_congruent_counts_overall_and_per_relation_but_in_no_category(tmp_path):
    """The VSR authors' analysis_scripts/eval_compute_acc_by_rel_meta_cat.py: a relation missing
    from rel_meta_category_dict.txt ('congruent') is printed as "no availible meta cat" and left
    out of every category; eval_compute_acc_by_rel.py still counts it per relation."""
    congruent = {"image": "000000000003.jpg", "caption": "The couch is congruent the cat.", "label": 1,
                 "relation": "congruent", "annotator_id": 5, "vote_true_validator_id": "[1]",
                 "vote_false_validator_id": "[]"}
    write_split(tmp_path, "random", "test", [RANDOM[0], congruent, dict(congruent, label=0)])
    for name in ("000000000001.jpg", "000000000003.jpg"):
        solid_image(tmp_path / "coco" / name)
    clip = FixedClip({"The cat is left of the dog.": False, "The couch is congruent the cat.": True})
    summary = run_vsr(tmp_path, clip, tmp_path / "run")
    # left of: gold yes, pred no (wrong); congruent: gold yes pred yes (right), gold no pred yes (wrong)
    # by image: influences (0 - 1/3) / 3 = -1/9 and (1 - 1/3 + 0 - 1/3) / 3 = 1/9: variance 4/81 (t_1)
    accuracy = summary["accuracy"]
    assert (accuracy["mean"], accuracy["n"], accuracy["ci"]) == (pytest.approx(100 / 3), 3, wilson(1 / 3, 4 / 81, 3, 2))
    assert accuracy["breakdown"] == {
        "category Projective": {"mean": 0.0, "std": None, "n": 1, "ci": None},
        "relation congruent": {"mean": 50.0, "std": None, "n": 2, "ci": None},
        "relation left of": {"mean": 0.0, "std": None, "n": 1, "ci": None}}
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert [r["category"] for r in rows] == ["Projective", None, None]


@pytest.mark.parametrize("wins, accuracy, macro_f1", [
    ({"The cat is left of the dog.": True, "The dog is left of the cat.": False}, 100.0, 100.0),
    ({"The cat is left of the dog.": True, "The dog is left of the cat.": True}, 50.0, 100 / 3)])
def test_vsr_intervals_have_known_answers(tmp_path, wins, accuracy, macro_f1):
    """Four images, each with a true and a false caption: a perfect scorer is 100 with the Wilson
    interval of its 8 rows (t_3), never [100, 100] (its macro-F1 too); one that always says true is right on exactly one
    caption of every image: 50 whatever images are drawn, variance 0, [50, 50]."""
    rows = []
    for n in range(1, 5):
        image = f"00000000000{n}.jpg"
        solid_image(tmp_path / "coco" / image)
        rows += [dict(RANDOM[0], image=image), dict(RANDOM[0], image=image, caption="The dog is left of the cat.",
                                                      label=0)]
    write_split(tmp_path, "random", "test", rows)
    summary = run_vsr(tmp_path, FixedClip(wins), tmp_path / "run")
    part = summary["accuracy"]["breakdown"]["category Projective"]
    expected = [accuracy, accuracy] if accuracy == 50.0 else wilson(1.0, 0.0, 8, 4)
    assert (summary["accuracy"]["mean"], summary["accuracy"]["ci"]) == (accuracy, expected)
    assert part["n"] == 8 and part["ci"] == expected
    assert summary["macro_f1"]["mean"] == pytest.approx(macro_f1, abs=0.005)
    # all right: macro-F1's boundary interval at L x n_min = 2 labels x 4 rows, the accuracy's own
    assert summary["macro_f1"]["ci"] == (expected if accuracy == 100.0 else pytest.approx([macro_f1, macro_f1]))


def test_vsr_command_with_tiny_clip(tmp_path):
    from typer.testing import CliRunner
    from vl_helpers import tiny_clip

    from spatialprobe.cli import app

    write_split(tmp_path, "zeroshot", "dev", ZEROSHOT)
    solid_image(tmp_path / "coco" / "val2017" / "000000000001.jpg")
    clip_dir = tiny_clip(tmp_path / "clip")
    result = CliRunner().invoke(app, ["vsr", "--model", str(clip_dir), "--data", str(tmp_path),
                                      "--images", str(tmp_path / "coco"), "--split", "zeroshot",
                                      "--part", "dev", "--out", str(tmp_path / "run"), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    row = json.loads((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()[0])
    # one row schema for every family: yes/no labels; the contrastive scores are
    # (negation, caption) and the caption wins only when it scores strictly higher
    assert row["question"] == "The cat is not touching the dog. | The cat is touching the dog."
    assert row["pred"] == ("yes" if row["scores"][1] > row["scores"][0] else "no")
    assert summary["kind"] == "ask" and summary["details"]["wording"] == "contrastive"
    assert summary["accuracy"]["mean"] == (100.0 if row["pred"] == "no" else 0.0)
    assert summary["task"] == "vsr-zeroshot" and summary["dataset"].startswith("vsr-zeroshot-dev@sha256:")
    assert summary["accuracy"]["n"] == 1 and summary["metrics"]["accuracy"] == summary["accuracy"]
    bad = CliRunner().invoke(app, ["vsr", "--model", str(tmp_path / "nope"), "--data", str(tmp_path),
                                   "--images", str(tmp_path / "coco"), "--split", "zeroshot", "--part", "dev",
                                   "--out", str(tmp_path / "run2")])
    assert bad.exit_code == 2 and "local directory" in bad.output
    nothing = CliRunner().invoke(app, ["vsr", "--model", str(clip_dir), "--data", str(tmp_path),
                                       "--images", str(tmp_path / "empty"), "--split", "zeroshot",
                                       "--part", "dev", "--out", str(tmp_path / "run3")])
    assert nothing.exit_code == 2 and "none of the 1 images were found" in nothing.output


def _vsr_cli_run(tmp_path, out, model, *extra):
    """vsr on RANDOM, whose third image is missing (--skip-missing: counted and recorded)."""
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    return CliRunner().invoke(app, ["vsr", "--model", str(model), "--data", str(tmp_path / "vsr"),
                                    "--images", str(tmp_path / "coco"), "--out", str(out),
                                    "--device", "cpu", "--skip-missing", *extra])


def test_vsr_replay_confirms_in_place_and_reproduces_elsewhere(tmp_path, monkeypatch):
    from typer.testing import CliRunner
    from vl_helpers import tiny_clip

    from spatialprobe.cli import app
    from spatialprobe.models.clip_scoring import ClipSimilarity

    write_split(tmp_path / "vsr", "random", "test", RANDOM)
    for name in ("000000000001.jpg", "000000000002.jpg"):
        solid_image(tmp_path / "coco" / name)
    clip_dir = tiny_clip(tmp_path / "clip")
    first = _vsr_cli_run(tmp_path, tmp_path / "run", clip_dir, "--batch-size", "1")
    assert first.exit_code == 0, first.output
    scores = ClipSimilarity.batch_scores

    def refuse(*args, **kwargs):
        raise AssertionError("scored again")

    monkeypatch.setattr(ClipSimilarity, "batch_scores", refuse)
    same = CliRunner().invoke(app, ["run", str(tmp_path / "run" / "config.json")])
    assert same.exit_code == 0, same.output
    assert "confirmed: identity" in same.output
    monkeypatch.setattr(ClipSimilarity, "batch_scores", scores)
    copy = tmp_path / "copy"
    elsewhere = CliRunner().invoke(app, ["run", str(tmp_path / "run"), "--out", str(copy)])
    assert elsewhere.exit_code == 0, elsewhere.output
    assert (copy / "predictions.jsonl").read_text() == (tmp_path / "run" / "predictions.jsonl").read_text()
    assert (copy / "accuracy.png").read_bytes()[:4] == b"\x89PNG"
    assert not list(copy.glob(".accuracy*"))  # the plot is written under a temporary name, then renamed


def test_vsr_changed_setting_refused_by_name_batch_size_accepted_and_report(tmp_path):
    from typer.testing import CliRunner
    from vl_helpers import tiny_clip

    from spatialprobe.cli import app

    write_split(tmp_path / "vsr", "random", "test", RANDOM)
    for name in ("000000000001.jpg", "000000000002.jpg"):
        solid_image(tmp_path / "coco" / name)
    clip_dir = tiny_clip(tmp_path / "clip")
    assert _vsr_cli_run(tmp_path, tmp_path / "run", clip_dir).exit_code == 0
    other = _vsr_cli_run(tmp_path, tmp_path / "run", clip_dir, "--limit", "1")
    assert other.exit_code == 2 and "settings that differ: source.limit: None -> 1" in other.output
    faster = _vsr_cli_run(tmp_path, tmp_path / "run", clip_dir, "--batch-size", "1")
    assert faster.exit_code == 0, faster.output
    assert _vsr_cli_run(tmp_path, tmp_path / "one", clip_dir, "--limit", "1").exit_code == 0
    runs = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("run", "one")]
    report = CliRunner().invoke(app, ["report", str(tmp_path / "run"), str(tmp_path / "one")])
    assert report.exit_code == 0, report.output
    lines = report.output.splitlines()
    assert lines[0] == "| run | ask vsr-random acc | ask vsr-random macro-F1 |"
    # two runs of the same model and task: a row each, labelled by the setting that differs (limit),
    # each with its own numbers and intervals (B: one image, nothing to resample: no interval)
    assert runs[1]["accuracy"]["ci"] is None and runs[1]["macro_f1"]["ci"] is None
    a_ci, a_f1_ci = runs[0]["accuracy"]["ci"], runs[0]["macro_f1"]["ci"]
    assert lines[2] == (f"| A: {clip_dir} · limit=null | {runs[0]['accuracy']['mean']:.1f} [{a_ci[0]:.1f}, "
                        f"{a_ci[1]:.1f}] | {runs[0]['macro_f1']['mean']:.1f} [{a_f1_ci[0]:.1f}, {a_f1_ci[1]:.1f}] |")
    assert lines[3] == (f"| B: {clip_dir} · limit=1 | {runs[1]['accuracy']['mean']:.1f} [–] | "
                        f"{runs[1]['macro_f1']['mean']:.1f} [–] |")
