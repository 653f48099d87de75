"""Multimodal LLMs through the commands: a tiny random LLaVA-1.5 of the real architecture (the
genuine processor and chat template from ../shared/models), wired to answer one word everywhere,
so its scores are known: the share of that answer's label, and a vision gain of exactly 0."""

from __future__ import annotations

import json

import pytest
from mllm_helpers import SHARED, build
from typer.testing import CliRunner
from vl_helpers import solid_image

from spatialprobe.cli import app
from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.data import make_folds

pytestmark = pytest.mark.skipif(not (SHARED / "llava-1.5-7b-hf").is_dir(),
                                reason="../shared/models (genuine LLaVA processor files) is absent")


@pytest.fixture(scope="module")
def yes_llava(tmp_path_factory):
    return build("llava", tmp_path_factory.mktemp("llava-yes"), bias_word="Yes")


def _vsr(tmp_path, n=8):
    images = tmp_path / "coco"
    rows = []
    for k in range(n):
        image = f"{k:012d}.jpg"
        solid_image(images / image, (40 * k % 255, 90, 160))
        rows.append({"image": image, "caption": f"The cat {k} is left of the dog {k}.", "label": int(k % 4 == 0),
                     "relation": "left of", "subj": f"cat{k}", "obj": f"dog{k}"})
    (tmp_path / "vsr" / "random").mkdir(parents=True)
    (tmp_path / "vsr" / "random" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "vsr", images


def test_vsr_asks_a_multimodal_llm_by_both_protocols_with_the_blind_conditions(yes_llava, tmp_path):
    data, images = _vsr(tmp_path)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["vsr", "--model", str(yes_llava), "--data", str(data), "--images",
                                      str(images), "--out", str(out), "--protocol", "both", "--blind",
                                      "--max-new-tokens", "3"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    m, d = summary["metrics"], summary["details"]
    # the model says Yes to everything: right on the 2 true captions of 8, whatever it is shown
    assert m["accuracy_likelihood"]["mean"] == 25.0 and m["accuracy_generate"]["mean"] == 25.0
    assert m["parse_failure_rate"]["mean"] == 0.0 and d["protocol_comparison"]["agreement"] == 100.0
    assert {c: g["gain"] for c, g in d["vision_gain"].items()} == {"blank": 0.0, "none": 0.0, "shuffled": 0.0}
    assert summary["kind"] == "ask" and json.loads((out / "config.json").read_text())["settings"]["model"][
        "name"] == "hf-mllm"
    assert "| vision gain: real − none | +0.0 [+0.0, +0.0], p = 1 |" in result.output


@pytest.mark.parametrize(("protocol", "word"), [("likelihood", "Above"), ("generate", "above")])
def test_probe_asks_a_multimodal_llm_the_task_question_over_the_object_disjoint_folds(tmp_path, protocol, word):
    # likelihood: the option "Above" starts with the favoured token; generate: the reply is
    # "above above", which the parser reads as the option Above (text, case-insensitive)
    model = build("llava", tmp_path / "llava-above", bias_word=word)
    out = tmp_path / "run"
    tokens = ["--max-new-tokens", "2"] if protocol == "generate" else []
    result = CliRunner().invoke(app, ["probe", "posrel", "--model", str(model), "--out", str(out),
                                      "--protocol", protocol, *tokens])
    assert result.exit_code == 0, result.output
    dataset = task_data.load("posrel")
    gold = {inst.id: inst.label for inst in dataset.instances}
    shares = [100.0 * sum(gold[i] == "above" for i in fold.test) / len(fold.test) for fold in make_folds(dataset)]
    summary = json.loads((out / "summary.json").read_text())
    breakdown = summary["metrics"]["accuracy"]["breakdown"]  # "above" every time: its share in each test fold
    assert [round(part["mean"], 6) for part in breakdown.values()] == [round(s, 6) for s in shares]
    assert summary["details"]["conditions"] == ["none"] and summary["details"]["protocols"] == [protocol]
    if protocol == "generate":
        assert summary["metrics"]["parse_failure_rate"]["mean"] == 0.0


def test_max_new_tokens_without_generation_is_refused(yes_llava, tmp_path):
    data, images = _vsr(tmp_path)
    result = CliRunner().invoke(app, ["vsr", "--model", str(yes_llava), "--data", str(data), "--images",
                                      str(images), "--out", str(tmp_path / "run"), "--max-new-tokens", "3"])
    assert result.exit_code == 2 and not (tmp_path / "run").exists()
    assert "--max-new-tokens applies to the generate protocol" in result.output


def test_the_multimodal_llm_options_are_refused_for_other_models(tmp_path):
    result = CliRunner().invoke(app, ["probe", "size", "--model", "dummy", "--protocol", "both",
                                      "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert ("--protocol apply to models asked the task's question (a multimodal LLM, a model behind a server); "
            "'dummy' is not one.") in " ".join(result.output.split())


def test_qa_text_asks_a_multimodal_llm_the_balanced_yes_no_questions(yes_llava, tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["qa", "text", "--model", str(yes_llava), "--task", "height", "--out",
                                      str(out), "--protocol", "generate", "--max-new-tokens", "2"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    # "Yes" to every question of a set balanced between yes and no: exactly half right
    assert summary["metrics"]["accuracy"]["mean"] == 50.0
    assert round(summary["metrics"]["macro_f1"]["mean"], 4) == round(100 / 3, 4)
    assert summary["metrics"]["parse_failure_rate"]["mean"] == 0.0
    assert summary["details"]["conditions"] == ["none"] and summary["task"] == "height"


def test_a_blind_run_reports_against_a_plain_run_paired_on_the_real_condition(yes_llava, tmp_path):
    data, images = _vsr(tmp_path)
    runs = {}
    for name, extra in (("blind", ["--blind"]), ("plain", [])):
        runs[name] = tmp_path / name
        result = CliRunner().invoke(app, ["vsr", "--model", str(yes_llava), "--data", str(data), "--images",
                                          str(images), "--out", str(runs[name]), "--protocol", "both",
                                          "--max-new-tokens", "3", *extra])
        assert result.exit_code == 0, result.output
    m = json.loads((runs["blind"] / "summary.json").read_text())["metrics"]
    # both protocols choose Yes on every item: the same 25 % and so the same interval, from the real rows
    assert m["accuracy_generate"]["ci"] is not None
    assert m["accuracy_generate"]["ci"] == m["accuracy_likelihood"]["ci"] == m["accuracy"]["ci"]
    # each vision gain's blind component: Yes to every blanked, missing or shuffled image too
    for blind in ("blank", "none", "shuffled"):
        assert m[f"accuracy_{blind}"]["mean"] == 25.0 and m[f"accuracy_{blind}"]["ci"] == m["accuracy"]["ci"]
    result = CliRunner().invoke(app, ["report", str(runs["blind"]), str(runs["plain"])])
    assert result.exit_code == 0, result.output
    assert "No paired test" not in result.output and "## Paired:" in result.output
    assert "Paired on the `real` condition's rows (A also asked blank, none, shuffled: not paired)." in result.output
    # the same model on the same real images: each difference exactly 0
    assert "| +0.0 |" in result.output


# ---- a model that ignores the question is found out by its question-free choices ----
def _fixed_ranking(folder, constant: float = 10.0):
    """The tiny LLaVA in ``folder`` rewired so that its next-token distribution is the same at
    every position whatever the input (as :func:`mllm_helpers.bias_toward`, but the head reads
    the constant dimension with a random weight per token): options are ranked by name alone."""
    import torch
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(folder)
    hidden = model.get_input_embeddings().weight.shape[1]
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Linear) and module.out_features == hidden and not name.endswith("lm_head"):
                module.weight[0] = 0
                if module.bias is not None:
                    module.bias[0] = 0
        model.get_input_embeddings().weight[:, 0] = constant
        head = model.get_output_embeddings().weight
        head.zero_()
        head[:, 0] = torch.randn(head.shape[0], generator=torch.Generator().manual_seed(0))
    model.save_pretrained(folder)
    return folder


def test_a_model_whose_choices_ignore_the_question_is_warned_with_its_question_free_figures(tmp_path):
    from spatialprobe.tasks.release import to_release_records

    objects = {"ant", "coin", "bird", "cup", "chair", "dog", "sofa", "bed"}  # 2 of each of 4 levels
    records = [r for r in to_release_records(task_data.load("size")) if {r["obj_a"], r["obj_b"]} <= objects]
    assert len(records) == 48  # every pair of different levels, in both orders
    data = tmp_path / "size.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    model = _fixed_ranking(build("llava", tmp_path / "llava-ranking"))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["probe", "size", "--model", str(model), "--data", str(data), "--folds", "2",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    found, m = summary["details"]["question_free"], summary["metrics"]
    # a fixed ranking of names: the same choice with and without the question, every pair answered
    # the same object in both orders (symmetry 100) along one order of the names (transitivity 100)
    assert found["agreement"] == 100.0 and found["same"] == found["n"] > 0
    assert found["model"] == found["question_free"]
    assert found["model"]["symmetry"] == 100.0 and found["model"]["transitivity"] == 100.0
    assert m["accuracy_question_free"]["mean"] == m["accuracy"]["mean"]
    assert ("Warning: the model chose the same option without the question on all "
            f"{found['n']} items: its choices do not depend on the question") in " ".join(result.output.split())
    assert "| same choice with and without the question | 100.0 % |" in result.output
