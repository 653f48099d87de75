"""The VQA judge (judging/vqa.py): a tiny multimodal LLM of a real architecture (LLaVA-1.5, built
from ../shared/models by tests/mllm_helpers.py, loaded by path through hf-mllm) asked whether
`shapes` images show their posrel prompt's relation, with known answers:

* a head biased toward "yes" affirms every claim (hard score 100), so its hard answers agree with
  the drawn truth exactly on the true claims (the share --error-rate did not reverse); its soft
  scores equal the softmax of the model's own logits computed here, apart from the judge;
* a "blind" head (the yes and no tokens' rows equal) gives a soft score of exactly 50.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
from interval_helpers import plain_wilson
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mllm_helpers import SHARED, build, first_tokens, processor_loads

pytest.importorskip("PIL")
pytestmark = pytest.mark.skipif(not (SHARED / "llava-1.5-7b-hf").is_dir(),
                                reason="../shared/models (genuine processor files) is absent")

from spatialprobe.cli import app  # noqa: E402
from spatialprobe.imagestore import ImageStore  # noqa: E402
from spatialprobe.registry import Spec  # noqa: E402

LLAVA = SHARED / "llava-1.5-7b-hf"
WORDS = {"yes": ("▁Yes", "▁yes"), "no": ("▁No", "▁no")}
"""The tokens that count for each answer with LLaVA's SentencePiece tokenizer (a lone ``▁``, the
first piece of " Yes" and " No", counts for neither)."""


def invoke(*args, code=0):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output + repr(result.exception)
    return result


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """16 posrel prompts drawn by the shapes backend, each image reversed with probability 0.25."""
    from spatialprobe.synthesis import load_prompts, synthesize

    prompts = load_prompts("posrel")
    prompts = dataclasses.replace(prompts, items=prompts.items[::16])
    out = tmp_path_factory.mktemp("images")
    synthesize(prompts, out, "shapes", {"size": 64, "device": "cpu", "precision": "auto", "error_rate": 0.25},
               images_per_prompt=1, batch_size=16)
    return out


def _edited(directory: Path, edit) -> Path:
    """A tiny LLaVA saved in ``directory`` after ``edit(model, tokenizer)`` changed its weights."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoTokenizer

    reason = processor_loads("llava")
    if reason:
        pytest.skip(reason)
    build("llava", directory)
    model = AutoModelForImageTextToText.from_pretrained(directory, dtype=torch.float32)  # config says fp16
    with torch.no_grad():
        edit(model, AutoTokenizer.from_pretrained(directory))
    model.save_pretrained(directory)
    return directory


def _biased(tmp_path_factory, word: str) -> Path:
    """``word`` wins at every position, by a margin that leaves the other tokens some mass."""
    from mllm_helpers import bias_toward

    return _edited(tmp_path_factory.mktemp(word),
                   lambda model, _: bias_toward(model, first_tokens(LLAVA, word), constant=0.3))


@pytest.fixture(scope="module")
def yes_model(tmp_path_factory):
    return _biased(tmp_path_factory, "Yes")


@pytest.fixture(scope="module")
def blind_model(tmp_path_factory):
    """The LM head's rows of the yes and no tokens made equal: the same logit for each."""
    def edit(model, tokenizer):
        head = model.get_output_embeddings().weight
        ids = tokenizer.convert_tokens_to_ids([*WORDS["yes"], *WORDS["no"]])
        head[ids] = head[ids[0]].clone()

    return _edited(tmp_path_factory.mktemp("blind"), edit)


def _judge(images, model, out, batch_size=4):
    from spatialprobe.judging.vqa import vqa_judge_run

    summary = vqa_judge_run(str(images), str(out), "posrel", Spec("hf-mllm", {"model": str(model)}),
                            device="cpu", batch_size=batch_size)
    rows = [json.loads(line) for line in (Path(out) / "predictions.jsonl").open(encoding="utf-8")]
    return summary, rows


def _hand_masses(model_dir: Path, question: str, image: Path) -> tuple[float, float]:
    """Mass on yes and on no from one forward pass written here: the processor's chat template,
    the logits at the last position, their softmax summed over the tokens of each word."""
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(model_dir)
    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32).eval()
    chat = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
    text = processor.apply_chat_template(chat, add_generation_prompt=True)
    inputs = processor(text=[text], images=[[Image.open(image).convert("RGB")]], return_tensors="pt")
    with torch.no_grad():
        probs = torch.softmax(model(**inputs).logits[0, -1].float(), dim=-1)
    ids = {w: processor.tokenizer.convert_tokens_to_ids(list(t)) for w, t in WORDS.items()}
    return float(probs[ids["yes"]].sum()), float(probs[ids["no"]].sum())


