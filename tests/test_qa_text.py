"""Text QA with a tiny T5 built in the test: scoring, a memorized known answer, runs, resume, CLI."""

from __future__ import annotations

import json

import pytest
from interval_helpers import wilson
from qa_helpers import make_t5, train_t5
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.files import write_jsonl
from spatialprobe.models.qa_models import T5YesNo, unifiedqa_input
from spatialprobe.store import list_runs
from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.yes_no import QASet, build_qa, to_qa_records

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def posrel_qa():
    qa = build_qa(task_data.load("posrel"))
    # Two scenarios of different objects (4 questions) and their pairs with other actions.
    items = tuple(i for i in qa.items if i.context in (
        "A man drives the bus.", "A man cleans the bus.", "A girl rides the camel.", "A girl leads the camel."))
    return QASet(qa.name, "test", qa.task, items)


@pytest.fixture(scope="module")
def trained_t5(tmp_path_factory, posrel_qa):
    path = make_t5(tmp_path_factory.mktemp("t5") / "t5", [i.full_text for i in posrel_qa.items])
    return train_t5(path, [unifiedqa_input(i.question, i.context) for i in posrel_qa.items],
                    [i.answer for i in posrel_qa.items])


def run_text_qa(qa, answerer, out, dataset=None):
    """The questions of ``qa`` (written to a file beside ``out``) asked of ``answerer`` without an
    image through the ask kind, in the short wording (``dataset``: unused, the file names it)."""
    from spatialprobe.benchmarks.qa import qa_source
    from spatialprobe.engine.run import ask_run
    from spatialprobe.runner.settings import Component

    path = out.parent / f"{out.name}-questions.jsonl"
    if not path.exists():
        write_jsonl(path, [{k: v for k, v in r.items() if v is not None} for r in to_qa_records(qa)])
    source, _ = qa_source(qa.task, str(path))
    return ask_run(source, answerer, Component(answerer.name, {"model": answerer.model_id}), None, out,
                   condition="none")


class AlwaysYes:
    """Scores "yes" above "no" whatever is asked."""

    name = model_id = "always-yes"
    device = "cpu"
    protocols = ("score",)
    wordings = ("short",)

    def score(self, requests):
        return [(0.0, -1.0) for _ in requests]


@pytest.mark.parametrize("task,clusters", [("posrel", ["obj_b"]), ("size", ["obj_a", "obj_b"])])
def test_a_blind_answerer_is_exactly_50_in_every_resample(tmp_path, task, clusters):
    # Every scenario (posrel) or pair (size) gives one yes and one no question about the same objects:
    # in every resample they weigh alike, so always "yes" is right exactly half the time.
    qa = build_qa(task_data.load(task))
    qa = QASet(qa.name, "test", qa.task, qa.items[:40])
    summary = run_text_qa(qa, AlwaysYes(), tmp_path / "run", dataset=f"{task}@test")
    assert (summary["accuracy"]["mean"], summary["accuracy"]["ci"]) == (50.0, [50.0, 50.0])
    # F1(yes) = 2/3, F1(no) = 0 in every resample
    assert summary["macro_f1"]["mean"] == pytest.approx(100 / 3)
    assert summary["macro_f1"]["ci"] == pytest.approx([100 / 3, 100 / 3])
    assert summary["intervals"]["clusters"] == clusters


def test_questions_without_objects_resample_scenarios(tmp_path):
    from spatialprobe.tasks.yes_no import QAItem, asked_objects

    assert asked_objects("Is a fire truck larger than an ant?") == ("fire truck", "ant")
    assert asked_objects("Where is the cat?") is None
    items = tuple(QAItem(f"s{n}-q{k}", "posrel", "Is the cat out?" if k else "Is it there?",
                         "yes" if k else "no", f"s{n}", relation="beside") for n in range(4) for k in (0, 1))
    summary = run_text_qa(QASet("odd", "v", "posrel", items), AlwaysYes(), tmp_path / "run", dataset="odd@v")
    assert summary["intervals"]["method"] == "cluster-robust standard error over scenarios"
    assert summary["intervals"]["clusters"] == ["instance"]
    assert (summary["accuracy"]["mean"], summary["accuracy"]["ci"]) == (50.0, [50.0, 50.0])
    # one relation: one part, with its interval too
    assert summary["accuracy"]["breakdown"] == {"relation beside": {"mean": 50.0, "std": None, "n": 8,
                                                               "ci": [50.0, 50.0]}}


