"""QA from synthesized images with a tiny ViLT-VQA built in the test, through the image store."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from qa_helpers import make_blip, make_vilt
from spatialprobe import datasets
from spatialprobe.cli import app
from spatialprobe.datasets.qa import QASet, build_qa
from spatialprobe.imagestore import ImageStore, PromptItem
from spatialprobe.probes.qa_models import load_vqa
from spatialprobe.probes.qa_run import match_images, run_image_qa

pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))


@pytest.fixture()
def synthesis_run(tmp_path):
    """An image store as synthesis writes it: 3 posrel scenarios, 2 images for the first, none for the 4th."""
    instances = datasets.load("posrel").instances[:4]
    store = ImageStore(tmp_path / "synth")
    store.add_prompts(PromptItem(i.id, i.text, i.to_dict()) for i in instances)
    for index, inst in enumerate(instances[:3]):
        for image_index in range(2 if index == 0 else 1):
            store.save_image(Image.new("RGB", (48, 40), (40 * index, 80, 120)), inst.id, image_index,
                             seed=image_index, backend="test", model="none", settings={})
    return store


@pytest.fixture(scope="module")
def posrel_qa():
    qa = build_qa(datasets.load("posrel"))
    return QASet(qa.name, "test", qa.task, qa.items[:8])


@pytest.fixture(scope="module")
def vilt_yes(tmp_path_factory, posrel_qa):
    texts = [i.full_text for i in posrel_qa.items]
    return make_vilt(tmp_path_factory.mktemp("vilt") / "m", texts, {"yes": 1.0, "no": 0.0, "2": 5.0})


def test_images_matched_by_prompt_id_then_text(synthesis_run, posrel_qa):
    matched = match_images(posrel_qa.items, synthesis_run.images())
    counts = [len(matched[i.id]) for i in posrel_qa.items]
    assert counts == [2, 2, 1, 1, 1, 1, 0, 0]
    renamed = [i.__class__(**{**i.to_dict(), "instance_id": "other-id"}) for i in posrel_qa.items[:2]]
    assert [len(v) for v in match_images(renamed, synthesis_run.images()).values()] == [2, 2]


def test_restricted_answers_and_coverage(tmp_path, synthesis_run, posrel_qa, vilt_yes):
    summary = run_image_qa(posrel_qa, synthesis_run, load_vqa(str(vilt_yes), device="cpu"),
                           tmp_path / "run", dataset="posrel@test")
    # The classifier always prefers yes over no: half the answered questions (3 yes, 3 no) are right.
    assert summary["n"] == 6 and summary["n_questions"] == 8 and summary["coverage"] == 0.75
    assert summary["yes_share_pred"] == 1.0
    assert summary["accuracy"]["mean"] == pytest.approx(50.0)
    assert summary["macro_f1"]["mean"] == pytest.approx(100 * (2 / 3) / 2)  # F1(yes)=2/3, F1(no)=0
    preds = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert preds[0]["images"] == [0, 1] and "pred" not in preds[-1]


def test_full_vocabulary_argmax(tmp_path, synthesis_run, posrel_qa, vilt_yes):
    summary = run_image_qa(posrel_qa, synthesis_run, load_vqa(str(vilt_yes), device="cpu"),
                           tmp_path / "run", dataset="posrel@test", full_vocab=True)
    assert summary["accuracy"]["mean"] == 0.0 and summary["yes_share_pred"] == 0.0
    preds = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert {p["pred"] for p in preds if "pred" in p} == {"2"}


def test_cli_image_infers_the_task_from_the_store(tmp_path, synthesis_run, tmp_path_factory):
    texts = [i.full_text for i in build_qa(datasets.load("posrel")).items]
    model = make_vilt(tmp_path_factory.mktemp("vilt_no") / "m", texts, {"yes": 0.0, "no": 2.0})
    out = tmp_path / "qa-run"
    result = CliRunner().invoke(app, ["qa", "image", "--images", str(synthesis_run.path), "--model",
                                      str(model), "--out", str(out), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    # 3 scenarios with images -> 6 questions, all answered "no": the 3 distractors are right.
    assert summary["kind"] == "qa" and summary["mode"] == "image" and summary["n"] == 6
    assert summary["accuracy"]["mean"] == pytest.approx(50.0)
    assert summary["coverage"] == pytest.approx(6 / 512)


def test_model_without_yes_no_classes_is_refused(tmp_path, posrel_qa):
    model = make_vilt(tmp_path / "m", [i.full_text for i in posrel_qa.items], {"left": 0.0, "right": 1.0})
    with pytest.raises(ValueError, match="lack 'yes' or 'no'"):
        load_vqa(str(model), device="cpu")


def test_blip_restricted_scores_are_decoder_log_likelihoods(tmp_path, posrel_qa):
    import torch

    texts = [i.full_text for i in posrel_qa.items]
    model = make_blip(tmp_path / "blip", texts, {"yes": 3.0, "[SEP]": 2.0, "no": 1.0})
    answerer = load_vqa(str(model), device="cpu")
    assert answerer.name == "blip"
    image = Image.new("RGB", (40, 40), "white")
    got = answerer.answer([image, image], [i.question for i in posrel_qa.items[:2]])
    vocab = answerer.processor.tokenizer.get_vocab()
    bias = answerer.model.text_decoder.cls.predictions.bias.detach()
    logp = torch.log_softmax(bias, dim=-1)
    yes = float(logp[vocab["yes"]] + logp[vocab["[SEP]"]])
    no = float(logp[vocab["no"]] + logp[vocab["[SEP]"]])
    for answer in got:
        assert answer.answer == "yes"
        assert answer.yes_score == pytest.approx(yes, abs=1e-4)
        assert answer.no_score == pytest.approx(no, abs=1e-4)
    generated = answerer.answer([image], [posrel_qa.items[0].question], full_vocab=True)
    assert generated[0].answer.split()[0] == "yes"
