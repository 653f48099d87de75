"""`spatialprobe import` gives exactly the number each harness's own code gives, or refuses with a
sentence naming file, line and field - every case through the command line, on logs written here
in each harness's real format: VLMEvalKit predictions read as VLMEvalKit reads them (its code
transcribed in tests/official/), Inspect epochs as one item each, lmms-eval's verdict objects,
lm-eval's acc_norm, the toolkit's own lm-eval export and two-field clusters, and hostile input."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from official import vlmeval as theirs
from official import vlmeval_spatial as theirs_spatial
from official.replies import replies
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.files import read_json, read_jsonl

runner = CliRunner()


def invoke(*args) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def refused(*args) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return " ".join(result.output.split())


def summaries(out: Path) -> list[dict]:
    return [read_json(p) for p in sorted(out.glob("*/summary.json"))]


# --- VLMEvalKit: unscored predictions read with its own reader ----------------------------------

OPTIONS = ["left", "right", "above", "below"]


def vlmeval_file(path: Path, rows: list[dict], header=("index", "question", "A", "B", "C", "D", "answer",
                                                       "prediction")) -> Path:
    """A prediction file as vlmeval/inference.py writes it (``.xlsx`` through openpyxl, else TSV)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".xlsx":
        openpyxl = pytest.importorskip("openpyxl")
        book = openpyxl.Workbook()
        book.active.append(list(header))
        for row in rows:
            book.active.append([row.get(h) for h in header])
        book.save(path)
    else:
        with open(path, "w", newline="") as handle:
            out = csv.writer(handle, delimiter="\t")
            out.writerow(header)
            out.writerows([[row.get(h, "") for h in header] for row in rows])
    return path


