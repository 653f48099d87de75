"""ViLT fine-tuning on VSR: a couple of steps with a tiny ViLT on synthetic images."""

from __future__ import annotations

import json

import pytest

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
    from spatialprobe.probes.vsr_train import TrainSettings

    s = TrainSettings()
    assert (s.learning_rate, s.batch_size, s.epochs, s.eval_steps, s.max_text_length, s.seed) == \
        (1e-5, 12, 30, 100, 40, 42)


def test_trainer_arguments_follow_the_authors_loop(tmp_path):
    """torch AdamW (weight decay 0.01), constant lr, no warm-up, no clipping, best dev accuracy."""
    from spatialprobe.probes.vsr_train import TrainSettings, training_arguments

    args = training_arguments(TrainSettings(), tmp_path, "cpu")
    assert (args.learning_rate, args.per_device_train_batch_size, args.num_train_epochs) == (1e-5, 12, 30)
    assert (args.weight_decay, args.max_grad_norm, args.warmup_steps) == (0.01, 0.0, 0)
    assert args.lr_scheduler_type == "constant" and str(args.optim).lower().count("adamw")
    assert args.load_best_model_at_end and args.metric_for_best_model == "accuracy"
    assert args.eval_steps == args.save_steps == 100 and args.seed == 42


def test_train_keeps_best_dev_checkpoint_and_evaluates_test(tmp_path):
    from transformers import ViltForImagesAndTextClassification
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    rows, colors = records(4)
    for part in ("train", "dev", "test"):
        write_split(tmp_path / "vsr", "random", part, rows)
    for i, color in enumerate(colors):
        solid_image(tmp_path / "coco" / f"{i:012d}.jpg", color, size=32)
    base = tiny_vilt(tmp_path / "vilt")
    result = CliRunner().invoke(app, [
        "vsr-train", "--data", str(tmp_path / "vsr"), "--images", str(tmp_path / "coco"),
        "--out", str(tmp_path / "run"), "--model", str(base), "--batch-size", "2",
        "--max-steps", "2", "--eval-steps", "1", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["kind"] == "vsr" and summary["n_scored"] == 4
    assert summary["accuracy"]["mean"] in (0.0, 25.0, 50.0, 75.0, 100.0)
    assert 0.0 <= summary["best_dev_accuracy"] <= 100.0
    model = ViltForImagesAndTextClassification.from_pretrained(tmp_path / "run" / "best")
    assert model.config.num_images == 1 and model.config.num_labels == 2
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["settings"]["learning_rate"] == 1e-5 and config["settings"]["max_steps"] == 2
    state = json.loads(sorted((tmp_path / "run" / "checkpoints").glob("checkpoint-*/trainer_state.json"))[-1]
                       .read_text())
    assert state["best_model_checkpoint"] is not None and state["global_step"] == 2
    # the same --out with other settings is refused, not resumed from the other run's checkpoints
    other = CliRunner().invoke(app, [
        "vsr-train", "--data", str(tmp_path / "vsr"), "--images", str(tmp_path / "coco"),
        "--out", str(tmp_path / "run"), "--model", str(base), "--batch-size", "2", "--lr", "1e-4",
        "--max-steps", "2", "--eval-steps", "1", "--device", "cpu"])
    assert other.exit_code == 2 and "already holds a run" in other.output
