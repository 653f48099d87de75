"""BLINK (spatialprobe/benchmarks/blink.py): its Hugging Face layout (a folder of Parquet files per
subtask, images embedded) through the real loader and ``spatialprobe bench``, the images of a
multi-view item shown together to a multimodal LLM; the mean over subtasks equal to the authors'
``eval_prediction`` (zeyofu/BLINK_Benchmark @2d6a779 ``eval/evaluate.py``) as transcribed in
tests/official/blink.py on thousands of random predictions."""

from __future__ import annotations

import random

import numpy as np
import pytest
from bench_a_helpers import bench_a, needs_a_llava
from official import blink as o_blink
from vl_helpers import solid_image

from spatialprobe.benchmarks.blink import SPATIAL, matching
from spatialprobe.engine.rebuild import rebuild_source
from spatialprobe.metrics.weighted import STATISTICS


def _copy(root, sizes=(5, 3, 4), seed=0):
    """BLINK's layout: TASK/val-00000-of-00001.parquet, images embedded; Multi-view items show 2 images."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = random.Random(seed)
    png = solid_image(root / "scene.png", size=16).read_bytes()
    other = solid_image(root / "other.png", (10, 200, 10), size=16).read_bytes()
    answers = {}
    for task, n in zip(SPATIAL, sizes, strict=True):
        rows = []
        for k in range(1, n + 1):
            choices = ["yes", "no"] if task != "Multi-view_Reasoning" else ["left", "right", "up", "down"]
            answer = f"({rng.choice('ABCD'[:len(choices)])})"
            idx = f"val_{task}_{k}"
            answers[idx] = answer
            rows.append({"idx": idx, "question": f"Question {k}?", "sub_task": task.replace("_", " "),
                         "image_1": {"bytes": png, "path": "1.png"},
                         "image_2": {"bytes": other, "path": "2.png"} if task == "Multi-view_Reasoning" else None,
                         "image_3": None, "image_4": None, "choices": choices, "answer": answer,
                         "prompt": "unused"})
        (root / task).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), root / task / "val-00000-of-00001.parquet")
    return answers


def test_the_mean_over_subtasks_equals_blinks_on_random_predictions(tmp_path):
    answers = _copy(tmp_path / "BLINK", sizes=(7, 2, 5))
    source = rebuild_source({"name": "blink", "data": str(tmp_path / "BLINK")}, 0)
    assert [i.key for i in source.items] == list(answers)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        picks = {i.key: chr(65 + int(rng.integers(len(i.options)))) for i in source.items}
        official = o_blink.eval_prediction(answers, {k: f"({v})" for k, v in picks.items()}, list(SPATIAL), "val")
        values = np.array([matching(i, None, picks[i.key])["blink_spatial_value"] for i in source.items])
        ours = STATISTICS["mean"](np.zeros(len(values)), values, np.ones((1, len(values))), 0)[0]
        assert ours == pytest.approx(100 * official["Total"], abs=1e-9)


@needs_a_llava
def test_multi_view_items_are_asked_with_their_images_together(tmp_path):
    answers = _copy(tmp_path / "BLINK", sizes=(3, 2, 3))
    source = rebuild_source({"name": "blink", "data": str(tmp_path / "BLINK")}, 0)
    assert {len(i.views) for i in source.items if i.fields["sub_task"] == "Multi-view_Reasoning"} == {1}
    out = tmp_path / "run"
    metrics = bench_a("blink", tmp_path / "BLINK", out, "--blind")
    official = o_blink.eval_prediction(answers, dict.fromkeys(answers, "(A)"), list(SPATIAL), "val")
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * sum(a == "(A)" for a in answers.values()) / len(answers))
    assert metrics["blink_spatial"]["mean"] == pytest.approx(100 * official["Total"])  # the 3 spatial subtasks' mean
    assert "blink" not in metrics  # the authors' Total is the mean of all 14: not reported from 3


def test_a_model_that_takes_one_image_is_refused_in_one_sentence(tmp_path):
    from spatialprobe.engine.run import ask_run
    from spatialprobe.errors import UsageError
    from spatialprobe.runner.settings import Component

    class OneImage:
        """Understands lettered questions, one image each (no ``multi_image``)."""

        protocols = ("score",)
        wordings = ("question",)

    _copy(tmp_path / "BLINK", sizes=(1, 1, 1))
    source = rebuild_source({"name": "blink", "data": str(tmp_path / "BLINK")}, 0)
    with pytest.raises(UsageError, match=r"several images .* and the one-image model takes one image"):
        ask_run(source, OneImage(), Component("one-image", {}), None, tmp_path / "run")