def test_answer_tokens_are_whole_words_counted_once():
    from transformers import AutoTokenizer

    from spatialprobe.judging.vqa_questions import AnswerTokens, builtin

    tokens = AnswerTokens.of(AutoTokenizer.from_pretrained(LLAVA), builtin()["answers"])
    assert tokens.pieces == {"yes": list(WORDS["yes"]), "no": list(WORDS["no"])}
    qwen = SHARED / "qwen2.5-vl-3b-instruct"
    if qwen.is_dir():  # byte-level BPE: " Yes" is its own token "ĠYes"
        byte_level = AnswerTokens.of(AutoTokenizer.from_pretrained(qwen), builtin()["answers"])
        assert byte_level.pieces == {"yes": ["Yes", "yes", "ĠYes", "Ġyes"], "no": ["No", "no", "ĠNo", "Ġno"]}


def test_yes_biased_judge_affirms_every_claim_and_its_soft_score_is_the_hand_mass(images, yes_model, tmp_path):
    summary, rows = _judge(images, yes_model, tmp_path / "judge", batch_size=1)  # no padding: as here
    made = {(r["prompt_id"], r["image_index"]): r["drawn"] for r in ImageStore(images).rows()}
    assert len(rows) == len(made) == 16
    assert [r["answer"] for r in rows] == ["yes"] * 16
    assert all(r["pred"] == r["gold"] and r["correct"] and r["recognized"] for r in rows)
    m = summary["metrics"]
    assert m["accuracy"]["mean"] == 100.0 and m["accuracy"]["ci"] == plain_wilson(16, 16)  # all right, rows independent
    assert m["answered_ratio"]["mean"] == 100.0
    # Always "yes": right exactly on the claims the image shows (the ones not reversed)
    true_claims = [not made[(r["instance_id"], r["image_index"])]["reversed"] for r in rows]
    reversed_ = true_claims.count(False)
    assert reversed_ == 4  # what the images' seeds drew
    agree = sum((r["answer"] == "yes") == truth for r, truth in zip(rows, true_claims, strict=True))
    assert 100 * agree / 16 == 100 * (16 - reversed_) / 16 == 75.0
    # Soft: the mass on yes over yes + no, each row against the softmax computed here
    hand = [_hand_masses(yes_model, r["question"], images / r["image"]) for r in rows]
    for row, (yes, no) in zip(rows, hand, strict=True):
        assert row["yes_mass"] == pytest.approx(yes, rel=1e-6)
        assert row["no_mass"] == pytest.approx(no, rel=1e-6)
        assert row["yes_probability"] == pytest.approx(yes / (yes + no), rel=1e-6)
    expected = 100 * sum(y / (y + n) for y, n in hand) / 16
    assert 70 < expected < 90  # a mild bias: "no" keeps a share, the score is no saturated 100
    assert m["soft_tifa"]["mean"] == pytest.approx(expected, rel=1e-6)
    assert m["geneval2_soft_tifa"]["mean"] == pytest.approx(100 * sum(y for y, _ in hand) / 16, rel=1e-6)
    assert rows[0]["question"].endswith("? Answer yes or no.")
    assert summary["details"]["answer_tokens"] == {"yes": list(WORDS["yes"]), "no": list(WORDS["no"])}
    # the judge that says yes to everything shows it: its yes-rate is in the table
    assert summary["details"]["yes_rate"] == {"yes": 16, "asked": 16, "percent": 100.0}
    table = (tmp_path / "judge" / "table.md").read_text(encoding="utf-8")
    assert ("The judge's yes-rate: 100.0 % (16 of the 16 questions asked answered yes). Every question "
            "asks a claim the prompt makes, so a judge that answers yes to everything scores 100 here.") in table


def test_blind_head_scores_exactly_50(images, blind_model, tmp_path):
    summary, rows = _judge(images, blind_model, tmp_path / "judge")
    assert [r["yes_probability"] for r in rows] == [0.5] * 16
    assert [r["yes_mass"] for r in rows] == [r["no_mass"] for r in rows]
    assert summary["metrics"]["soft_tifa"]["mean"] == 50.0
    assert summary["metrics"]["soft_tifa"]["ci"] == [50.0, 50.0]


