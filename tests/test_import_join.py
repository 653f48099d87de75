"""`spatialprobe import ... --source NAME --data FILE`: an imported log joined to the benchmark it was
run on takes the benchmark's item keys, clusters and official breakdown, and pairs with a native run of
the same file in `report` and `compare` - VSR, and a benchmark module (CV-Bench), through the command
line."""

from __future__ import annotations

import json

import pytest
from test_imports_exact import invoke, lmms_eval_log

from spatialprobe.files import read_json, read_jsonl


def test_an_lmms_eval_log_joined_to_vsr_pairs_with_a_native_vsr_run(tmp_path):
    from mllm_helpers import SHARED, build
    from vl_helpers import solid_image

    if not (SHARED / "llava-1.5-7b-hf").is_dir():
        pytest.skip("../shared/models (genuine LLaVA processor files) is absent")
    images, rows = tmp_path / "coco", []
    for k in range(12):
        image = f"{k // 2:012d}.jpg"
        solid_image(images / image, (40 * k % 255, 90, 160))
        rows.append({"image": image, "caption": f"The cat {k} is left of the dog.", "label": int(k % 3 == 0),
                     "relation": "left of", "subj": f"cat{k}", "obj": "dog"})
    (tmp_path / "vsr" / "random").mkdir(parents=True)
    data = tmp_path / "vsr" / "random" / "test.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = build("llava", tmp_path / "llava", bias_word="Yes")
    invoke("vsr", "--model", model, "--data", tmp_path / "vsr", "--images", images, "--out", tmp_path / "native",
           "--protocol", "generate", "--max-new-tokens", "3")
    answers = ["yes" if k % 2 else "no" for k in range(12)]
    samples = tmp_path / "lmms" / "20260101_120000_samples_vsr.jsonl"
    samples.parent.mkdir()
    samples.write_text("".join(json.dumps({"doc_id": k, "target": "yes" if r["label"] else "no",
                                           "filtered_resps": [a], "exact_match": float(a == ("yes" if r["label"]
                                                                                              else "no"))}) + "\n"
                               for k, (r, a) in enumerate(zip(rows, answers, strict=True))))
    invoke("import", "lmms-eval", samples, "--model", "other", "--source", "vsr", "--data", data,
           "--out", tmp_path / "imported")
    (imported,) = (tmp_path / "imported").iterdir()
    joined = read_jsonl(imported / "predictions.jsonl")
    assert joined[0]["instance_id"] == "random-test-00000" and joined[0]["log_id"] == "0"
    invoke("report", tmp_path / "native", imported, "--out", tmp_path / "r.md")
    assert "## Paired" in (tmp_path / "r.md").read_text()
    out = invoke("compare", tmp_path / "native", imported, "--out", tmp_path / "cmp")
    assert read_json(tmp_path / "cmp" / "compare.json")["n"] == 12 and "images" in out + json.dumps(
        read_json(tmp_path / "cmp" / "compare.json")["intervals"])


def test_an_lmms_eval_log_joined_to_a_benchmark_module_takes_its_items_clusters_and_pairs(tmp_path, monkeypatch):
    """Any registered benchmark joins, not only VSR and SpatialMQA: an lmms-eval CV-Bench log joined to the
    CV-Bench copy a native run read (--source cv-bench --data COPY) takes its item keys, its image clusters and
    its official breakdown, and pairs with the native run in report and compare."""
    monkeypatch.chdir(tmp_path)
    invoke("models", "tiny", "llava", "--out", tmp_path / "tiny-models" / "llava")
    invoke("bench", "cv-bench", "--demo", "--device", "cpu", "--protocol", "generate", "--out", tmp_path / "native")
    copy = tmp_path / "demo-data" / "cv-bench" / "test.jsonl"
    docs = read_jsonl(copy)
    objects = [{"id": d["idx"], "gt_content": d["answer"].strip("()"), "pred": "(A)", "pred_parsed": "A",
                "type": d["type"], "task": d["task"], "source": d["source"], "is_correct": d["answer"] == "(A)"}
               for d in docs]
    right = sum(o["is_correct"] for o in objects)
    path = lmms_eval_log(tmp_path / "lmms", "cv_bench", "cv_bench_acc", objects, right / len(objects))
    invoke("import", "lmms-eval", path, "--model", "other", "--source", "cv-bench", "--data", copy,
           "--out", tmp_path / "imported")
    (imported,) = (tmp_path / "imported").iterdir()
    joined, native = read_jsonl(imported / "predictions.jsonl"), read_jsonl(tmp_path / "native" / "predictions.jsonl")
    assert sorted(r["instance_id"] for r in joined) == sorted(r["instance_id"] for r in native)
    assert [r["log_id"] for r in joined] == [str(n) for n in range(len(docs))]
    summary = read_json(imported / "summary.json")
    assert summary["accuracy"]["mean"] == pytest.approx(100 * right / len(docs)) == summary["details"]["reported"]
    assert summary["intervals"]["clusters"] == ["image"]
    assert {"accuracy_by_source", "accuracy_by_type", "accuracy_by_task"} <= set(summary["metrics"])
    invoke("report", tmp_path / "native", imported, "--out", tmp_path / "r.md")
    assert "## Paired" in (tmp_path / "r.md").read_text()
    invoke("compare", tmp_path / "native", imported, "--out", tmp_path / "cmp")
    assert read_json(tmp_path / "cmp" / "compare.json")["n"] == len(docs)
