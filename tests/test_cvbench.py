"""CV-Bench (spatialprobe/benchmarks/cvbench.py): test.jsonl + img/ and the Parquet test_2d/test_3d
through the real loader and ``spatialprobe bench``; the official combination equal to lmms-eval's
``cv_bench_default_aggregate_results`` and the official reader to its ``_extract_answer_letter``, both
as transcribed in tests/official/lmms_first_letter.py, on thousands of random predictions and replies."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
from bench_a_helpers import bench_a, needs_a_llava
from official import lmms_first_letter as o_lmms
from vl_helpers import solid_image

from spatialprobe.benchmarks.cvbench import matching
from spatialprobe.engine.rebuild import rebuild_source
from spatialprobe.errors import UsageError
from spatialprobe.metrics.weighted import STATISTICS
from spatialprobe.readers.lmms import first_letter as lmms_letter

SOURCES = ["ADE20K", "COCO", "Omni3D"]


def rows(n=18, seed=0):
    """CV-Bench records: uneven sources (the three odd cases), 2 to 6 choices, gold letters mixed."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        source = SOURCES[0] if k < n // 2 else SOURCES[1] if k < n // 2 + n // 6 else SOURCES[2]
        choices = [f"{c}" for c in range(int(rng.integers(2, 7)))] if k % 3 else ["left", "right"]
        kind = "3D" if source == "Omni3D" else "2D"
        out.append({"idx": k, "type": kind, "task": "Depth" if kind == "3D" else "Relation", "source": source,
                    "image": f"img/{kind}/{source.lower()}_{k}.png", "question": f"Which is closer, {k}?",
                    "choices": choices, "answer": f"({chr(65 + int(rng.integers(len(choices))))})",
                    "filename": f"img/{kind}/{source.lower()}_{k}.png"})
    return out


def test_the_combination_equals_lmms_eval_on_random_predictions(tmp_path):
    for seed in range(3):
        records = rows(30 + 7 * seed, seed)
        for n, r in enumerate(records):
            r["idx"] = n
        tmp = tmp_path / f"copy{seed}"
        for r in records:
            solid_image(tmp / r["image"], size=8)
        (tmp / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        source = rebuild_source({"name": "cv-bench", "data": str(tmp / "test.jsonl")}, 0)
        rng = np.random.default_rng(seed)
        for _ in range(1000):
            picks = [chr(65 + int(rng.integers(len(i.options)))) for i in source.items]
            official = o_lmms.cv_bench_default_aggregate_results(
                [{"source": i.fields["source"], "is_correct": p == i.gold} for i, p in zip(source.items, picks,
                                                                                         strict=True)])
            values = np.array([matching(i, None, p)["cv_bench_value"]
                               for i, p in zip(source.items, picks, strict=True)])
            ours = STATISTICS["mean"](np.zeros(len(values)), values, np.ones((1, len(values))), 0)[0]
            assert ours == pytest.approx(100 * official, abs=1e-9)


@needs_a_llava
def test_a_model_that_answers_a_scores_the_share_of_a_gold_items_from_jsonl_and_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    records = rows()
    copy = tmp_path / "cv-bench"
    for n, r in enumerate(records):
        solid_image(copy / r["image"], (20 * n % 255, 100, 50), size=16)
    (copy / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    for kind in ("2D", "3D"):  # the Hub's layout: test_2d / test_3d with the image bytes embedded
        part = [{**r, "image": {"bytes": (copy / r["image"]).read_bytes(), "path": r["image"].split("/")[-1]}}
                for r in records if r["type"] == kind]
        pq.write_table(pa.Table.from_pylist(part), parquet / f"test_{kind.lower()}.parquet")
    from_jsonl = rebuild_source({"name": "cv-bench", "data": str(copy / "test.jsonl")}, 0)
    from_parquet = rebuild_source({"name": "cv-bench", "data": str(parquet)}, 0)
    assert [(i.key, i.gold, i.options) for i in from_jsonl.items] == [(i.key, i.gold, i.options)
                                                                       for i in from_parquet.items]
    metrics = bench_a("cv-bench", parquet, tmp_path / "run")
    gold_a = [r["answer"] == "(A)" for r in records]
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * sum(gold_a) / len(records))
    official = o_lmms.cv_bench_default_aggregate_results([{"source": r["source"], "is_correct": a}
                                                          for r, a in zip(records, gold_a, strict=True)])
    assert metrics["cv_bench"]["mean"] == pytest.approx(100 * official)
    assert set(metrics["accuracy"]["breakdown"]) >= {"source ADE20K", "source COCO", "source Omni3D"}
    assert metrics["strict_accuracy"]["mean"] == metrics["accuracy"]["mean"]  # the reply "A" reads the same
    assert metrics["strict_cv_bench"]["mean"] == pytest.approx(metrics["cv_bench"]["mean"])


def test_the_official_reader_reads_a_reply_as_lmms_eval_does():
    rng = random.Random(0)
    pieces = ["A", "b", "(C)", "D.", " ", "The answer is B", "(", ")", ".", "x", "1", "\n", "é", "Answer: A"]
    for _ in range(3000):
        reply = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
        assert lmms_letter(reply) == o_lmms._extract_answer_letter(reply)
    assert lmms_letter("The answer is B") == "T"  # the quirk the official reader keeps


def test_a_subset_the_copy_holds_no_question_of_is_refused_in_one_sentence(tmp_path):
    data = tmp_path / "test.jsonl"
    data.write_text(json.dumps({"idx": 0, "type": "2D", "question": "Which is closer?", "choices": ["a", "b"],
                                "answer": "(A)", "source": "COCO", "image": "x.png"}) + "\n")
    with pytest.raises(UsageError, match=re.escape(f"{data}: no CV-Bench questions of type '3D'")):
        rebuild_source({"name": "cv-bench", "data": str(data), "subset": "3D"}, 0)
