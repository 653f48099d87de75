"""QA from synthesized images with a tiny ViLT-VQA built in the test, through the image store."""

from __future__ import annotations

import json

import pytest
from qa_helpers import make_blip, make_vilt
from typer.testing import CliRunner

from spatialprobe.benchmarks.qa import match_images
from spatialprobe.cli import app
from spatialprobe.files import write_jsonl
from spatialprobe.imagestore import ImageStore, PromptItem
from spatialprobe.models.qa_models import load_vqa
from spatialprobe.synthesis.prompt_sets import load_prompts
from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.yes_no import QASet, build_qa, to_qa_records

pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")


def run_image_qa(qa, store, model, out, protocol="likelihood"):
    """The questions of ``qa`` (written to a file beside ``out``) asked of the ViLT-VQA ``model`` about
    every image of their scenario in ``store`` (voted over), through the ask kind."""
    from spatialprobe.benchmarks.qa import qa_source
    from spatialprobe.engine.run import ask_run
    from spatialprobe.runner.settings import Component

    path = out.parent / f"{out.name}-questions.jsonl"
    write_jsonl(path, to_qa_records(qa))
    source, _ = qa_source(qa.task, str(path), str(store.path), partial=True)
    return ask_run(source, None, Component("vilt-vqa", {"model": str(model)}), None, out, protocol=protocol,
                   device="cpu")


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))


@pytest.fixture()
def synthesis_run(tmp_path):
    """An image store as synthesis writes it: 3 posrel scenarios, 2 images for the first, none for the 4th."""
    instances = task_data.load("posrel").instances[:4]
    store = ImageStore(tmp_path / "synth")
    store.add_prompts(PromptItem(i.id, i.text, i.to_dict()) for i in instances)
    for index, inst in enumerate(instances[:3]):
        for image_index in range(2 if index == 0 else 1):
            store.save_image(Image.new("RGB", (48, 40), (40 * index, 80, 120)), inst.id, image_index,
                             seed=image_index, backend="test", model="none", settings={})
    return store


@pytest.fixture(scope="module")
def posrel_qa():
    qa = build_qa(task_data.load("posrel"))
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
    summary = run_image_qa(posrel_qa, synthesis_run, vilt_yes, tmp_path / "run")
    # The classifier always prefers yes over no: half the answered questions (3 yes, 3 no) are right.
    details = summary["details"]
    assert summary["accuracy"]["n"] == 6 and details["n_questions"] == 8
    assert details["coverage"] == {"used": 6, "total": 8}
    assert summary["accuracy"]["mean"] == 50.0
    assert summary["macro_f1"]["mean"] == pytest.approx(100 * (2 / 3) / 2)  # F1(yes)=2/3, F1(no)=0
    preds = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert {p["pred"] for p in preds} == {"yes"} and len(preds) == 6
    assert preds[0]["images"] == 2 and "images" not in preds[-1]  # the first scenario's two images, voted


def test_full_vocabulary_argmax(tmp_path, synthesis_run, posrel_qa, vilt_yes):
    """Asked by generation, the classifier replies with its argmax class over its whole vocabulary
    ("2"), which names no option: every answer is a parse failure, and wrong."""
    summary = run_image_qa(posrel_qa, synthesis_run, vilt_yes, tmp_path / "run", protocol="generate")
    assert summary["accuracy"]["mean"] == 0.0 and summary["metrics"]["parse_failure_rate"]["mean"] == 100.0
    preds = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert {p["reply"] for p in preds} == {"2"}


