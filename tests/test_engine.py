"""The one asked-items engine: the same items give the same rows whatever the model family.

A fake contrastive scorer that knows which captions are true gives the CLIP baseline's predictions and
official metrics (accuracy per category and relation, macro-F1: scikit-learn's) through the engine;
a tiny CLIP and a LLaVA wired to answer Yes, run on the same VSR items, share keys and clusters, the LLaVA scores
exactly the share of true captions, and ``spatialprobe report A B`` prints their paired difference.
"""

from __future__ import annotations

import json
from typing import ClassVar

import pytest
from mllm_helpers import SHARED, build
from typer.testing import CliRunner
from vl_helpers import solid_image, tiny_clip

from spatialprobe.benchmarks.vsr import vsr_source
from spatialprobe.cli import app
from spatialprobe.engine.run import ask_run
from spatialprobe.errors import UsageError
from spatialprobe.files import read_jsonl
from spatialprobe.runner.settings import Component

CAPTIONS = [("cat", "dog", "left of"), ("car", "bus", "on"), ("cup", "table", "near"),
            ("bird", "tree", "above"), ("boat", "fish", "below"), ("horse", "fence", "congruent")]


class Knows:
    """A contrastive scorer that gives 1 to the sentences it knows true, 0 to any other."""

    name = "knows"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("contrastive",)

    def __init__(self, true: set[str]):
        self.true = true

    def score(self, requests, progress=None):
        return [tuple(float(r.prefix + o + r.suffix in self.true) for o in r.options) for r in requests]

    def describe(self):
        return {"model": "knows"}


@pytest.fixture()
def vsr_files(tmp_path):
    images, rows = tmp_path / "coco", []
    for n, (a, b, rel) in enumerate(CAPTIONS * 2):
        image = f"{n // 2:012d}.jpg"  # two captions per image: the image is the cluster
        solid_image(images / image, (30 * n % 255, 90, 160))
        rows.append({"image": image, "caption": f"The {a} is {rel} the {b}.", "label": int(n % 3 == 0),
                     "relation": rel, "subj": a, "obj": b})
    path = tmp_path / "vsr" / "random" / "test.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, images, rows


def test_the_contrastive_wording_gives_the_clip_baselines_predictions_and_official_metrics(vsr_files, tmp_path):
    """The caption is true where it outscores its negation (ties: false); accuracy per category and
    per relation and macro-F1 equal scikit-learn's on the same predictions."""
    from sklearn.metrics import accuracy_score, f1_score

    from spatialprobe.benchmarks.vsr import relations

    path, images, rows = vsr_files
    # right on every true caption and on half the false ones (whose caption it also calls true)
    knows = Knows({r["caption"] for n, r in enumerate(rows) if r["label"] or n % 2})
    source, _ = vsr_source(path, images)
    new = ask_run(source, knows, Component("contrastive", {"model": "knows"}), None, tmp_path / "new")
    new_rows = read_jsonl(tmp_path / "new" / "predictions.jsonl")
    gold = ["yes" if r["label"] else "no" for r in rows]
    pred = ["yes" if r["caption"] in knows.true else "no" for r in rows]  # a negation is never known true
    assert [r["pred"] for r in new_rows] == pred and [r["gold"] for r in new_rows] == gold
    assert [r["instance_id"] for r in new_rows] == [f"random-test-{n:05d}" for n in range(len(rows))]
    metrics = new["metrics"]
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * accuracy_score(gold, pred))
    assert metrics["macro_f1"]["mean"] == pytest.approx(100 * f1_score(gold, pred, labels=["yes", "no"],
                                                                       average="macro", zero_division=0))
    table = relations()
    expected = {}
    for key, of in (("category", lambda r: table[r["relation"]].category), ("relation", lambda r: r["relation"])):
        for group in {of(r) for r in rows} - {None}:  # 'congruent' has no category: in none
            members = [n for n, r in enumerate(rows) if of(r) == group]
            expected[f"{key} {group}"] = (100 * accuracy_score([gold[n] for n in members], [pred[n] for n in members]),
                                          len(members))
    got = {k: (v["mean"], v["n"]) for k, v in metrics["accuracy"]["breakdown"].items()}
    assert got == {k: (pytest.approx(v), n) for k, (v, n) in expected.items()}
    assert "relation congruent" in got and not any(k.startswith("category None") for k in got)
    assert new["details"]["wording"] == "contrastive"


