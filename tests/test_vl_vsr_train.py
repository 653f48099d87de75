"""ViLT fine-tuning on VSR: a couple of steps with a tiny ViLT on synthetic images."""

from __future__ import annotations

import json

import pytest
from interval_helpers import wilson

pytest.importorskip("torch")

from test_vl_vsr import write_split
from vl_helpers import solid_image, tiny_vilt


def records(n):
    colors = [(250, 0, 0), (0, 0, 250)]
    rows = [{"image": f"{i % 2:012d}.jpg", "caption": "The cat is left of the dog." if i % 2 else
             "The dog is on the table.", "label": i % 2, "relation": "left of" if i % 2 else "on",
             "annotator_id": 1, "vote_true_validator_id": "[]", "vote_false_validator_id": "[]"} for i in range(n)]
    return rows, colors


def test_defaults_are_the_papers():
    from spatialprobe.training.vilt_vsr import TrainSettings

    s = TrainSettings()
    assert (s.learning_rate, s.batch_size, s.epochs, s.eval_steps, s.max_text_length, s.seed) == \
        (1e-5, 12, 30, 100, 40, 42)


def test_trainer_arguments_follow_the_authors_loop(tmp_path):
    """torch AdamW (weight decay 0.01), constant lr, no warm-up, no clipping, best dev accuracy."""
    from spatialprobe.training.vilt_vsr import TrainSettings, training_arguments

    args = training_arguments(TrainSettings(), tmp_path, "cpu")
    assert (args.learning_rate, args.per_device_train_batch_size, args.num_train_epochs) == (1e-5, 12, 30)
    assert (args.weight_decay, args.max_grad_norm, args.warmup_steps) == (0.01, 0.0, 0)
    assert args.lr_scheduler_type == "constant" and str(args.optim).lower().count("adamw")
    assert args.load_best_model_at_end and args.metric_for_best_model == "accuracy"
    assert args.eval_steps == args.save_steps == 100 and args.seed == 42


def always_true_vilt(directory):
    """A tiny ViLT classifier whose last layer outputs (0, 5) for every input: it says True always,
    and a couple of steps at lr 1e-5 cannot change that."""
    import torch
    from transformers import ViltForImagesAndTextClassification

    tiny_vilt(directory, classifier=True)
    model = ViltForImagesAndTextClassification.from_pretrained(directory)
    with torch.no_grad():
        model.classifier[-1].weight.zero_()
        model.classifier[-1].bias.copy_(torch.tensor([0.0, 5.0]))
    model.save_pretrained(directory)
    return directory


def _train_args(tmp_path, model, *extra):
    return ["vsr-train", "--data", str(tmp_path / "vsr"), "--images", str(tmp_path / "coco"),
            "--out", str(tmp_path / "run"), "--model", str(model), "--batch-size", "2",
            "--max-steps", "2", "--eval-steps", "1", "--device", "cpu", *extra]


