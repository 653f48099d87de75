"""MMSI-Bench (spatialprobe/benchmarks/mmsi.py): its Hugging Face Parquet layout (a list of embedded
images per question, the options written in the question) and a TSV of base64 images through
the real loader and ``spatialprobe bench``, every image of a question asked together."""

from __future__ import annotations

import base64
import csv
import json

import pytest
from bench_a_helpers import bench_a, needs_a_llava
from vl_helpers import solid_image

from spatialprobe.benchmarks.mmsi import options_in
from spatialprobe.engine.rebuild import rebuild_source
from spatialprobe.errors import DataError

GOLD = ["A", "C", "B", "A", "D"]


def _copy(root):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pngs = [solid_image(root / f"{k}.png", (60 * k, 20, 20), size=16).read_bytes() for k in range(3)]
    rows = [{"id": k, "images": [{"bytes": p, "path": f"{k}_{j}.png"} for j, p in enumerate(pngs[:2 + k % 2])],
             "question": f"Where was camera 2 relative to camera 1, {k}? Options: A: left of it, B: right, C: above, "
                         "D: below", "answer": gold, "question_type": ["Motion (Cam.)", "Positional"][k % 2],
             "thought": "..."} for k, gold in enumerate(GOLD)]
    pq.write_table(pa.Table.from_pylist(rows), root / "test-00000-of-00001.parquet")
    with open(root / "MMSI_bench.tsv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, ["index", "image", "question", "answer", "category"], delimiter="\t")
        writer.writeheader()
        for k, r in enumerate(rows):
            writer.writerow({"index": k, "question": r["question"], "answer": r["answer"],
                             "category": r["question_type"],
                             "image": json.dumps([base64.b64encode(i["bytes"]).decode() for i in r["images"]])})
    return rows


def test_the_options_are_read_from_the_question_and_both_layouts_agree(tmp_path):
    assert options_in("Which? Options: A: left of it, B: right, C: above") == ("left of it", "right", "above")
    assert options_in("Which?\nOptions:\nA. yes\nB. no") == ("yes", "no")
    assert options_in("Which? Options: B: x, A: y") == ()
    _copy(tmp_path)
    a = rebuild_source({"name": "mmsi", "data": str(tmp_path / "test-00000-of-00001.parquet")}, 0)
    b = rebuild_source({"name": "mmsi", "data": str(tmp_path / "MMSI_bench.tsv")}, 0)
    assert [(i.gold, i.options, len(i.views)) for i in a.items] == [(i.gold, i.options, len(i.views)) for i in b.items]
    assert [len(i.views) for i in a.items] == [1, 2, 1, 2, 1]
    (tmp_path / "bad.jsonl").write_text(json.dumps({"id": 1, "images": ["0.png"], "question": "No options?",
                                                    "answer": "A"}) + "\n")
    with pytest.raises(DataError, match="cannot be read"):
        rebuild_source({"name": "mmsi", "data": str(tmp_path / "bad.jsonl")}, 0)


@needs_a_llava
def test_a_model_that_answers_a_scores_the_a_share(tmp_path):
    _copy(tmp_path)
    out = tmp_path / "run"
    metrics = bench_a("mmsi", tmp_path / "test-00000-of-00001.parquet", out)
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * GOLD.count("A") / len(GOLD))