def test_cli_rule_vqa_writes_the_run_and_resumes_unchanged(images, yes_model, tmp_path):
    out = tmp_path / "judge"
    result = invoke("judge", "posrel", images, "--rule", "vqa", "--judge-model", yes_model,
                    "--device", "cpu", "--out", out)
    assert "claims affirmed 100.0%" in result.output
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["kind"] == "vqa-judge"
    settings = config["spec"]["settings"] if "spec" in config else config["settings"]
    assert settings["judge"] == {"name": "hf-mllm", "args": {"model": str(yes_model)}}
    assert settings["questions"]["above"] == "Is the {a} above the {b}?"
    assert settings["answers"]["yes"] == ["Yes", "yes", " Yes", " yes"]

    def written():  # config.json records the runtime (batch size) of the latest call
        return {p.name: p.read_bytes() for p in out.iterdir()
                if p.suffix in (".jsonl", ".md") or p.name == "summary.json"}

    before = written()
    invoke("judge", "posrel", images, "--rule", "vqa", "--judge-model", yes_model, "--device", "cpu",
           "--batch-size", "2", "--out", out)  # batch size is runtime: the same run
    assert written() == before and set(before) == {"predictions.jsonl", "summary.json", "table.md"}
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))["identity"] == config["identity"]


def test_replay_gives_the_same_rows_and_another_judge_model_is_refused(images, yes_model, blind_model, tmp_path):
    out = tmp_path / "judge"
    invoke("judge", "posrel", images, "--rule", "vqa", "--judge-model", yes_model, "--device", "cpu", "--out", out)
    replay = tmp_path / "replay"
    invoke("run", out / "config.json", "--out", replay)
    assert (replay / "predictions.jsonl").read_bytes() == (out / "predictions.jsonl").read_bytes()
    def kept():  # the lock file records the process holding the folder
        return {p.name: p.read_bytes() for p in out.iterdir() if p.name != "run.lock"}

    before = kept()
    result = invoke("judge", "posrel", images, "--rule", "vqa", "--judge-model", blind_model, "--device", "cpu",
                    "--out", out, code=2)
    assert (f"already holds another run (the judge model: '{yes_model}' -> '{blind_model}'; settings that "
            f"differ: judge.args.model: '{yes_model}' -> '{blind_model}')") in " ".join(result.output.split())
    assert kept() == before


def test_size_claims_are_asked_too(yes_model, tmp_path):
    from spatialprobe.synthesis import load_prompts, synthesize

    prompts = load_prompts("size")
    prompts = dataclasses.replace(prompts, items=prompts.items[::100])
    synthesize(prompts, tmp_path / "images", "shapes", {"size": 64, "device": "cpu", "precision": "auto"},
               images_per_prompt=1, batch_size=16)
    out = tmp_path / "judge"
    invoke("judge", "size", tmp_path / "images", "--rule", "vqa", "--judge-model", yes_model, "--device", "cpu",
           "--out", out)
    rows = [json.loads(line) for line in (out / "predictions.jsonl").open(encoding="utf-8")]
    assert len(rows) == len(prompts.items) and [r["answer"] for r in rows] == ["yes"] * len(rows)
    first = prompts.items[0].meta
    claim = f"Is the {first['obj_a']} {first['label']} than the {first['obj_b']}?"
    assert rows[0]["question"] == f"{claim} Answer yes or no."


@pytest.mark.parametrize("args,sentence", [
    (("--rule", "vqa", "--judge-model", "m", "--detector", "colour"),
     "--detector applies to the box judge only; --rule vqa asks a multimodal LLM (--judge-model) and reads no boxes."),
    (("--rule", "vqa", "--judge-model", "m", "--threshold", "0.2", "--seed", "3"),
     "--threshold, --seed apply to the box judge only;"),
    (("--judge-model", "m"), "--judge-model and --judge-arg apply to --rule vqa only (a multimodal LLM judge)."),
    (("--rule", "vqa"), "--rule vqa needs --judge-model (a multimodal LLM: checkpoint id or directory)."),
    (("--rule", "vqa", "--judge-model", "m", "--judge-arg", "batch_size=2"),
     "--judge-arg batch_size is set by --batch-size, not --judge-arg."),
])
def test_options_that_do_not_apply_are_refused(images, tmp_path, args, sentence):
    out = tmp_path / "judge"
    result = invoke("judge", "posrel", images, *args, "--out", out, code=2)
    assert sentence in " ".join(result.output.split())
    assert not out.exists()


