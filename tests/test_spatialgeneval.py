"""SpatialGenEval (spatialprobe/benchmarks/spatialgeneval.py): a small prompts file in its own JSONL
format with images given as ``{prompt: image}``, through ``spatialprobe bench`` with a tiny LLaVA
and through the engine with a judge that always answers A; avg/basic/spatial accuracy equal a
transcription of AMAP-ML/SpatialGenEval @8b294b5 scripts/spatialgeneval_stage2_acc.py on random
answers (a greedy judge's five answers are one answer repeated)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import ClassVar

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spatialprobe.benchmarks.spatialgeneval import from_settings, options_of

TYPES = ["Object", "Attribute", "Position", "Orientation", "Layout", "Comparison", "Proximity", "Occlusion",
         "Motion", "Causal"]


def _record(n: int, golds: str) -> dict:
    questions = [f"Question {j} about scene {n}?  Options: A: left, B: right, C: above, D: below, E: None"
                 for j in range(10)]
    return {"id": f"{n:06d}", "scene": "Forest", "prompt": f"scene number {n}", "question_type": TYPES,
            "questions": questions, "answers": list(golds)}


RECORDS = [_record(1, "ABCDEABCDA"), _record(2, "AAAABBBBCC"), _record(3, "ABABABABAB")]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from PIL import Image

    root = tmp_path_factory.mktemp("spatialgeneval")
    (root / "SpatialGenEval_T2I_Prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    mapping = {}
    for n, record in enumerate(RECORDS[:2]):
        Image.new("RGB", (32, 32), (0, 90 * n, 0)).save(root / f"{n}.png")
        mapping[record["prompt"]] = str(root / f"{n}.png")
    (root / "images.json").write_text(json.dumps(mapping))
    return root


def _source(files):
    return from_settings({"name": "spatialgeneval", "data": str(files / "SpatialGenEval_T2I_Prompts.jsonl"),
                   "images": str(files / "images.json")}, 0)


class SaysA:
    name = "says-a"
    protocols: ClassVar[tuple[str, ...]] = ("score", "generate")
    wordings: ClassVar[tuple[str, ...]] = ("question",)

    def score(self, requests, progress=None):
        return [tuple(0.0 if n == 0 else -1.0 for n in range(len(r.options))) for r in requests]

    def generate(self, requests, progress=None):
        return ["A: left - the object is on the left." for _ in requests]

    def describe(self):
        return {"model": "says-a"}


def test_questions_with_their_lettered_options(files):
    assert options_of(RECORDS[0]["questions"][0]) == ("Question 0 about scene 1?",
                                                      ("left", "right", "above", "below", "None"))
    source = _source(files)
    assert len(source.items) == 20 and source.details["prompts_without_images"] == 1
    assert source.items[0].question.endswith("A. left\nB. right\nC. above\nD. below\nE. None\n"
                                             "Answer with the option's letter.")
    assert [i.fields["part"] for i in source.items[:3]] == ["basic", "basic", "spatial"]


def test_a_judge_that_answers_a_scores_the_share_of_a(files, tmp_path):
    from spatialprobe.engine.run import ask_run
    from spatialprobe.runner.settings import Component

    summary = ask_run(_source(files), SaysA(), Component("fake", {"model": "says-a"}), None, tmp_path / "run",
                      protocol="both")
    share = 100 * sum(g == "A" for r in RECORDS[:2] for g in r["answers"]) / 20
    m = summary["metrics"]
    assert m["accuracy"]["mean"] == m["accuracy_generate"]["mean"] == share
    assert m["accuracy"]["breakdown"]["part basic"]["mean"] == 75.0  # gold A, B and A, A


def test_bench_with_a_tiny_llava_judge(files, tmp_path):
    from bench_helpers import yes_llava
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    llava = yes_llava()
    if llava is None:
        pytest.skip("../shared/models is not present")
    out = tmp_path / "run"
    data = files / "SpatialGenEval_T2I_Prompts.jsonl"
    said = CliRunner().invoke(app, ["bench", "spatialgeneval", "--data", str(data), "--images",
                                    str(files / "images.json"), "--model", str(llava), "--out", str(out),
                                    "--device", "cpu", "--limit", "1"])
    assert said.exit_code == 0, said.output
    summary = json.loads((out / "summary.json").read_text())
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 10
    assert summary["metrics"]["accuracy"]["mean"] == 10 * sum(r["pred"] == r["gold"] for r in rows)


def _check_qa_model_preds(answers, all_preds, min_count=3):
    """AMAP-ML/SpatialGenEval @8b294b5 scripts/spatialgeneval_stage2_acc.py, transcribed (the
    selected options it also returns are left out)."""
    num_questions = len(answers)
    results = []
    for q_idx in range(num_questions):
        option_count = {}
        valid_preds_for_q = [preds[q_idx] for preds in all_preds if len(preds) > q_idx]
        if not valid_preds_for_q:
            results.append(False)
            continue
        for option in valid_preds_for_q:
            option_count[option] = option_count.get(option, 0) + 1
        high_freq_options = [opt for opt, count in option_count.items() if count >= min_count]
        results.append(len(high_freq_options) > 0 and answers[q_idx] in high_freq_options)
    return results


def test_avg_basic_and_spatial_accuracy_equal_the_authors_vote_on_random_answers(files):
    from spatialprobe.engine.metrics import official_metrics

    source = _source(files)
    rng = random.Random(0)
    for _ in range(300):
        preds = {i.key: rng.choice("ABCDE") for i in source.items}
        rows = [{"instance_id": i.key, "gold": i.gold, "pred": preds[i.key], **i.fields} for i in source.items]
        ours = official_metrics(rows, source.spec, source.official)[0]["accuracy"]
        all_preds = []
        for record in RECORDS[:2]:
            once = [preds[f"{record['id']}.{j + 1}"] for j in range(10)]
            all_preds.append(_check_qa_model_preds(record["answers"], [once] * 5, min_count=4))
        column_sums = [sum(col) / len(all_preds) for col in zip(*all_preds, strict=True)]
        assert ours.mean == pytest.approx(100 * sum(column_sums) / 10)
        assert ours.breakdown["part basic"].mean == pytest.approx(100 * sum(column_sums[:2]) / 2)
        assert ours.breakdown["part spatial"].mean == pytest.approx(100 * sum(column_sums[2:]) / 8)
