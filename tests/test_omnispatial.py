"""OmniSpatial (spatialprobe/benchmarks/omnispatial.py): the authors' layout and the two lmms-eval
re-hosts recognised and recorded, the authors' three readers and per-task accuracy equal to their
api_eval.py (tests/official) on thousands of random replies, and ``spatialprobe bench omnispatial``
greedy and with ``--samples 5 --temperature 0.7`` (the mean over runs the paper reports)."""

from __future__ import annotations

from collections import Counter

import pytest
from bench_a_helpers import bench_a, needs_a_llava
from five_copies import omnispatial as write_copy
from five_helpers import random_script, rows, run_scripted, scored_rows
from official import omnispatial as theirs
from official.replies import replies

from spatialprobe.engine.metrics import official_metrics
from spatialprobe.engine.rebuild import rebuild_source
from spatialprobe.errors import UsageError
from spatialprobe.readers.omnispatial import read_omnispatial

JSON_REPLIES = ['```json\n{"analysis": "x", "answer": "b"}\n```', '{"answer": 3}', '[1, 2]', '{"answer": " c"}',
                "not json", '{"analysis": "no answer"}', ""]


def _parquet(path, rows_):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows_), path)
    return path


def test_the_authors_layout_and_both_re_hosts_are_read_and_named(tmp_path):
    root, records = write_copy(tmp_path / "authors", n=12)
    authors = rebuild_source({"name": "omnispatial", "data": str(root)}, 0)
    assert len(authors.items) == 12 and len({i.fields["image"] for i in authors.items}) == 6
    assert authors.details["copy"]["read"] == ["qizekun/OmniSpatial data.json (the authors' layout)"]
    png = (root / records[0]["task_type"] / "0.png").read_bytes()
    snapshot = tmp_path / "pangyyyyy"
    (snapshot / "images").mkdir(parents=True)
    (snapshot / "images" / "0.png").write_bytes(png)
    lmms = [{**{k: r[k] for k in ("id", "question", "options", "task_type", "sub_task_type")},
             "gt": "ABCD"[r["answer"]], "image_path": "images/0.png"} for r in records]
    pang = rebuild_source({"name": "omnispatial", "data": str(_parquet(snapshot / "test.parquet", lmms))}, 0)
    nv = rebuild_source({"name": "omnispatial", "data": str(_parquet(
        tmp_path / "nv" / "test-00000-of-00001.parquet",
        [{**r, "image": {"bytes": png, "path": "0.png"}} for r in records]))}, 0)
    assert pang.details["copy"]["read"][0].startswith("pangyyyyy/OmniSpatial")
    assert nv.details["copy"]["read"][0].startswith("nv-njb/OmniSpatial-Test")
    assert [i.gold for i in pang.items] == [i.gold for i in nv.items] == [i.gold for i in authors.items]
    assert len({authors.dataset, pang.dataset, nv.dataset}) == 3  # each copy named by its own content hash
    with pytest.raises(UsageError, match="readers here are re, direct, json"):
        rebuild_source({"name": "omnispatial", "data": str(root), "options": {"reader": "llm"}}, 0)


@pytest.mark.parametrize("eval_type", ["re", "direct", "json"])
def test_the_official_reading_and_per_task_accuracy_equal_api_eval_on_random_replies(tmp_path, eval_type):
    root, records = write_copy(tmp_path / "copy", n=120)
    source = rebuild_source({"name": "omnispatial", "data": str(root), "options": {"reader": eval_type}}, 0)
    runs = [[replies(list(i.options), i.gold, 1, seed=r * 1000 + n)[0].text for n, i in enumerate(source.items)]
            for r in range(10)]  # 1,200 replies, as ten repeated runs
    runs[0][:len(JSON_REPLIES)] = JSON_REPLIES
    pooled = []
    for run in runs:
        assert [read_omnispatial(t, eval_type) for t in run] == [theirs.read_letter(t, eval_type) for t in run]
        pooled += scored_rows(source, run)
    assert source.reader == f"omnispatial-{eval_type}"
    metrics, _ = official_metrics(pooled, source.spec, source.official, strict=True)
    expected = theirs.evaluate(records, runs, eval_type)
    accuracy = metrics["accuracy"]
    assert accuracy.mean == pytest.approx(expected["Overall"], rel=1e-6)
    for task, parts in expected.items():
        if task == "Overall":
            continue
        assert accuracy.breakdown[f"task_type {task}"].mean == pytest.approx(parts["Total"], rel=1e-6)
        for sub, value in parts.items():
            if sub != "Total" and f"sub_task_type {sub}" in accuracy.breakdown:
                assert accuracy.breakdown[f"sub_task_type {sub}"].mean == pytest.approx(value, rel=1e-6)