def test_cli_image_infers_the_task_from_the_store(tmp_path, synthesis_run, tmp_path_factory):
    texts = [i.full_text for i in build_qa(task_data.load("posrel")).items]
    model = make_vilt(tmp_path_factory.mktemp("vilt_no") / "m", texts, {"yes": 0.0, "no": 2.0})
    out = tmp_path / "qa-run"
    args = ["qa", "image", "--images", str(synthesis_run.path), "--model", str(model), "--out", str(out),
            "--device", "cpu"]
    # the run is unfinished (the 4th prompt has no image; 2 images per prompt): refused, counted
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2 and not out.exists()
    assert refused.output == (f"Error: {synthesis_run.path}: holds 4 of 8 images (prompts x images per "
                              "prompt); it is unfinished or was killed: finish it with the same synthesize "
                              "command, or pass --partial to use the images it holds\n")
    result = CliRunner().invoke(app, [*args, "--partial"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    # The questions are those of the run's 4 prompts; 3 have images -> 6 questions answered,
    # all "no": the 3 distractors are right.
    details = summary["details"]
    assert summary["kind"] == "ask" and details["mode"] == "image" and summary["accuracy"]["n"] == 6
    assert summary["accuracy"]["mean"] == 50.0
    assert details["n_questions"] == 8 and details["coverage"] == {"used": 6, "total": 8}
    assert summary["dataset"] == "synth"  # no synthesis config here: the run directory's name
    source = json.loads((out / "config.json").read_text())["settings"]["source"]
    assert (source["task"], source["data"], source["vote"]) == (None, None, True)
    assert source["images"]["path"] == str(synthesis_run.path.resolve())
    assert source["images"]["content"].startswith("sha256:")
    assert source["images"]["completeness"] == {"images": 4, "expected": 8, "partial": True,
                                                "being_written": False}
    assert (out / "table.md").read_text().splitlines()[0] == (
        "Image run: PARTIAL, 4 of 8 images (prompts x images per prompt; read with --partial).")
    # replayed from its config: in place it confirms; elsewhere it reproduces the predictions
    same = CliRunner().invoke(app, ["run", str(out)])
    assert same.exit_code == 0 and "confirmed: identity" in same.output
    copy = CliRunner().invoke(app, ["run", str(out), "--out", str(tmp_path / "copy")])
    assert copy.exit_code == 0, copy.output
    assert (tmp_path / "copy" / "predictions.jsonl").read_text() == (out / "predictions.jsonl").read_text()
    # an image changed since: the same directory is refused, naming the images' content
    Image.new("RGB", (48, 40), "white").save(next(synthesis_run.images()).path)
    changed = CliRunner().invoke(app, ["run", str(out)])
    assert changed.exit_code == 2 and "settings that differ: source.images.content:" in changed.output


def _generalized_store(path):
    """A synthesis run made from a generalized file: same ids as the built-in set, other scenarios."""
    general = [{"text": "An enchantress drives the minibus.", "label": 0, "obj_a": "enchantress",
                "obj_b": "minibus"},
               {"text": "A wizard cleans the minibus.", "label": 3, "obj_a": "wizard", "obj_b": "minibus"}]
    write_jsonl(path.parent / "general.jsonl", general)
    prompts = load_prompts(str(path.parent / "general.jsonl"))
    store = ImageStore(path)
    store.run.start({"prompts": prompts.source})
    store.add_prompts(prompts.items)
    for item in prompts.items:
        store.save_image(Image.new("RGB", (40, 40)), item.prompt_id, 0, seed=0, backend="test",
                         model="none", settings={})
    return store


def test_same_instance_id_of_another_dataset_is_not_a_match(tmp_path, posrel_qa):
    store = _generalized_store(tmp_path / "synth")
    assert posrel_qa.items[0].instance_id == next(store.images()).prompt_id  # posrel-0000 in both
    assert all(v == [] for v in match_images(posrel_qa.items, store.images()).values())
    with pytest.raises(ValueError, match="holds no image of these questions' scenarios"):
        run_image_qa(posrel_qa, store, "unused", tmp_path / "run")


def test_cli_image_asks_about_the_runs_own_generalized_scenarios(tmp_path, vilt_yes):
    store = _generalized_store(tmp_path / "synth")
    out = tmp_path / "qa-run"
    args = ["qa", "image", "--images", str(store.path), "--model", str(vilt_yes), "--out", str(out),
            "--device", "cpu"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["accuracy"]["n"] == summary["details"]["n_questions"] == 4
    assert summary["dataset"].startswith("general.jsonl@")
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [p["question"] for p in preds[:2]] == ["Is the enchantress inside the minibus?",
                                                  "Is the enchantress beside the minibus?"]
    assert preds[2]["context"] == "A wizard cleans the minibus." and preds[3]["relation"] == "inside"
    # Another synthesis run into the same run directory is refused, not answered from the cache.
    other = _generalized_store(tmp_path / "other" / "synth2")
    again = CliRunner().invoke(app, [*args[:2], "--images", str(other.path), *args[4:]])
    # (its images are the same pixels: only the path differs)
    assert again.exit_code == 2 and "settings that differ: source.images.path:" in again.output


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