def random_rows(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for index in range(n):
        gold = rng.choice("ABCD")
        reply = replies(OPTIONS, gold, 1, seed=seed * 1000 + index)[0].text
        rows.append({"index": index, "question": f"Where is the cup {index}?",
                     **dict(zip("ABCD", OPTIONS, strict=True)), "answer": gold, "prediction": reply})
    return rows


def test_the_issues_four_replies_import_at_vlmevalkits_50_not_30(tmp_path):
    rows = [{"index": i, "question": "Where is the cup?", "A": "left", "B": "right", "answer": gold, "prediction": p}
            for i, (p, gold) in enumerate([("(B)", "B"), ("B. right", "B"), ("The answer is B", "B"), ("right", "A"),
                                           ("A or B", "A"), ("it is up", "B"), ("B", "B"), ("left", "B"), ("A", "A"),
                                           ("I don't know", "A")])]
    path = vlmeval_file(tmp_path / "outputs" / "Qwen2-VL" / "Qwen2-VL_SpatialTiny.xlsx", rows,
                        ("index", "question", "A", "B", "answer", "prediction"))
    out = invoke("import", "vlmeval", path, "--out", tmp_path / "runs")
    (summary,) = summaries(tmp_path / "runs")
    expected = theirs.mcq_vanilla_hits(rows, judge=None)  # VLMEvalKit's evaluation, exact matching
    assert summary["accuracy"]["mean"] == 100 * sum(expected) / len(rows) == 50.0
    assert "read with VLMEvalKit's can_infer" in out and "3 of 10 unreadable" in out
    assert summary["details"]["verdict"] == "read" and summary["details"]["unreadable"] == 3


@pytest.mark.parametrize("suffix", ["xlsx", "tsv"])
def test_random_replies_import_at_the_number_vlmevalkit_computes(tmp_path, suffix, monkeypatch):
    monkeypatch.delenv("VERBOSE", raising=False)
    rows = random_rows(400, 1)
    path = vlmeval_file(tmp_path / "outputs" / "M" / f"M_3DSRBench.{suffix}", rows)
    invoke("import", "vlmeval", path, "--out", tmp_path / "runs")
    (summary,) = summaries(tmp_path / "runs")
    hits = theirs.mcq_vanilla_hits(rows, judge=None)
    assert summary["accuracy"]["mean"] == pytest.approx(100 * sum(hits) / len(rows), abs=1e-9)
    unread = sum(not theirs.can_infer(r["prediction"], dict(zip("ABCD", OPTIONS, strict=True))) for r in rows)
    assert summary["details"]["unreadable"] == unread > 0


def test_vlmevalkits_spatial_suite_is_read_with_can_match_option(tmp_path):
    rows = random_rows(300, 2)
    path = vlmeval_file(tmp_path / "outputs" / "M" / "M_MMSIBench_wo_circular.tsv", rows)
    out = invoke("import", "vlmeval", path, "--out", tmp_path / "runs")
    (summary,) = summaries(tmp_path / "runs")
    hits = [theirs_spatial.compute_mcq_hit(r["prediction"], r["answer"])[1] for r in rows]
    assert summary["accuracy"]["mean"] == pytest.approx(100 * sum(hits) / len(rows), abs=1e-9)
    assert summary["task"] == "MMSIBench_wo_circular" and "read with VLMEvalKit's can_match_option" in out


def test_a_circular_dataset_scores_a_question_group_right_only_where_every_rotation_is(tmp_path):
    rows = []
    for g, replies_ in ((1, ("A", "B")), (2, ("A", "A")), (3, ("(B) right", "it is left"))):
        for k, reply in enumerate(replies_):
            gold = "AB"[k]  # rotation k moves the right option to letter k
            rows.append({"index": g + k * 1_000_000, "g_index": g, "question": "q", "A": "left", "B": "right",
                         "answer": gold, "prediction": reply})
    path = vlmeval_file(tmp_path / "outputs" / "M" / "M_MMBench_DEV_EN.tsv", rows,
                        ("index", "g_index", "question", "A", "B", "answer", "prediction"))
    invoke("import", "vlmeval", path, "--out", tmp_path / "runs")
    (summary,) = summaries(tmp_path / "runs")
    # group 1: A then B, both right; group 2: the second rotation wrong; group 3: "(B) right" is B, not A
    assert summary["accuracy"]["mean"] == pytest.approx(100 / 3) and summary["accuracy"]["n"] == 3


def test_an_empty_gold_cell_and_a_metric_a_file_lacks_are_refused(tmp_path):
    rows = [{**row, "prediction": "A"} for row in random_rows(5, 3)]
    rows[3]["answer"] = ""
    path = vlmeval_file(tmp_path / "outputs" / "M" / "M_Tiny.tsv", rows)
    out = refused("import", "vlmeval", path, "--out", tmp_path / "runs")
    assert "M_Tiny.tsv, line 5, field 'answer': is missing" in out
    rows[3]["answer"] = "B"
    vlmeval_file(path, rows)
    assert "no verdict (no 'hit' column)" in refused("import", "vlmeval", path, "--metric", "hit", "--out", tmp_path)


# --- Inspect: epochs are one item, reduced as Inspect reduces them ------------------------------

EPOCH_TASK = '''
from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState, generate

@scorer(metrics=[accuracy(), stderr()])
def by_epoch():
    async def score(state: TaskState, target: Target) -> Score:
        n = int(state.sample_id[1:])
        return Score(value=CORRECT if (n * 7 + state.epoch) % 3 else INCORRECT, answer=state.output.completion)
    return score

@task
def epoch_task(reducer: str = "mean"):
    return Task(dataset=[Sample(id=f"q{i}", input=f"Question {i}", target="x", metadata={"scene": f"s{i // 3}"})
                         for i in range(12)],
                solver=generate(), scorer=by_epoch(), epochs=Epochs(3, reducer))
'''


@pytest.fixture(scope="module")
def epoch_logs(tmp_path_factory):
    pytest.importorskip("inspect_ai")
    import inspect_ai.model._model as model_module
    import inspect_ai.model._tokens as tokens_module
    from inspect_ai import eval as inspect_eval

    folder = tmp_path_factory.mktemp("inspect_epochs")
    (folder / "epoch_task.py").write_text(EPOCH_TASK)
    patch = pytest.MonkeyPatch()
    patch.chdir(folder)
    for module in (model_module, tokens_module):  # no tiktoken download: a length-based token count
        patch.setattr(module, "count_text_tokens", lambda text: max(1, len(text) // 4))
    try:
        printed = {}
        for reducer in ("mean", "mode"):
            (log,) = inspect_eval("epoch_task.py", model="mockllm/model", log_dir=str(folder / reducer),
                                  task_args={"reducer": reducer}, display="none")
            printed[reducer] = log.results.scores[0].metrics["accuracy"].value
    finally:
        patch.undo()
    return folder, printed


@pytest.mark.parametrize("reducer", ["mean", "mode"])
def test_inspect_epochs_are_one_item_reduced_as_inspect_reduces_them(epoch_logs, tmp_path, reducer):
    folder, printed = epoch_logs
    out = invoke("import", "inspect", *folder.glob(f"{reducer}/*.eval"), "--cluster", "scene", "--out", tmp_path)
    (summary,) = summaries(tmp_path)
    assert summary["accuracy"]["mean"] == pytest.approx(100 * printed[reducer]) == summary["details"]["reported"]
    assert summary["accuracy"]["n"] == 12  # 12 samples, not 36 sample-epochs
    assert f"12 samples x 3 epochs, each sample one item, its epochs reduced by {reducer}" in out
    rows = read_jsonl(next(tmp_path.glob("*/predictions.jsonl")))
    assert [len(r["epochs"]) for r in rows] == [3] * 12


# --- lmms-eval: verdict objects; lm-eval: acc_norm -----------------------------------------------

def lmms_eval_log(folder: Path, task: str, key: str, objects: list[dict], reported: float | None) -> Path:
    """lmms-eval 0.7 ``--log_samples`` lines of a task whose process_results returns ``{key: object}``."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"doc_id": n, "target": obj["gt_content"], "filtered_resps": [obj["pred"]],
                         "input": f"q{n}", key: obj, "doc_hash": f"h{n}"}) + "\n" for n, obj in enumerate(objects)]
    path = folder / f"20260101_120000_samples_{task}.jsonl"
    path.write_text("".join(lines))
    results = {"results": {task: {f"{key},none": reported}} if reported is not None else {},
               "configs": {task: {"output_type": "generate_until"}}, "model_name": "llava-hf/llava-1.5-7b-hf",
               "lmms_eval_version": "0.7.0", "git_hash": "75571cf"}
    (folder / "20260101_120000_results.json").write_text(json.dumps(results))
    return path


def test_lmms_eval_cv_bench_and_embspatial_verdict_objects_import(tmp_path):
    preds = ["(A)", "B", "C", "A", "B. right", "D"]
    golds = ["A", "B", "A", "A", "B", "C"]
    cv = [{"id": n, "gt_content": g, "pred_parsed": p[1] if p.startswith("(") else p[0], "pred": p, "type": "2D",
           "task": "Count", "source": "COCO", "is_correct": (p.strip("(")[0] == g)} for n, (p, g) in
          enumerate(zip(preds, golds, strict=True))]
    path = lmms_eval_log(tmp_path / "cv", "cv_bench_2d", "cv_bench_acc", cv, 4 / 6)
    invoke("import", "lmms-eval", path, "--out", tmp_path / "runs")
    (summary,) = summaries(tmp_path / "runs")
    assert summary["accuracy"]["mean"] == pytest.approx(100 * 4 / 6) == summary["details"]["reported"]
    emb = [{"id": f"e{n}", "gt_content": g, "pred": p, "sub_task": "left", "is_correct": p == g}
           for n, (p, g) in enumerate([("A", "A"), ("B", "C"), ("D", "D")])]
    path = lmms_eval_log(tmp_path / "emb", "embspatial", "embspatial_acc", emb, 2 / 3)
    invoke("import", "lmms-eval", path, "--cluster", "sub_task", "--out", tmp_path / "emb_runs")
    (summary,) = summaries(tmp_path / "emb_runs")
    assert summary["accuracy"]["mean"] == pytest.approx(200 / 3) == summary["details"]["reported"]


def test_lmms_eval_lines_scored_by_different_fields_are_refused(tmp_path):
    path = tmp_path / "20260101_120000_samples_t.jsonl"
    path.write_text(json.dumps({"doc_id": 0, "target": "a", "filtered_resps": ["a"], "exact_match": 1.0}) + "\n" +
                    json.dumps({"doc_id": 1, "target": "b", "filtered_resps": ["a"], "anls": 0.0}) + "\n")
    out = refused("import", "lmms-eval", path, "--model", "m", "--out", tmp_path / "runs")
    assert "samples_t.jsonl, line 2, field 'anls': scores this line where the lines before are scored by " \
           "'exact_match'" in out


def lm_eval_log(folder: Path, task: str, docs: list[dict], acc: list[float], acc_norm: list[float]) -> Path:
    """lm-eval 0.4 ``--log_samples`` lines of a multiple-choice task reporting acc and acc_norm."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, (doc, a, b) in enumerate(zip(docs, acc, acc_norm, strict=True)):
        lines.append(json.dumps({"doc_id": n, "doc": doc, "target": str(doc.get("gold", 0)),
                                 "arguments": {"gen_args_0": {"arg_0": "ctx", "arg_1": " x"}},
                                 "resps": [[["-1.0", "False"]], [["-2.0", "False"]]],
                                 "filtered_resps": [["-1.0", "False"], ["-2.0", "False"]], "filter": "none",
                                 "metrics": ["acc", "acc_norm"], "acc": a, "acc_norm": b}) + "\n")
    date = "2026-01-01T00-00-00.000000"
    (folder / f"samples_{task}_{date}.jsonl").write_text("".join(lines))
    results = {"results": {task: {"acc,none": sum(acc) / len(acc), "acc_norm,none": sum(acc_norm) / len(acc)}},
               "configs": {task: {"output_type": "multiple_choice"}}, "model_name": "gpt2", "lm_eval_version": "0.4.13"}
    (folder / f"results_{date}.json").write_text(json.dumps(results))
    return folder / f"samples_{task}_{date}.jsonl"


def test_lm_eval_acc_norm_is_chosen_with_metric(tmp_path):
    docs = [{"question": f"q{n}", "choices": ["a", "b"], "gold": n % 2} for n in range(8)]
    path = lm_eval_log(tmp_path / "lm", "tiny", docs, [1, 0, 1, 0, 1, 0, 1, 0], [1, 1, 1, 0, 1, 1, 1, 0])
    invoke("import", "lm-eval", path, "--metric", "acc_norm", "--out", tmp_path / "norm")
    (summary,) = summaries(tmp_path / "norm")
    assert summary["accuracy"]["mean"] == 75.0 == summary["details"]["reported"]
    assert summary["details"]["metric"] == "acc_norm"
    invoke("import", "lm-eval", path, "--out", tmp_path / "acc")
    assert summaries(tmp_path / "acc")[0]["accuracy"]["mean"] == 50.0
    assert "not 'bleu' (--metric)" in refused("import", "lm-eval", path, "--metric", "bleu", "--out", tmp_path / "x")


def test_the_toolkits_own_lm_eval_export_imports_with_both_objects_as_clusters(tmp_path):
    from spatialprobe.prompts.lm_eval_export import lm_eval_docs
    from spatialprobe.tasks import data as task_data

    docs = lm_eval_docs(task_data.load("size"))[:120]
    rng = random.Random(0)
    acc = [float(rng.random() < 0.6) for _ in docs]
    path = lm_eval_log(tmp_path / "lm", "spatialprobe_size", docs, acc, acc)
    invoke("import", "lm-eval", path, "--out", tmp_path / "own")
    (own,) = summaries(tmp_path / "own")
    assert own["intervals"]["clusters"] == ["obj_a", "obj_b"] and own["details"]["unit"] == "obj_a, obj_b"
    rows = read_jsonl(next((tmp_path / "own").glob("*/predictions.jsonl")))
    assert rows[0]["instance_id"] == docs[0]["id"] and rows[0]["obj_a"] == docs[0]["obj_a"]
    # the same as naming both fields, either way; one field alone is another (narrower) unit
    for spelled in (["--cluster", "obj_a,obj_b"], ["--cluster", "obj_a", "--cluster", "obj_b"]):
        out = tmp_path / "-".join(spelled)
        invoke("import", "lm-eval", path, *spelled, "--out", out)
        assert summaries(out)[0]["accuracy"] == own["accuracy"]
    invoke("import", "lm-eval", path, "--cluster", "obj_b", "--out", tmp_path / "one")
    assert summaries(tmp_path / "one")[0]["accuracy"]["ci"] != own["accuracy"]["ci"]
    assert "a row belongs to one cluster" in refused("import", "lm-eval", path, "--cluster", "obj_a,obj_b,id",
                                                     "--out", tmp_path / "x")


# --- hostile input ----------------------------------------------------------------------------------

def eee_line(sample: str, correct: bool, score=None, fold=None, model="m") -> str:
    meta = {"spatialprobe.group": "fold", "row.fold": str(fold)} if fold is not None else {}
    return json.dumps({"schema_version": "0.3.0", "evaluation_id": "e", "model_id": model, "evaluation_name": "b",
                       "sample_id": sample, "interaction_type": "single_turn",
                       "input": {"raw": "q", "reference": ["yes"]}, "answer_attribution": [],
                       "evaluation": {"score": float(correct) if score is None else score, "is_correct": correct},
                       "metadata": meta}) + "\n"


def test_eee_repeated_ids_within_a_fold_and_non_finite_scores_are_refused(tmp_path):
    path = tmp_path / "x_samples.jsonl"
    path.write_text(eee_line("a", True, fold=0) + eee_line("b", False, fold=0) + eee_line("a", True, fold=0)
                    + eee_line("a", True, fold=1))
    assert "repeats the item id 'a' in fold 0" in refused("import", "eee", path, "--out", tmp_path / "r")
    for bad in ("NaN", "Infinity"):
        path.write_text(eee_line("a", True).replace('"score": 1.0', f'"score": {bad}'))
        out = refused("import", "eee", path, "--out", tmp_path / "r")
        assert "x_samples.jsonl, line 1, field 'evaluation.score': is " in out and "not a finite score" in out


def test_lm_eval_text_nan_missing_gold_and_out_of_range_scores_are_refused(tmp_path):
    bad = tmp_path / "samples_t_2026-01-01T00-00-00.jsonl"
    bad.write_text(json.dumps({"doc_id": 0, "target": "0", "filtered_resps": ["1"], "metrics": ["acc"],
                               "acc": "nan"}) + "\n")
    assert "line 1, field 'acc': is 'nan', not a finite score" in refused("import", "lm-eval", bad, "--model", "m",
                                                                          "--out", tmp_path / "r")
    (tmp_path / "p.json").write_text(json.dumps([{"id": 1, "pred": "a", "gold": None}]))
    out = refused("import", "plain", tmp_path / "p.json", "--id", "id", "--prediction", "pred", "--gold", "gold",
                  "--out", tmp_path / "r")
    assert "field 'gold': is missing: the item has no gold answer" in out
    (tmp_path / "s.csv").write_text("id,gold,verdict\n1,a,1\n2,a,3\n")
    out = refused("import", "plain", tmp_path / "s.csv", "--id", "id", "--gold", "gold", "--metric", "verdict",
                  "--out", tmp_path / "r")
    assert "scores item '2' 3, outside [0, 1]" in out


@pytest.mark.parametrize("fmt", ["plain", "vlmeval"])
def test_an_over_long_csv_cell_is_refused_naming_file_line_and_field(tmp_path, fmt):
    long = "x" * 140_000
    if fmt == "plain":
        path = tmp_path / "p.csv"
        path.write_text(f"id,pred,gold\n1,a,a\n2,{long},a\n")
        args = ["--id", "id", "--prediction", "pred", "--gold", "gold"]
        field = "pred"
    else:
        path = tmp_path / "outputs" / "M" / "M_T.csv"
        path.parent.mkdir(parents=True)
        path.write_text(f"index,A,B,answer,prediction\n1,l,r,A,A\n2,l,r,A,{long}\n")
        args, field = [], "prediction"
    out = refused("import", fmt, path, *args, "--out", tmp_path / "r")
    assert f"line 3, field '{field}': holds 140,000 characters, over the 131,072" in out


def test_repeats_of_one_item_are_one_cluster(tmp_path):
    rows = "".join(f"q{i}#{k},{'a' if (i + k) % 3 else 'b'},a\n" for i in range(10) for k in range(3))
    (tmp_path / "r.csv").write_text("id,pred,gold\n" + rows)
    out = invoke("import", "plain", tmp_path / "r.csv", "--id", "id", "--prediction", "pred", "--gold", "gold",
                 "--out", tmp_path / "runs")
    assert "30 rows are repeats (ID#k) of 10 items: each item's repeats one cluster" in out
    rows_ = read_jsonl(next((tmp_path / "runs").glob("*/predictions.jsonl")))
    assert rows_[0]["cluster"] == "q0" and summaries(tmp_path / "runs")[0]["accuracy"]["mean"] == pytest.approx(200 / 3)


def test_two_models_that_map_to_one_folder_get_a_sentence_that_helps(tmp_path):
    path = tmp_path / "x_samples.jsonl"
    path.write_text(eee_line("a", True, model="org/m1") + eee_line("a", False, model="org_m1"))
    out = refused("import", "eee", path, "--out", tmp_path / "runs")
    assert "the models 'org/m1' and 'org_m1' (b) would both be written to" in out and "different --out" in out
    path.write_text(eee_line("a", True, model="org/m1"))
    invoke("import", "eee", path, "--out", tmp_path / "runs")
    path.write_text(eee_line("a", True, model="org_m1"))
    assert "holds an import of the model 'org/m1'" in refused("import", "eee", path, "--out", tmp_path / "runs")


def test_export_csv_escapes_formula_cells(tmp_path):
    hostile = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://x","y")', "@SUM(1+1)", "+1", "-1", "\tx", "\rx", "fine"]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"id": f"i{n}", "pred": p, "gold": "fine"}) + "\n"
                            for n, p in enumerate(hostile)))
    invoke("import", "plain", path, "--id", "id", "--prediction", "pred", "--gold", "gold", "--out", tmp_path / "runs")
    (run,) = (tmp_path / "runs").iterdir()
    invoke("export", run, "--out", tmp_path / "items.csv")
    with open(tmp_path / "items.csv", newline="") as handle:
        cells = [row["prediction"] for row in csv.DictReader(handle)]
    assert cells == ["'" + h for h in hostile[:-1]] + ["fine"]


def test_a_plain_verdict_file_of_object_pairs_imports_with_both_objects_and_replays(tmp_path):
    objects = [f"o{k}" for k in range(8)]
    rng = random.Random(4)
    lines = [f"{a}-{b},{a},{b},yes,{int(rng.random() < 0.7)}" for a in objects for b in objects if a != b]
    (tmp_path / "pairs.csv").write_text("id,obj_a,obj_b,gold,correct\n" + "\n".join(lines) + "\n")
    invoke("import", "plain", tmp_path / "pairs.csv", "--id", "id", "--gold", "gold", "--metric", "correct",
           "--cluster", "obj_a,obj_b", "--out", tmp_path / "runs")
    (summary,) = summaries(tmp_path / "runs")
    right = sum(int(line.rsplit(",", 1)[1]) for line in lines)
    assert summary["accuracy"]["mean"] == pytest.approx(100 * right / len(lines))
    assert summary["intervals"]["clusters"] == ["obj_a", "obj_b"] and "objects" in summary["intervals"]["method"]
    (run,) = (tmp_path / "runs").iterdir()
    assert "confirmed" in invoke("run", run / "config.json")  # the replay reads both fields again