def test_train_keeps_best_dev_checkpoint_and_evaluates_test(tmp_path, monkeypatch):
    from transformers import Trainer, ViltForImagesAndTextClassification
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    rows, colors = records(4)  # labels 0, 1, 0, 1
    for part in ("train", "dev"):
        write_split(tmp_path / "vsr", "random", part, rows)
    test = [dict(row, label=1) for row in rows[:3]] + [rows[0]]  # 3 of 4 True
    write_split(tmp_path / "vsr", "random", "test", test)
    for i, color in enumerate(colors):
        solid_image(tmp_path / "coco" / f"{i:012d}.jpg", color, size=32)
    base = always_true_vilt(tmp_path / "vilt")
    result = CliRunner().invoke(app, _train_args(tmp_path, base))
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    # always True: accuracy is the share of True labels; F1(True) = 2 * .75 / 1.75, F1(False) = 0
    assert summary["kind"] == "vsr-train" and summary["seed"] == 42
    # Intervals resample the COCO image: image 0 holds three captions (2 right), image 1 one (right).
    # Cluster-robust over the 2 images: influences (1/4 + 1/4 - 3/4) / 4 = -1/16 and 1/16, variance
    # 2/256 * 2/1 = 1/64: the Wilson interval at t_1 (few images: wide).
    # Each relation and category lies in one image: no interval can be measured there (null).
    assert summary["accuracy"] == {"mean": 75.0, "std": None, "n": 4, "ci": wilson(0.75, 1 / 64, 4, 2), "breakdown": {
        "category Projective": {"mean": 100.0, "std": None, "n": 1, "ci": None},
        "category Topological": {"mean": pytest.approx(200 / 3), "std": None, "n": 3, "ci": None},
        "relation left of": {"mean": 100.0, "std": None, "n": 1, "ci": None},
        "relation on": {"mean": pytest.approx(200 / 3), "std": None, "n": 3, "ci": None}}}
    # the registry's statistics, unrounded: 100 x F1(True) / 2 = 300/7
    f1 = {k: v for k, v in summary["macro_f1"].items() if k != "breakdown"}  # per category too
    assert f1 == {"mean": pytest.approx(300 / 7), "std": None, "n": 4, "ci": [0.0, 94.719203]}  # t_1, clipped
    details = summary["details"]
    assert (tmp_path / "run" / "table.md").read_text().splitlines()[0] == (
        "Coverage: train 4 of 4 examples; dev 4 of 4 examples; test 4 of 4 examples.")
    assert details["coverage"] == {"used": 4, "total": 4, "skipped_missing": 0, "skip_missing": False, "limit": None}
    assert details["best_dev_accuracy"] == 50.0 and details["global_step"] == 2  # dev: 2 of 4 True
    assert details["best_checkpoint"] == str(tmp_path / "run" / "best")
    preds = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert [p["pred"] for p in preds] == [1, 1, 1, 1] and [p["label"] for p in preds] == [1, 1, 1, 0]
    model = ViltForImagesAndTextClassification.from_pretrained(tmp_path / "run" / "best")
    assert model.config.num_images == 1 and model.config.num_labels == 2
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["settings"]["train"]["learning_rate"] == 1e-5 and config["settings"]["train"]["max_steps"] == 2
    state = json.loads(sorted((tmp_path / "run" / "checkpoints").glob("checkpoint-*/trainer_state.json"))[-1]
                       .read_text())
    assert state["best_model_checkpoint"] is not None and state["global_step"] == 2

    def refuse(*args, **kwargs):
        raise AssertionError("trained or predicted again")

    # the same run again (and its replay) trains and predicts nothing
    monkeypatch.setattr(Trainer, "train", refuse)
    monkeypatch.setattr(Trainer, "predict", refuse)
    assert CliRunner().invoke(app, _train_args(tmp_path, base)).exit_code == 0
    replay = CliRunner().invoke(app, ["run", str(tmp_path / "run")])
    assert replay.exit_code == 0 and "confirmed: identity" in replay.output
    # the same --out with other settings is refused, naming them, not resumed from the other run's checkpoints
    other = CliRunner().invoke(app, _train_args(tmp_path, base, "--lr", "1e-4"))
    assert other.exit_code == 2
    assert "settings that differ: train.learning_rate: 1e-05 -> 0.0001" in other.output