def test_a_model_that_understands_no_wording_the_source_offers_is_refused(vsr_files, tmp_path):
    class ClozeOnly(Knows):
        wordings: ClassVar[tuple[str, ...]] = ("cloze",)

    source, _ = vsr_source(*vsr_files[:2])
    with pytest.raises(UsageError, match="understands cloze wording, and vsr offers question, contrastive"):
        ask_run(source, ClozeOnly(set()), Component("cloze-only", {}), None, tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.skipif(not (SHARED / "llava-1.5-7b-hf").is_dir(), reason="../shared/models (LLaVA processor) is absent")
def test_a_clip_and_a_llava_run_on_the_same_vsr_items_pair_in_report(vsr_files, tmp_path):
    path, images, rows = vsr_files
    clip = tiny_clip(tmp_path / "clip")
    llava = build("llava", tmp_path / "llava", bias_word="Yes")
    source, _ = vsr_source(path, images)
    a = ask_run(source, None, Component("contrastive", {"model": str(clip)}), None, tmp_path / "a")
    b = ask_run(source, None, Component("hf-mllm", {"model": str(llava)}), None, tmp_path / "b")
    rows_a = read_jsonl(tmp_path / "a" / "predictions.jsonl")
    rows_b = read_jsonl(tmp_path / "b" / "predictions.jsonl")
    same = ("instance_id", "condition", "gold", "image", "relation", "category")
    assert [{k: r[k] for k in same} for r in rows_a] == [{k: r[k] for k in same} for r in rows_b]
    assert {r["pred"] for r in rows_a} <= {"yes", "no"} and {r["pred"] for r in rows_b} == {"yes"}
    true_share = 100.0 * (sum(r["label"] for r in rows) / len(rows))  # 100 × (a/b), as the registry
    assert b["metrics"]["accuracy"]["mean"] == true_share  # Yes to every caption: the true share
    assert a["intervals"]["clusters"] == b["intervals"]["clusters"] == ["image"]
    result = CliRunner().invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    text = result.output.replace("\n", " ")
    assert "(same items)" in text and "| accuracy |" in text
    acc_a = a["metrics"]["accuracy"]["mean"]
    assert f"{acc_a - true_share:+.1f}" in text


def _mqa_sklearn(gold, pred):
    """SpatialMQA's official figures by scikit-learn, as Code/eval/calculate_prf1.py computes them: macro
    P, R and F1 over the relations in gold, and the benchmark's F1 = 2PR/(P+R), in percent."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    labels = sorted(set(gold))
    p, r, f, _ = precision_recall_fscore_support(gold, pred, labels=labels, average="macro", zero_division=0)
    return {"accuracy": 100 * accuracy_score(gold, pred), "precision": 100 * p, "recall": 100 * r,
            "macro_f1": 100 * f, "f1": 100 * (2 * p * r / (p + r) if p + r else 0.0)}


def test_the_spatialmqa_contrastive_wording_gives_the_benchmarks_official_metrics(tmp_path):
    """A fake similarity that prefers one option per question: the engine's lenient/strict accuracy,
    macro-F1, P, R and F1 = 2PR/(P+R), per perspective and axis, equal scikit-learn's."""
    from spatialprobe.benchmarks.spatialmqa import axis, perspective, spatialmqa_source

    records = [{"image": f"{n}.jpg", "question": q, "options": o, "answer": a} for n, (q, o, a) in enumerate([
        ("Where is the cup relative to the plate?", ["left of", "right of"], "left of"),
        ("Where is the lamp relative to the bed?", ["on/above", "below", "behind"], "below"),
        ("Where is the dog relative to you?", ["in front of", "behind"], "in front of"),
        ("If you sit on the sofa, where is the picture relative to you?", ["on/above", "below"], "on/above"),
        ("Where is the bag relative to the chair?", ["left of", "right of", "behind"], "behind"),
        ("Where is the mug relative to the laptop?", ["in front of", "behind", "below"], "behind")])]
    for record in records:
        solid_image(tmp_path / "coco" / record["image"])
    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    chosen = {": " + r["question"]: r["answer"] for r in records}  # the template's suffix names the question
    chosen[": " + records[0]["question"]] = "right of"  # wrong on the first question only

    class Similarity:
        name = "contrastive"
        protocols: ClassVar[tuple[str, ...]] = ("score",)
        wordings: ClassVar[tuple[str, ...]] = ("contrastive",)

        def score(self, requests, progress=None):
            return [tuple(float(o == chosen[r.suffix]) for o in r.options) for r in requests]

        def describe(self):
            return {"model": "similarity"}

    source, _ = spatialmqa_source(data, tmp_path / "coco")
    new = ask_run(source, Similarity(), Component("contrastive", {"model": "similarity"}), None, tmp_path / "new")
    pred = [chosen[": " + r["question"]] for r in records]
    assert [r["pred"] for r in read_jsonl(tmp_path / "new" / "predictions.jsonl")] == pred
    gold = [r["answer"] for r in records]
    groups = {"": list(range(len(records)))}
    for n, r in enumerate(records):
        groups.setdefault(f"perspective {perspective(r['question'])}", []).append(n)
        groups.setdefault(f"axis {axis(r['answer'])}", []).append(n)
    for group, members in groups.items():
        expected = _mqa_sklearn([gold[n] for n in members], [pred[n] for n in members])
        for name, value in expected.items():
            for prefix in ("", "strict_"):  # a chosen option is both the strict and the lenient label
                metric = new["metrics"][prefix + name]
                got = metric["mean"] if not group else metric["breakdown"][group]["mean"]
                assert got == pytest.approx(value), (group, prefix + name)
    assert new["metrics"]["accuracy"]["mean"] == pytest.approx(500 / 6)


def test_a_vilt_and_a_t5_run_on_the_same_qa_items_pair_in_report(tmp_path):
    """T5 trained to know 12 posrel questions (100) and a ViLT-VQA that says yes to everything, shown a
    blank image (exactly 50 on a balanced set): the same rows, and report A B pairs them (+50.0)."""
    from qa_helpers import make_t5, make_vilt, train_t5

    from spatialprobe.benchmarks.qa import qa_source
    from spatialprobe.files import write_jsonl
    from spatialprobe.models.qa_models import unifiedqa_input
    from spatialprobe.tasks import data as task_data
    from spatialprobe.tasks.yes_no import QASet, asked_objects, build_qa, to_qa_records

    qa = build_qa(task_data.load("posrel"))
    by_object: dict[str, list] = {}
    for item in qa.items:  # 4 questions about each of 3 objects: the clusters
        by_object.setdefault(asked_objects(item.question)[1], []).append(item)
    items = tuple(i for group in list(by_object.values())[:3] for i in group[:4])
    write_jsonl(tmp_path / "qa.jsonl", to_qa_records(QASet(qa.name, "test", qa.task, items)))
    texts = [i.full_text for i in items]
    t5 = train_t5(make_t5(tmp_path / "t5", texts), [unifiedqa_input(i.question, i.context) for i in items],
                  [i.answer for i in items])
    vilt = make_vilt(tmp_path / "vilt", texts, {"yes": 1.0, "no": 0.0})
    source, _ = qa_source(None, str(tmp_path / "qa.jsonl"))
    a = ask_run(source, None, Component("t5", {"model": str(t5)}), None, tmp_path / "a", condition="none")
    b = ask_run(source, None, Component("vilt-vqa", {"model": str(vilt)}), None, tmp_path / "b", condition="blank")
    assert (a["details"]["wording"], b["details"]["wording"]) == ("short", "short")
    assert a["metrics"]["accuracy"]["mean"] == 100.0 and b["metrics"]["accuracy"]["mean"] == 50.0
    rows_a = read_jsonl(tmp_path / "a" / "predictions.jsonl")
    rows_b = read_jsonl(tmp_path / "b" / "predictions.jsonl")
    same = ("instance_id", "gold", "obj_a", "obj_b", "relation")
    assert [{k: r[k] for k in same} for r in rows_a] == [{k: r[k] for k in same} for r in rows_b]
    assert a["intervals"]["clusters"] == b["intervals"]["clusters"] == ["obj_b"]  # posrel: by object
    result = CliRunner().invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert "(same items)" in result.output and "| accuracy | 100.0 | 50.0 | +50.0 |" in result.output