def test_unifiedqa_input_format():
    assert unifiedqa_input("Is the man inside the car?", "A man drives the car.") == \
        "is the man inside the car? \\n a man drives the car."
    assert unifiedqa_input("Is an ant larger than a bird?") == "is an ant larger than a bird?"


def test_scores_are_summed_log_probs_of_yes_and_no(tmp_path, posrel_qa):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    path = make_t5(tmp_path / "t5", [i.full_text for i in posrel_qa.items])
    items = posrel_qa.items[:3]
    answers = T5YesNo(str(path), batch_size=2).answer([i.question for i in items], [i.context for i in items])
    tok, model = AutoTokenizer.from_pretrained(path), AutoModelForSeq2SeqLM.from_pretrained(path).eval()
    for item, got in zip(items, answers, strict=True):
        enc = tok(unifiedqa_input(item.question, item.context), return_tensors="pt")
        for word, score in (("yes", got.yes_score), ("no", got.no_score)):
            labels = tok(word, return_tensors="pt").input_ids
            with torch.no_grad():
                loss = model(**enc, labels=labels).loss  # mean NLL over the label tokens
            assert score == pytest.approx(-loss.item() * labels.shape[1], abs=1e-4)
        assert got.answer == ("yes" if got.yes_score >= got.no_score else "no")


def test_run_with_a_memorizing_model_scores_100_and_resumes(tmp_path, posrel_qa, trained_t5):
    out = tmp_path / "run"
    summary = run_text_qa(posrel_qa, T5YesNo(str(trained_t5)), out, dataset="posrel@test")
    assert summary["kind"] == "ask" and summary["task"] == "posrel"
    assert summary["schema"] == "spatialprobe.summary/1" and summary["seed"] == 0
    perfect = {"mean": 100.0, "std": None, "n": 8, "ci": [100.0, 100.0]}
    # all right: the Wilson interval of 8 of 8 at t_1 (two scenarios' objects); macro-F1 the Wilson
    # interval of all right at L x n_min rows (labels in gold x rows of the rarer), never [100, 100]
    assert {k: summary["accuracy"][k] for k in perfect} == {**perfect, "ci": wilson(1.0, 0.0, 8, 2)}
    golds = [item.answer for item in posrel_qa.items]
    rarest = min(golds.count(label) for label in set(golds))
    boundary = wilson(1.0, 0.0, len(set(golds)) * rarest, 2)
    assert {k: summary["macro_f1"][k] for k in perfect} == {**perfect, "ci": boundary}
    details = summary["details"]
    assert details["mode"] == "text" and details["n_questions"] == 8
    assert details["coverage"] == {"used": 8, "total": 8}
    # 2 scenarios x 2 actions: drives -> inside, cleans -> beside, rides -> above, leads -> beside.
    # Intervals resample the objects (bus, camel): "above" is asked of the camel only and "inside"
    # of the bus only, one object each, so theirs are null (nothing to resample)
    assert summary["accuracy"]["breakdown"] == {
        "relation above": {"mean": 100.0, "std": None, "n": 2, "ci": None},
        "relation beside": {"mean": 100.0, "std": None, "n": 4, "ci": wilson(1.0, 0.0, 4, 2)},
        "relation inside": {"mean": 100.0, "std": None, "n": 2, "ci": None}}
    assert summary["intervals"]["clusters"] == ["obj_b"] and summary["intervals"]["key"] == ["instance_id"]
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert all(p["pred"] == p["gold"] for p in preds) and len(preds) == 8
    assert (preds[0]["obj_a"], preds[0]["obj_b"]) == ("man", "bus")
    table = (out / "table.md").read_text()
    assert "| accuracy (likelihood, none) | 100.0 [4.7, 100.0] |" in table
    assert "cluster-robust standard error over objects (obj_b)." in table
    assert [r["kind"] for r in list_runs()] == ["ask"]

    class Refuses:  # a resumed run must not ask the model again
        model_id = str(trained_t5)

        def describe(self):
            return T5YesNo.describe(self)

        def score(self, *args, **kwargs):
            raise AssertionError("answered again")

    Refuses.name, Refuses.device, Refuses.use_context, Refuses.lowercase = "t5", "cpu", True, True
    Refuses.model = type("M", (), {"dtype": torch.float32})  # describe() records its dtype
    again = run_text_qa(posrel_qa, Refuses(), out, dataset="posrel@test")
    assert again["accuracy"]["mean"] == 100.0