def test_replay_trains_into_the_new_run_directory(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    rows, colors = records(2)
    for part in ("train", "dev", "test"):
        write_split(tmp_path / "vsr", "random", part, rows)
    for i, color in enumerate(colors):
        solid_image(tmp_path / "coco" / f"{i:012d}.jpg", color, size=32)
    base = always_true_vilt(tmp_path / "vilt")
    assert CliRunner().invoke(app, _train_args(tmp_path, base)).exit_code == 0
    replay = CliRunner().invoke(app, ["run", str(tmp_path / "run"), "--out", str(tmp_path / "copy")])
    assert replay.exit_code == 0, replay.output
    assert (tmp_path / "copy" / "best" / "config.json").exists()
    assert (tmp_path / "copy" / "predictions.jsonl").read_text() == \
        (tmp_path / "run" / "predictions.jsonl").read_text()


def test_missing_training_images_are_refused_or_skipped_and_counted(tmp_path):
    """vsr-train trained on 210 of 7,680 examples without a word: now a missing image of any part
    is refused before a model loads, naming it; --skip-missing counts every part's gap."""
    from typer.testing import CliRunner

    from spatialprobe.cli import app
    from spatialprobe.reports.tables import coverage_line
    from spatialprobe.training.vilt_vsr import TrainData, TrainSettings, VSRTrainRun, VSRTrainRunSettings

    rows, colors = records(4)
    for part in ("train", "dev", "test"):
        write_split(tmp_path / "vsr", "random", part, rows)
    solid_image(tmp_path / "coco" / f"{0:012d}.jpg", colors[0], size=32)  # the second image is missing
    result = CliRunner().invoke(app, _train_args(tmp_path, tmp_path / "no-model"))
    assert result.exit_code == 2 and not (tmp_path / "run").exists()
    assert " ".join(result.output.split()) == (
        f"Error: {tmp_path / 'coco'}: 2 of 4 train examples have no image here (first: 000000000001.jpg); "
        "add the images, or pass --skip-missing to evaluate the 2 that have one (counted and recorded)")
    run = VSRTrainRun(VSRTrainRunSettings(TrainData(str(tmp_path / "vsr")), str(tmp_path / "coco"), TrainSettings(),
                                          skip_missing=True))
    assert run.coverage["train"] == {"used": 2, "total": 4, "skipped_missing": 2, "skip_missing": True,
                                     "limit": None}
    assert len(run.data["train"]) == 2 and run.spec().settings["skip_missing"] is True
    assert coverage_line(run.coverage["train"]) == (
        "Coverage: 2 of 4 examples (2 images missing, skipped with --skip-missing).")


def test_epochs_with_max_steps_is_refused(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    result = CliRunner().invoke(app, ["vsr-train", "--data", str(tmp_path), "--images", str(tmp_path),
                                      "--out", str(tmp_path / "run"), "--epochs", "3", "--max-steps", "2"])
    assert result.exit_code == 2
    assert "--epochs does not apply with --max-steps" in result.output and not (tmp_path / "run").exists()


def test_vsr_train_metrics_leave_a_relation_without_category_out_of_every_category():
    """The VSR authors' scripts: 'congruent' (no category) counts overall and per relation only;
    the values are scikit-learn's accuracy and macro-F1 on the same rows."""
    from sklearn.metrics import accuracy_score, f1_score

    from spatialprobe.training.vilt_vsr import vsr_metrics

    rows = [{"id": f"r{n}", "image": f"{n // 2}.jpg", "label": label, "pred": pred, "relation": relation,
             "category": category}
            for n, (label, pred, relation, category) in enumerate([
                (1, 1, "left of", "Projective"), (0, 1, "left of", "Projective"), (1, 1, "congruent", None),
                (0, 0, "congruent", None), (1, 0, "on", "Topological"), (0, 0, "on", "Topological")])]
    metrics, specs = vsr_metrics(rows)
    gold, pred = [r["label"] for r in rows], [r["pred"] for r in rows]
    assert metrics["accuracy"].mean == pytest.approx(100 * accuracy_score(gold, pred))
    assert metrics["macro_f1"].mean == pytest.approx(100 * f1_score(gold, pred, average="macro"))
    parts = metrics["accuracy"].breakdown
    assert sorted(parts) == ["category Projective", "category Topological", "relation congruent",
                             "relation left of", "relation on"]
    assert (parts["relation congruent"].mean, parts["category Projective"].mean) == (100.0, 50.0)
    assert {spec.group for spec in specs} == {None, "category", "relation"}  # overall first, then each grouping
