"""`spatialprobe import FORMAT` and `spatialprobe export`: other harnesses' per-item logs
become run folders that give exactly the accuracy the harness printed; a native run exported to
Every Eval Ever and imported back gives the same items, scores and intervals; hostile input is
refused naming file, line and field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.errors import DataError, UsageError
from spatialprobe.files import read_json, read_jsonl
from spatialprobe.interop.imported_run import import_logs

runner = CliRunner()
DATA = Path(__file__).parent / "data" / "interop"
SHARED = Path(__file__).resolve().parents[2] / "shared"


def invoke(*args: str) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def imported(out: Path) -> list[dict]:
    return [read_json(p) for p in sorted(out.glob("*/summary.json"))]


# --- lm-evaluation-harness ---------------------------------------------------------------------

def test_an_lm_eval_log_gives_the_accuracy_lm_eval_printed(tmp_path):
    """The committed fixture (tests/data/interop/README.md says how the real harness made it)."""
    invoke("import", "lm-eval", *DATA.glob("lm_eval/samples_*.jsonl"), "--out", tmp_path)
    (summary,) = imported(tmp_path)
    assert summary["accuracy"]["mean"] == 60.0 == summary["details"]["reported"]  # lm-eval printed acc 0.6
    assert summary["accuracy"]["n"] == 10 and summary["kind"] == "imported" and summary["task"] == "spatial_tiny"
    provenance = summary["details"]["log_provenance"]
    assert provenance["harness_version"] == "0.4.13" and provenance["task_version"] == 1.0
    assert provenance["dataset_revision"] == "ea9e282e903da87d9e7a4a025cf34cc762fa5274131ec32bfd6ac2dfc35f64b2"
    config = read_json(next(tmp_path.glob("*/config.json")))
    assert [len(f["sha256"]) for f in config["settings"]["files"]] == [64, 64]  # samples + results
    rows = read_jsonl(next(tmp_path.glob("*/predictions.jsonl")))  # the argmax option is lm-eval's acc
    assert all(r["correct"] == (r["pred"] == r["gold"]) for r in rows) and rows[0]["protocol"] == "multiple_choice"


def test_lm_eval_run_here_offline_imports_to_what_it_printed(tmp_path):
    """How the committed fixture was made, run again: the real harness, offline, a tiny GPT-2."""
    pytest.importorskip("lm_eval")
    if not (SHARED / "models" / "roberta-base").is_dir():
        pytest.skip("../shared/models absent (GPT-2's BPE)")
    sys.path.insert(0, str(Path(__file__).parent))
    import torch
    from causal_helpers import gpt2_config, gpt2_tokenizer
    from transformers import GPT2LMHeadModel

    tokenizer = gpt2_tokenizer(SHARED)
    torch.manual_seed(1)
    GPT2LMHeadModel(gpt2_config(tokenizer)).save_pretrained(tmp_path / "gpt2")
    tokenizer.save_pretrained(tmp_path / "gpt2")
    task = (DATA / "lm_eval" / "spatial_tiny.yaml").read_text().replace("/tmp/lmw/task/items.jsonl",
                                                                          str(DATA / "lm_eval" / "items.jsonl"))
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "spatial_tiny.yaml").write_text(task)
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
                           f"pretrained={tmp_path / 'gpt2'}", "--tasks", "spatial_tiny", "--include_path",
                           str(tmp_path / "task"), "--device", "cpu", "--batch_size", "4", "--output_path",
                           str(tmp_path / "out"), "--log_samples"], capture_output=True, text=True, env=env,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    row = next(line for line in done.stdout.splitlines() if line.startswith("|spatial_tiny"))
    printed = float(row.split("|")[7])  # |Tasks|Version|Filter|n-shot|Metric|↑|Value|...
    invoke("import", "lm-eval", *tmp_path.glob("out/*/samples_*.jsonl"), "--out", tmp_path / "runs")
    (summary,) = imported(tmp_path / "runs")
    assert summary["accuracy"]["mean"] == pytest.approx(100 * printed) == summary["details"]["reported"]


# --- Inspect -----------------------------------------------------------------------------------

TASK = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate

@task
def tiny_spatial():
    out = "Default output from mockllm/model"  # what the mock model answers: 2 of 5 targets
    targets = [out, "no", out, "yes", "left"]
    return Task(dataset=[Sample(id=f"q{i}", input=f"Question {i}: is A left of B?", target=t,
                                metadata={"scene": f"s{i // 2}"}) for i, t in enumerate(targets)],
                solver=generate(), scorer=match(location="exact"))
'''


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory):
    """An Inspect run of a tiny task with its mock model, in both log formats. Inspect estimates
    token counts with tiktoken's o200k_base, which it would download: a length-based estimate
    stands in (it changes no answer and no score)."""
    pytest.importorskip("inspect_ai")
    import inspect_ai.model._model as model_module
    import inspect_ai.model._tokens as tokens_module
    from inspect_ai import eval as inspect_eval

    folder = tmp_path_factory.mktemp("inspect")
    (folder / "tiny_task.py").write_text(TASK)
    patch = pytest.MonkeyPatch()
    patch.chdir(folder)  # Inspect takes a task file by a relative path
    for module in (model_module, tokens_module):
        patch.setattr(module, "count_text_tokens", lambda text: max(1, len(text) // 4))
    try:
        printed = []
        for fmt in ("eval", "json"):
            (log,) = inspect_eval("tiny_task.py", model="mockllm/model", log_dir=str(folder / fmt),
                                  log_format=fmt, display="none")
            printed.append(log.results.scores[0].metrics["accuracy"].value)
    finally:
        patch.undo()
    return folder, printed


def test_inspect_logs_give_the_accuracy_inspect_printed(inspect_logs, tmp_path):
    folder, printed = inspect_logs
    assert printed == [0.4, 0.4]
    for fmt in ("eval", "json"):
        invoke("import", "inspect", *folder.glob(f"{fmt}/*.{fmt}"), "--cluster", "scene", "--out", tmp_path / fmt)
        (summary,) = imported(tmp_path / fmt)
        assert summary["accuracy"]["mean"] == 40.0 == summary["details"]["reported"]
        assert summary["model"] == "mockllm/model" and summary["intervals"]["clusters"] == ["cluster"]
        assert summary["details"]["unit"] == "clusters (scene)"
        rows = read_jsonl(next((tmp_path / fmt).glob("*/predictions.jsonl")))
        assert [r["cluster"] for r in rows] == ["s0", "s0", "s1", "s1", "s2"]
        assert {r["reply"] for r in rows} == {"Default output from mockllm/model"}  # what audit parse reads


# --- lmms-eval: fixtures written by its own serialisation code path -----------------------------

def lmms_eval_line(sample: dict, flatten: bool) -> str:
    """One line as lmms-eval's ``EvaluationTracker.save_results_samples`` writes it: 0.6
    (EvolvingLMMs-Lab/lmms-eval @c7eaef37 ``lmms_eval/loggers/evaluation_tracker.py``) and, with
    ``flatten``, 0.7 (@75571cf, the same file; ``docs/releases/lmms-eval-0.7.md`` §12). The steps
    are that function's, in its order; ``sanitize_list`` (``lmms_eval/loggers/utils.py``) turns
    tuples into lists, as ``json`` does here."""
    sample = json.loads(json.dumps(sample))
    sample["input"] = sample["arguments"][0]
    if flatten:
        if isinstance(sample["resps"], list) and len(sample["resps"]) == 1:
            sample["resps"] = sample["resps"][0]
        if isinstance(sample["filtered_resps"], list) and len(sample["filtered_resps"]) == 1:
            sample["filtered_resps"] = sample["filtered_resps"][0]
        if sample["resps"] == sample["filtered_resps"] or (  # their if/elif, both branches popping
                isinstance(sample["resps"], list) and len(sample["resps"]) == 1
                and sample["resps"][0] == sample["filtered_resps"]):
            sample.pop("resps")
    elif sample["filtered_resps"] == sample["resps"][0] or sample["filtered_resps"] == sample["resps"]:
        sample.pop("resps")
    sample["target"] = str(sample["target"])
    sample.pop("arguments")
    sample.pop("doc")
    return json.dumps(sample, ensure_ascii=False) + "\n"


ANSWERS = [("yes", "yes"), ("no", "yes"), ("no", "no"), ("yes", "yes"), ("yes", "no"), ("no", "no")]


def write_lmms_eval(folder: Path, flatten: bool) -> Path:
    """A generate_until task (``exact_match`` per line) and its results file, as lmms-eval writes them."""
    folder.mkdir(parents=True)
    lines = []
    for doc_id, (reply, gold) in enumerate(ANSWERS):
        sample = {"doc_id": doc_id, "doc": {"question": f"q{doc_id}", "image_id": f"img{doc_id // 2}"},
                  "target": gold, "arguments": [f"q{doc_id}", {"max_new_tokens": 8}],
                  "resps": [[f"{reply}"]], "filtered_resps": [[reply]] if not flatten else [reply],
                  "doc_hash": f"h{doc_id}", "exact_match": float(reply == gold)}
        if flatten:  # 0.7 keeps the raw response list when it differs from the filtered one
            sample["resps"] = [[f"{reply}."]]
        lines.append(lmms_eval_line(sample, flatten))
    path = folder / "20260101_120000_samples_vsr_yesno.jsonl"
    path.write_text("".join(lines))
    results = {"results": {"vsr_yesno": {"exact_match,none": 4 / 6}}, "configs": {"vsr_yesno": {
        "output_type": "generate_until"}}, "versions": {"vsr_yesno": 0}, "task_hashes": {"vsr_yesno": "abc"},
        "model_name": "llava-hf/llava-1.5-7b-hf", "git_hash": "75571cf",
        "lmms_eval_version": "0.7.0" if flatten else "0.6"}
    (folder / "20260101_120000_results.json").write_text(json.dumps(results))
    return path


@pytest.mark.parametrize("flatten", [False, True], ids=["0.6 nested", "0.7 flattened"])
def test_lmms_eval_logs_in_both_layouts(tmp_path, flatten):
    path = write_lmms_eval(tmp_path / "logs", flatten)
    first = json.loads(path.read_text().splitlines()[0])
    assert first["filtered_resps"] == ("yes" if flatten else [["yes"]])
    invoke("import", "lmms-eval", path, "--out", tmp_path / "runs")
    (summary,) = imported(tmp_path / "runs")
    assert summary["accuracy"]["mean"] == pytest.approx(100 * 4 / 6) == summary["details"]["reported"]
    rows = read_jsonl(next((tmp_path / "runs").glob("*/predictions.jsonl")))
    assert [r["pred"] for r in rows] == [reply for reply, _ in ANSWERS]
    assert summary["details"]["log_provenance"]["harness_commit"] == "75571cf"


# --- VLMEvalKit ----------------------------------------------------------------------------------

HEADER = ["index", "question", "A", "B", "answer", "prediction", "category"]
PREDICTIONS = [[1, "Is the cat left of the dog?", "yes", "no", "A", "A", "left"],
               [2, "Is the cup on the table?", "yes", "no", "B", "A. yes", "on"],
               [3, "Is the bird above the tree?", "yes", "no", "B", "(B) no", "above"],
               [4, "Is the car behind the bus?", "yes", "no", "A", "B", "behind"]]


def test_vlmeval_prediction_files_xlsx_tsv_csv_agree(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    folder = tmp_path / "outputs" / "Qwen2.5-VL-3B"
    folder.mkdir(parents=True)
    book = openpyxl.Workbook()
    book.active.append(HEADER)
    for row in PREDICTIONS:
        book.active.append(row)
    book.save(folder / "Qwen2.5-VL-3B_MiniSpatial.xlsx")
    for suffix, sep in (("tsv", "\t"), ("csv", ",")):
        (folder / f"Qwen2.5-VL-3B_MiniSpatial.{suffix}").write_text(
            "\n".join(sep.join(str(v) for v in row) for row in [HEADER, *PREDICTIONS]) + "\n")
    for suffix in ("xlsx", "tsv", "csv"):
        invoke("import", "vlmeval", folder / f"Qwen2.5-VL-3B_MiniSpatial.{suffix}", "--out", tmp_path / suffix)
        (summary,) = imported(tmp_path / suffix)
        assert (summary["model"], summary["task"], summary["accuracy"]["mean"]) == (
            "Qwen2.5-VL-3B", "MiniSpatial", 50.0)
        rows = read_jsonl(next((tmp_path / suffix).glob("*/predictions.jsonl")))
        assert [r["pred"] for r in rows] == ["A", "A", "B", "B"]


def test_vlmeval_circular_rotations_cluster_by_g_index_and_a_result_file_keeps_hit(tmp_path):
    folder = tmp_path / "outputs" / "M"
    folder.mkdir(parents=True)
    # vlmeval/dataset/utils/multiple_choice.py mcq_circular_eval: rotation k of question g has
    # index g + k * 1e6 and g_index g; the _result file holds one row per group, hit 1 only
    # where every rotation was right.
    rows = [[g + k * 1_000_000, g, "B" if (g + k) % 2 else "A", "A" if g == 1 or k == 0 else "B"]
            for g in (1, 2) for k in range(2)]
    (folder / "M_CircBench.tsv").write_text("index\tg_index\tanswer\tprediction\n" +
                                            "".join("\t".join(map(str, r)) + "\n" for r in rows))
    invoke("import", "vlmeval", folder / "M_CircBench.tsv", "--out", tmp_path / "pred")
    (summary,) = imported(tmp_path / "pred")
    assert summary["details"]["unit"] == "clusters (g_index)" and summary["accuracy"]["n"] == 4
    (folder / "M_CircBench_exact_matching_result.tsv").write_text(
        "index\tg_index\tanswer\tprediction\thit\n1\t1\tB\tA\t0\n2\t2\tA\tA\t1\n")
    invoke("import", "vlmeval", folder / "M_CircBench_exact_matching_result.tsv", "--out", tmp_path / "res")
    (summary,) = imported(tmp_path / "res")
    assert (summary["task"], summary["accuracy"]["mean"], summary["details"]["unit"]) == (
        "CircBench", 50.0, "instances")


# --- plain, replay, export, round trip -----------------------------------------------------------

def test_plain_json_with_records_and_clusters(tmp_path):
    path = tmp_path / "paper.json"
    path.write_text(json.dumps({"meta": {}, "preds": [
        {"qid": i, "answer": g, "output": p, "img": f"i{i // 2}"}
        for i, (p, g) in enumerate([("Yes", "yes"), ("no", "yes"), ("no", "no"), (" yes", "yes")])]}))
    invoke("import", "plain", path, "--id", "qid", "--prediction", "output", "--gold", "answer", "--records", "preds",
           "--cluster", "img", "--model", "paper-model", "--benchmark", "vsr", "--out", tmp_path / "runs")
    (summary,) = imported(tmp_path / "runs")
    assert summary["accuracy"]["mean"] == 75.0 and summary["intervals"]["clusters"] == ["cluster"]
    assert "the unit of the interval: clusters (img)" in next((tmp_path / "runs").glob("*/table.md")).read_text()


def test_a_replay_reimports_and_a_changed_log_is_refused(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("id,pred,gold\n1,a,a\n2,b,a\n")
    ((folder, _),) = import_logs("plain", [path], tmp_path / "runs", {"id": "id", "prediction": "pred", "gold": "gold"})
    assert "confirmed" in invoke("run", folder / "config.json")
    path.write_text("id,pred,gold\n1,a,a\n2,a,a\n")
    result = runner.invoke(app, ["run", str(folder / "config.json")])
    assert result.exit_code == 2 and f"{path}: has changed since it was imported" in result.output


def test_hostile_lines_are_refused_naming_file_line_and_field(tmp_path):
    bad = tmp_path / "samples_t_2026-01-01T00-00-00.jsonl"
    bad.write_text('{"doc_id": 0, "target": "0", "filtered_resps": ["1"], "metrics": ["acc"], "acc": 1}\n{oops\n')
    with pytest.raises(DataError, match=r"samples_t_.*\.jsonl, line 2: is not JSON"):
        import_logs("lm-eval", [bad], tmp_path / "r", {"model": "m"})
    bad.write_text('{"doc_id": 0, "target": "0", "filtered_resps": ["1"], "metrics": ["acc"], "acc": "high"}\n')
    with pytest.raises(DataError, match=r"line 1, field 'acc': must be a number"):
        import_logs("lm-eval", [bad], tmp_path / "r", {"model": "m"})
    eee = tmp_path / "x_samples.jsonl"
    eee.write_text(json.dumps({"schema_version": "0.3.0", "evaluation_id": "e", "model_id": "m",
                               "evaluation_name": "b", "sample_id": "1", "interaction_type": "single_turn",
                               "input": {"raw": "q", "reference": ["a"]}, "answer_attribution": []}) + "\n")
    with pytest.raises(DataError, match=r"x_samples.jsonl, line 1, field 'evaluation': is missing"):
        import_logs("eee", [eee], tmp_path / "r", {})
    with pytest.raises(UsageError, match="--records does not apply to the lm-eval format"):
        import_logs("lm-eval", [bad], tmp_path / "r", {"records": "x"})


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    """A native probe run (dummy scorer: folds, rows of two objects)."""
    from spatialprobe.probing.run import ProbeSettings, run_probe
    from spatialprobe.prompts.templates import resolve
    from spatialprobe.tasks import data as task_data

    out = tmp_path_factory.mktemp("native") / "size-dummy"
    run_probe(task_data.load("size"), resolve("manual", "size"), ProbeSettings(model="dummy", seed=0), out)
    return out


def test_a_native_run_exported_to_eee_and_imported_back_is_the_same(native, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    invoke("export", native, "--format", "eee", "--out", tmp_path / "eee")
    (aggregate,) = tmp_path.glob("eee/data/spatialprobe/*/*/*[0-9a-f].json")
    (samples,) = tmp_path.glob("eee/data/spatialprobe/*/*/*_samples.jsonl")
    jsonschema.validate(read_json(aggregate), json.loads((DATA / "eee" / "eval.schema.json").read_text()))
    instance_schema = json.loads((DATA / "eee" / "instance_level_eval.schema.json").read_text())
    records = read_jsonl(samples)
    for record in records[:50]:
        jsonschema.validate(record, instance_schema)
    assert read_json(aggregate)["detailed_evaluation_results"]["file_path"] == str(
        samples.relative_to(tmp_path / "eee"))
    invoke("import", "eee", samples, "--out", tmp_path / "back")
    (back,) = imported(tmp_path / "back")
    original = read_json(native / "summary.json")
    assert back["accuracy"] == original["accuracy"]  # mean, spread over folds, n, interval, per fold
    assert back["dataset"] == original["dataset"]
    keys = lambda rows: sorted((r["instance_id"], r["fold"], r["pred"] == r["gold"]) for r in rows)  # noqa: E731
    rows_back = read_jsonl(next((tmp_path / "back").glob("*/predictions.jsonl")))
    assert sorted((r["instance_id"], r["fold"], r["correct"]) for r in rows_back) == keys(
        read_jsonl(native / "predictions.jsonl"))
    # the native run and its imported copy, side by side: paired on the same items, nothing differs
    from spatialprobe.reports.compare import load_compared

    back_folder = next((tmp_path / "back").glob("*/predictions.jsonl")).parent
    compared, spec = load_compared([native, back_folder])
    assert spec.pred == "correct" and [len(c.rows) for c in compared] == [1600, 1600]
    invoke("report", native, back_folder, "--out", tmp_path / "r.md")
    assert "| share (%) | 50.8 | 50.8 | +0.0 | [0.0, 0.0] | 1.000 | n.s. |" in (tmp_path / "r.md").read_text()


def test_two_imported_models_are_paired_by_report(tmp_path):
    for name, preds in (("a", "aaab"), ("b", "abbb")):
        (tmp_path / f"{name}.csv").write_text("id,pred,gold\n" + "".join(f"{i},{p},a\n" for i, p in enumerate(preds)))
    done = import_logs("plain", [tmp_path / "a.csv", tmp_path / "b.csv"], tmp_path / "runs",
                       {"id": "id", "prediction": "pred", "gold": "gold", "benchmark": "toy"})
    invoke("report", *(folder for folder, _ in done), "--out", tmp_path / "r.md")
    text = (tmp_path / "r.md").read_text()
    assert "## Paired: A = " in text and "| share (%) | 75.0 | 25.0 | +50.0 |" in text  # accuracy: share correct


def test_export_writes_one_long_table_pandas_reads_in_one_line(native, tmp_path):
    import pandas as pd

    path = tmp_path / "plain.csv"
    path.write_text("id,pred,gold,img\n1,a,a,x\n2,b,a,y\n")
    ((folder, _),) = import_logs("plain", [path], tmp_path / "runs", {"id": "id", "prediction": "pred", "gold": "gold",
                                                                       "cluster": "img"})
    invoke("export", native, folder, "--out", tmp_path / "all.csv")
    table = pd.read_csv(tmp_path / "all.csv")
    assert list(table.columns) == ["run", "model", "benchmark", "item", "fold", "cluster", "condition", "protocol",
                                   "gold", "prediction", "correct", "score"]
    assert len(table) == 1600 + 2 and table[table.benchmark == "size"].correct.mean() * 100 == pytest.approx(
        read_json(native / "summary.json")["accuracy"]["mean"])
    assert table[table.run == str(folder)].cluster.tolist() == ["x", "y"]
    pytest.importorskip("pyarrow")
    invoke("export", native, folder, "--format", "parquet", "--out", tmp_path / "all.parquet")
    parquet = pd.read_parquet(tmp_path / "all.parquet")  # the same table, its columns typed
    assert parquet.shape == table.shape and parquet.correct.tolist() == table.correct.tolist()


VSR_TEST = SHARED / "data" / "vsr" / "random" / "test.jsonl"


@pytest.mark.skipif(not VSR_TEST.is_file(), reason="../shared/data/vsr absent")
def test_items_joined_to_the_vsr_source_take_its_images_as_clusters_and_its_breakdown(tmp_path):
    data = VSR_TEST
    gold = ["yes" if json.loads(line)["label"] == 1 else "no" for line in data.read_text().splitlines()[:20]]
    path = tmp_path / "preds.csv"  # doc_id: the position in the source's file, as lm-eval and lmms-eval log it
    path.write_text("doc_id,pred,gold\n" + "".join(f"{i},yes,{g}\n" for i, g in enumerate(gold)))
    invoke("import", "plain", path, "--id", "doc_id", "--prediction", "pred", "--gold", "gold", "--benchmark",
           "vsr", "--source", "vsr", "--data", data, "--out", tmp_path / "runs")
    (summary,) = imported(tmp_path / "runs")
    assert summary["accuracy"]["mean"] == 100 * gold.count("yes") / 20 and summary["intervals"]["clusters"] == ["image"]
    assert summary["dataset"].startswith("vsr-random-test@") and "accuracy_by_category" in summary["metrics"]
    rows = read_jsonl(next((tmp_path / "runs").glob("*/predictions.jsonl")))
    assert all(r["source_gold"] == r["gold"] for r in rows)  # the same items, in the same order


def test_a_missing_extra_is_one_sentence_naming_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if inspect_ai were not installed
    (tmp_path / "x.eval").write_bytes(b"")
    result = runner.invoke(app, ["import", "inspect", str(tmp_path / "x.eval"), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and 'pip install "spatialprobe[interop]"' in result.output.replace("'", '"')