# ---- VISOR read by the VQA judge --------------------------------------------------------------

@pytest.fixture(scope="module")
def no_model(tmp_path_factory):
    return _biased(tmp_path_factory, "No")


@pytest.fixture(scope="module")
def sr2d_images(tmp_path_factory):
    """8 spatial SR2D prompts (every 50th of the first 400), one shapes image each."""
    from spatialprobe.synthesis import load_prompts, synthesize
    from spatialprobe.tasks.sr2d import build_sr2d, is_spatial, prompt_lines

    records = [r for r in build_sr2d() if is_spatial(r)][:400:50]
    folder = tmp_path_factory.mktemp("sr2d")
    path = folder / "sr2d.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in prompt_lines(records)), encoding="utf-8")
    synthesize(load_prompts(str(path)), folder / "images", "shapes", {"size": 64, "device": "cpu",
               "precision": "auto"}, images_per_prompt=1, batch_size=16)
    return folder / "images", records


@pytest.mark.parametrize("bias,score", [("yes", 100.0), ("no", 0.0)])
def test_visor_rule_vqa_scores_the_judges_answers(sr2d_images, yes_model, no_model, tmp_path, bias, score):
    images, records = sr2d_images
    model = {"yes": yes_model, "no": no_model}[bias]
    out = tmp_path / "visor"
    invoke("visor", images, "--rule", "vqa", "--judge-model", model, "--device", "cpu", "--out", out)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    m = summary["metrics"]
    assert summary["kind"] == "vqa-visor" and m["VISOR"]["n"] == len(records) == 8
    for name in ("OA", "VISOR", "object_accuracy_A", "object_accuracy_B"):
        assert m[name]["mean"] == score
    assert m["VISOR_cond"]["mean"] == (100.0 if bias == "yes" else None)  # no image with both objects
    rows = [json.loads(line) for line in (out / "predictions.jsonl").open(encoding="utf-8")]
    first = records[0]
    a, b = first["obj_1_attributes"][0], first["obj_2_attributes"][0]
    assert rows[0]["questions"][2] == f"Is the {a} {first['rel_type']} the {b}? Answer yes or no."
    assert rows[0]["questions"][0].startswith("Is there a") and rows[0]["answers"] == [bias] * 3
    assert not (out / "detections.json").exists()
    # the table shows the judge's yes-rate over the 3 questions of each image
    yes = 24 if bias == "yes" else 0
    assert summary["details"]["yes_rate"] == {"yes": yes, "asked": 24, "percent": score}
    assert (f"The judge's yes-rate: {score:.1f} % ({yes} of the 24 questions asked answered yes)."
            in (out / "table.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize("args,sentence", [
    (("--rule", "vqa", "--judge-model", "m", "--detector", "colour"),
     "--detector applies to the box judge only; --rule vqa asks a multimodal LLM"),
    (("--rule", "geneval"), "visor --rule takes vqa only, not 'geneval'"),
    (("--judge-model", "m"), "--judge-model and --judge-arg apply to --rule vqa only"),
])
def test_visor_options_that_do_not_apply_are_refused(sr2d_images, tmp_path, args, sentence):
    out = tmp_path / "visor"
    result = invoke("visor", sr2d_images[0], *args, "--out", out, code=2)
    assert sentence in " ".join(result.output.split())
    assert not out.exists()


def test_judge_compare_reads_vqa_visor_runs(sr2d_images, yes_model, no_model, tmp_path):
    """A VQA VISOR run is a judgement ``judge compare`` reads by image: the yes-biased judge finds
    every relation (score 100), the no-biased none (score 0), and they agree on no image."""
    images, records = sr2d_images
    for bias, model in (("yes", yes_model), ("no", no_model)):
        invoke("visor", images, "--rule", "vqa", "--judge-model", model, "--device", "cpu",
               "--out", tmp_path / bias)
    invoke("judge", "compare", tmp_path / "yes", tmp_path / "no", "--out", tmp_path / "cmp")
    metrics = json.loads((tmp_path / "cmp" / "summary.json").read_text(encoding="utf-8"))["metrics"]
    scores = metrics["score"]["breakdown"].values()
    assert sorted(s["mean"] for s in scores) == [0.0, 100.0]
    assert {s["n"] for s in scores} == {len(records)}
    assert [a["mean"] for a in metrics["agreement"]["breakdown"].values()] == [0.0]