def test_an_unread_reply_is_answer_a_and_lower_case_never_right():
    assert read_omnispatial("I cannot tell.") == "A"
    assert read_omnispatial("answer: b") == "b"
    assert read_omnispatial("Answer: C\nAnswer: B") == "B"


def test_five_sampled_runs_give_the_mean_the_authors_pool(tmp_path):
    root, records = write_copy(tmp_path / "copy", n=24)
    source = rebuild_source({"name": "omnispatial", "data": str(root)}, 0)
    script = {i.question: [r.text for r in replies(list(i.options), i.gold, 4, seed=n)]
              for n, i in enumerate(source.items)}
    summary = run_scripted("omnispatial", root, script, tmp_path, "--samples", "5", "--temperature", "0.7")
    found = rows(tmp_path)
    assert Counter(r["sample"] for r in found) == dict.fromkeys(range(5), 24)
    by_key = {(r["instance_id"], r["sample"]): r["reply"] for r in found}
    runs = [[by_key[(i.key, k)] for i in source.items] for k in range(5)]
    expected = theirs.evaluate(records, runs)
    accuracy = summary["metrics"]["accuracy"]
    assert accuracy["mean"] == pytest.approx(expected["Overall"], rel=1e-6)
    assert accuracy["ci"][0] < accuracy["mean"] < accuracy["ci"][1]
    assert "sampling" in summary["details"]
    strict = summary["metrics"]["strict_accuracy"]
    assert strict["mean"] == pytest.approx(100 * sum(r["pred_strict"] == r["gold"] for r in found) / len(found))


def test_bench_greedy_on_the_authors_layout(tmp_path):
    root, records = write_copy(tmp_path / "copy", n=20)
    source = rebuild_source({"name": "omnispatial", "data": str(root)}, 0)
    script = random_script(source, 2)
    summary = run_scripted("omnispatial", root, script, tmp_path)
    expected = theirs.evaluate(records, [[script[i.question][0] for i in source.items]])
    assert summary["metrics"]["accuracy"]["mean"] == pytest.approx(expected["Overall"], rel=1e-6)
    assert summary["intervals"]["clusters"] == ["image"]
    assert summary["details"]["readers"]["official"] == "omnispatial-re"
    asked = rebuild_source({"name": "omnispatial", "data": str(root), "options": {"reader": "direct"}}, 0)
    script = random_script(asked, 3)  # the prompt ends in the direct reader's instruction
    direct = run_scripted("omnispatial", root, script, tmp_path / "direct", "--option", "reader=direct")
    expected = theirs.evaluate(records, [[script[i.question][0] for i in asked.items]], "direct")
    assert direct["metrics"]["accuracy"]["mean"] == pytest.approx(expected["Overall"], rel=1e-6)
    assert direct["details"]["readers"]["official"] == "omnispatial-direct"


@needs_a_llava
def test_a_tiny_model_answering_a_reads_as_a(tmp_path):
    root, records = write_copy(tmp_path / "copy", n=12)
    metrics = bench_a("omnispatial", root, tmp_path / "run", "--option", "reader=direct")
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * sum(r["answer"] == 0 for r in records) / 12)
