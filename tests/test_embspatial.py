"""EmbSpatial-Bench (spatialprobe/benchmarks/embspatial.py): the authors' JSON (base64 images) and
a Parquet copy through the real loader and ``spatialprobe bench``; accuracy, per source and per
relation, as lmms-eval's ``embspatial_aggregate_results`` (EvolvingLMMs-Lab/lmms-eval
``lmms_eval/tasks/embspatial/utils.py``, read @2bb5e98)."""

from __future__ import annotations

import base64
import json
import random
from collections import defaultdict

import pytest
from bench_a_helpers import bench_a, needs_a_llava
from vl_helpers import solid_image

from spatialprobe.engine.rebuild import rebuild_source


def embspatial_aggregate_results(results):
    """Transcribed: overall accuracy and (what it logs) the accuracy per sub-task (relation)."""
    sub_task_to_eval_samples = defaultdict(list)
    total_samples = len(results)
    total_correct = 0
    for sample in results:
        sub_task = sample["sub_task"]
        is_correct = sample["is_correct"]
        if is_correct:
            total_correct += 1
            sub_task_to_eval_samples[sub_task].append(1)
        else:
            sub_task_to_eval_samples[sub_task].append(0)
    accuracy = total_correct / total_samples if total_samples > 0 else 0
    sub_task_accuracies = {sub_task: sum(scores) / len(scores) for sub_task, scores in sub_task_to_eval_samples.items()}
    return accuracy, sub_task_accuracies


def _json(root, n=8):
    rng = random.Random(0)
    png = base64.b64encode(solid_image(root / "x.png", size=24).read_bytes()).decode()
    rows = [{"question_id": f"q{k}", "data_source": ["ai2thor", "mp3d", "scannet"][k % 3], "image": png,
             "question": f"Where is the lamp {k}?", "answer_options": ["left", "right", "above", "below"],
             "answer": rng.randrange(4), "relation": ["left", "above"][k % 2], "objects": ["lamp", "bed"]}
            for k in range(n)]
    (root / "embspatial_bench.json").write_text(json.dumps(rows))
    return rows


def test_json_and_parquet_copies_give_the_same_items(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = _json(tmp_path)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "test.parquet")
    a = rebuild_source({"name": "embspatial", "data": str(tmp_path / "embspatial_bench.json")}, 0)
    b = rebuild_source({"name": "embspatial", "data": str(tmp_path / "test.parquet")}, 0)
    assert [(i.key, i.gold, i.options) for i in a.items] == [(i.key, i.gold, i.options) for i in b.items]
    assert [i.gold for i in a.items] == ["ABCD"[r["answer"]] for r in rows]
    settings = {"name": "embspatial", "data": str(tmp_path / "test.parquet"), "subset": "mp3d"}
    assert len(rebuild_source(settings, 0).items) == 3


def test_an_item_states_the_fact_its_right_option_states(tmp_path):
    rows = _json(tmp_path, n=3)
    rows[0].update(answer_options=["The lamp is above the bed", "The lamp is below the bed"], answer=0)
    rows[1].update(answer_options=["The sofa is to the left of the tv", "The sofa is to the right of the tv"],
                   answer=1)
    (tmp_path / "embspatial_bench.json").write_text(json.dumps(rows))
    source = rebuild_source({"name": "embspatial", "data": str(tmp_path / "embspatial_bench.json")}, 0)
    assert [i.fact for i in source.items] == [("lamp", "above", "bed"), ("sofa", "to the right of", "tv"), None]


@needs_a_llava
def test_a_model_that_answers_a_scores_the_a_share_overall_and_per_relation(tmp_path):
    rows = _json(tmp_path, n=6)
    out = tmp_path / "run"
    metrics = bench_a("embspatial", tmp_path / "embspatial_bench.json", out)
    overall, per_relation = embspatial_aggregate_results(
        [{"sub_task": r["relation"], "is_correct": r["answer"] == 0} for r in rows])
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * overall)
    breakdown = metrics["accuracy"]["breakdown"]
    assert {k: breakdown[f"relation {k}"]["mean"] for k in per_relation} == pytest.approx(
        {k: 100 * v for k, v in per_relation.items()})