def test_the_vqa_judges_on_ray_write_what_they_write_here(ray_cluster, images, sr2d_images, yes_model, tmp_path,
                                                          monkeypatch):
    """``judge posrel --rule vqa`` and ``visor --rule vqa`` with ``--ray --workers 2``: the same
    predictions byte for byte and the same metrics as here; the driver never builds the judge."""
    pytest.importorskip("ray")
    from test_ray_kinds import local_and_on_ray, refuse_build

    from spatialprobe import registry

    def no_build_here():
        monkeypatch.setattr(registry, "build", refuse_build)

    judge = ["--rule", "vqa", "--judge-model", str(yes_model), "--device", "cpu", "--batch-size", "4"]
    done = local_and_on_ray(ray_cluster, ["judge", "posrel", str(images), *judge], tmp_path / "judge",
                            before_ray=no_build_here)
    assert done == {"where": "ray", "workers": 2, "gpus": 0, "batches": 4, "items": 16, "retried_batches": 0}
    monkeypatch.undo()
    done = local_and_on_ray(ray_cluster, ["visor", str(sr2d_images[0]), *judge], tmp_path / "visor",
                            before_ray=no_build_here)
    assert done == {"where": "ray", "workers": 2, "gpus": 0, "batches": 2, "items": 8, "retried_batches": 0}


def test_text_only_judge_model_is_refused_as_not_multimodal(images, tmp_path):
    """A text-only LM as --judge-model: its config.json says it is no image-text-to-text model,
    before any weights load (the weights file is removed)."""
    from causal_helpers import tiny_bpe_gpt2

    gpt2 = tiny_bpe_gpt2(tmp_path / "gpt2")
    (gpt2 / "model.safetensors").unlink()
    result = invoke("judge", "posrel", images, "--rule", "vqa", "--judge-model", gpt2, "--device", "cpu",
                    "--out", tmp_path / "judge", code=2)
    text = " ".join(result.output.split())
    assert f"--judge-model '{gpt2}' is not a multimodal LLM (image-text-to-text)" in text
    assert "model_type 'gpt2'" in text and "loadable checkpoint" not in text


def test_text_only_model_with_backend_hf_mllm_is_refused_as_not_multimodal(tmp_path):
    """probe --backend hf-mllm with a text-only LM: refused from its config.json, before any weights load."""
    from causal_helpers import tiny_bpe_gpt2

    gpt2 = tiny_bpe_gpt2(tmp_path / "gpt2")
    (gpt2 / "model.safetensors").unlink()
    result = invoke("probe", "size", "--model", gpt2, "--backend", "hf-mllm", "--out", tmp_path / "run", code=2)
    text = " ".join(result.output.split())
    assert f"--model '{gpt2}' is not a multimodal LLM (image-text-to-text), as --backend hf-mllm needs" in text
    assert "loadable checkpoint" not in text


def test_blind_floor_and_contrast_a_yes_sayer_scores_100_as_judged_and_blind_and_exactly_50_with_contrast(
        images, yes_model, tmp_path):
    """the same judge with a blank image and with none gives its prior (a yes-sayer: 100,
    as judged: its score measures nothing); asked the opposite relation too, it scores chance."""
    from spatialprobe.judging.vqa import vqa_judge_run

    out = tmp_path / "judge"
    summary = vqa_judge_run(str(images), str(out), "posrel", Spec("hf-mllm", {"model": str(yes_model)}),
                            device="cpu", batch_size=4, floor=True, contrast=True)
    m = summary["metrics"]
    assert m["accuracy"]["mean"] == 100.0  # the claim alone: as without the floor
    assert m["accuracy_blank"]["mean"] == m["accuracy_none"]["mean"] == 100.0
    assert m["contrast_accuracy"]["mean"] == 50.0
    rows = [json.loads(line) for line in (out / "predictions.jsonl").open(encoding="utf-8")]
    opposite = {"above": "below", "below": "above", "inside": "beside", "beside": "inside"}
    for row in rows:
        assert row["contrast_answer"] == "yes" and row["contrast_score"] == 50.0
        assert f" {opposite[row['gold']]} the " in row["contrast_question"]
    table = (out / "table.md").read_text(encoding="utf-8")
    assert "| with contrast questions (a yes-sayer: 50) | 50.0 [" in table
    assert "| blind floor: no image | 100.0 [" in table