def test_cli_text_with_data_file(tmp_path, posrel_qa, trained_t5):
    data = tmp_path / "qa.jsonl"
    write_jsonl(data, to_qa_records(posrel_qa))
    out = tmp_path / "cli-run"
    result = CliRunner().invoke(app, ["qa", "text", "--model", str(trained_t5), "--data", str(data),
                                      "--out", str(out), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["accuracy"]["mean"] == 100.0 and summary["dataset"].startswith("qa.jsonl@")
    config = json.loads((out / "config.json").read_text())
    # the ask kind: the t5 adapter, chosen from its config.json, asked the short wording
    assert config["kind"] == "ask" and config["settings"]["wording"] == "short"
    assert config["settings"]["model"] == {
        "name": "t5", "args": {"model": str(trained_t5), "use_context": True, "lowercase": True}}
    assert config["settings"]["source"] == {"name": "qa", "task": None, "data": str(data.resolve()), "images": None}
    assert config["runtime"]["device"] == "cpu" and config["runtime"]["batch_size"] == 16
    assert "toolkit_version" in config["provenance"]


def test_replay_confirms_in_place_and_reproduces_elsewhere(tmp_path, posrel_qa, trained_t5, monkeypatch):
    data = tmp_path / "qa.jsonl"
    write_jsonl(data, to_qa_records(posrel_qa))
    out = tmp_path / "cli-run"
    first = CliRunner().invoke(app, ["qa", "text", "--model", str(trained_t5), "--data", str(data),
                                     "--out", str(out), "--device", "cpu", "--batch-size", "3"])
    assert first.exit_code == 0, first.output
    answer = T5YesNo.score

    def refuse(*args, **kwargs):
        raise AssertionError("answered again")

    monkeypatch.setattr(T5YesNo, "score", refuse)  # the same directory computes nothing
    same = CliRunner().invoke(app, ["run", str(out / "config.json")])
    assert same.exit_code == 0, same.output
    assert "confirmed: identity" in same.output
    monkeypatch.setattr(T5YesNo, "score", answer)
    elsewhere = CliRunner().invoke(app, ["run", str(out / "config.json"), "--out", str(tmp_path / "copy")])
    assert elsewhere.exit_code == 0, elsewhere.output
    assert (tmp_path / "copy" / "predictions.jsonl").read_text() == (out / "predictions.jsonl").read_text()
    copy = json.loads((tmp_path / "copy" / "summary.json").read_text())
    assert copy["identity"] == json.loads((out / "summary.json").read_text())["identity"]


def test_changed_setting_refused_by_name_and_batch_size_accepted(tmp_path, posrel_qa, trained_t5):
    data = tmp_path / "qa.jsonl"
    write_jsonl(data, to_qa_records(posrel_qa))
    args = ["qa", "text", "--model", str(trained_t5), "--data", str(data), "--out", str(tmp_path / "run"),
            "--device", "cpu"]
    assert CliRunner().invoke(app, args).exit_code == 0
    other = CliRunner().invoke(app, [*args, "--no-context"])
    assert other.exit_code == 2
    assert "settings that differ: model.args.use_context: True -> False" in other.output
    faster = CliRunner().invoke(app, [*args, "--batch-size", "5"])
    assert faster.exit_code == 0, faster.output
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["runtime"]["batch_size"] == 5


def test_no_context_is_refused_for_questions_without_one(tmp_path, posrel_qa, trained_t5):
    bare = QASet("bare", "v", "posrel", tuple(i.__class__(**{**i.to_dict(), "context": ""})
                                              for i in posrel_qa.items))
    write_jsonl(tmp_path / "bare.jsonl", to_qa_records(bare))
    result = CliRunner().invoke(app, ["qa", "text", "--model", str(trained_t5), "--data",
                                      str(tmp_path / "bare.jsonl"), "--no-context", "--device", "cpu",
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "--no-context applies to questions with a scenario" in result.output
    assert not (tmp_path / "run").exists()


def test_unloadable_model_is_one_clear_sentence(tmp_path):
    result = CliRunner().invoke(app, ["qa", "text", "--model", str(tmp_path / "nope"), "--task", "size"])
    assert result.exit_code == 2
    assert "Could not load the configuration of" in result.output and "local directory" in result.output


def test_cli_rerun_with_other_questions_is_one_error_line(tmp_path, posrel_qa, trained_t5):
    out = tmp_path / "cli-run"
    args = ["qa", "text", "--model", str(trained_t5), "--out", str(out), "--device", "cpu"]
    for name, items in (("first.jsonl", posrel_qa.items[:4]), ("second.jsonl", posrel_qa.items[4:])):
        write_jsonl(tmp_path / name, to_qa_records(QASet("x", "v", "posrel", items)))
    assert CliRunner().invoke(app, [*args, "--data", str(tmp_path / "first.jsonl")]).exit_code == 0
    result = CliRunner().invoke(app, [*args, "--data", str(tmp_path / "second.jsonl")])
    assert result.exit_code == 2 and result.exception is not None  # typer.Exit, no traceback
    assert "Error:" in result.output and "Use another --out directory" in result.output


def test_default_run_directory_names_the_data_file(tmp_path, posrel_qa, trained_t5, monkeypatch):
    import os

    data = tmp_path / "generalized.jsonl"
    write_jsonl(data, to_qa_records(posrel_qa))
    monkeypatch.chdir(tmp_path)  # default folders: runs/KIND-NAMES-IDENTITY8 under the working directory
    result = CliRunner().invoke(app, ["qa", "text", "--model", str(trained_t5), "--data", str(data),
                                      "--device", "cpu"])
    assert result.exit_code == 0, result.output
    (run,) = (tmp_path / "runs").iterdir()
    identity = json.loads((run / "summary.json").read_text())["identity"]
    assert run.name == f"ask-qa-text-generalized-{os.path.basename(trained_t5)}-{identity[:8]}"


def test_text_answerer_asks_for_bfloat16_on_cuda(monkeypatch):
    from spatialprobe.models.qa_models import _dtype

    assert _dtype("cpu", prefer_bf16=True) == torch.float32
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert _dtype("cuda", prefer_bf16=True) == torch.bfloat16
    assert _dtype("cuda") == torch.float16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert _dtype("cuda:1", prefer_bf16=True) == torch.float16


def test_an_answerer_one_answer_short_is_an_error_not_lower_coverage(tmp_path, posrel_qa):
    class OneShort:
        name = model_id = "one-short"
        device, protocols, wordings = "cpu", ("score",), ("short",)

        def describe(self):
            return {"name": "one-short"}

        def score(self, requests):
            return [(0.0, -1.0) for _ in requests][:-1]

    with pytest.raises(ValueError, match=r"zip\(\) argument 3 is shorter than arguments 1-2"):
        run_text_qa(posrel_qa, OneShort(), tmp_path / "run", dataset="posrel@test")
