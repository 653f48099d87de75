"""ViLT masked-LM cloze scorer: known answers from a tiny model, image options."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from vl_helpers import WORDS, solid_image, tiny_vilt  # noqa: E402

from spatialprobe import registry  # noqa: E402
from spatialprobe.imagestore import ImageStore, PromptItem  # noqa: E402
from spatialprobe.loading import ModelLoadError  # noqa: E402
from spatialprobe.models.base import Scorer, ScoreRequest  # noqa: E402
from spatialprobe.models.vilt import ViltMaskedLMScorer, attach_images  # noqa: E402


@pytest.fixture(scope="module")
def vilt_dir(tmp_path_factory):
    return tiny_vilt(tmp_path_factory.mktemp("vilt"))


def direct_scores(model_dir, text, pieces, image):
    """Mean log-prob of ``pieces`` at the [MASK] positions, from the model called directly."""
    from transformers import ViltForMaskedLM, ViltProcessor

    processor = ViltProcessor.from_pretrained(model_dir)
    model = ViltForMaskedLM.from_pretrained(model_dir).eval()
    inputs = processor(images=[image], text=[text], return_tensors="pt")
    with torch.no_grad():
        log_probs = model(**inputs).logits[0].log_softmax(-1)
    ids = inputs["input_ids"][0].tolist()
    positions = [i for i, t in enumerate(ids) if t == processor.tokenizer.mask_token_id]
    assert len(positions) == len(pieces)
    return sum(log_probs[p, t].item() for p, t in zip(positions, pieces, strict=True)) / len(pieces)


def test_scores_match_direct_computation_with_multi_piece_word(vilt_dir):
    scorer = registry.build("model", registry.Spec("vilt", {"model": str(vilt_dir), "device": "cpu"}))
    assert isinstance(scorer, Scorer)
    request = ScoreRequest("An ant is", " than a bird.", ("larger", "bigger"))
    got = scorer.score([request])[0]
    tok = scorer.tokenizer
    assert tok.tokenize("bigger") == ["big", "##ger"]
    for word, value in zip(request.options, got, strict=True):
        pieces = tok.encode(word, add_special_tokens=False)
        text = "An ant is " + " ".join(["[MASK]"] * len(pieces)) + " than a bird."
        assert value == pytest.approx(direct_scores(vilt_dir, text, pieces, scorer.blank), abs=1e-5)


def test_bias_towards_a_word_decides_the_answer(tmp_path):
    from transformers import ViltForMaskedLM

    model_dir = tiny_vilt(tmp_path / "vilt")
    model = ViltForMaskedLM.from_pretrained(model_dir)
    tok_id = 5 + WORDS.index("smaller")  # 5 special tokens come first in the helper vocabulary
    with torch.no_grad():
        model.mlm_score.decoder.bias[tok_id] += 50.0
    model.save_pretrained(model_dir)
    scorer = ViltMaskedLMScorer(str(model_dir), device="cpu")
    assert scorer.tokenizer.convert_ids_to_tokens(tok_id) == "smaller"
    larger, smaller = scorer.score([ScoreRequest("An ant is", " than a bird.", ("larger", "smaller"))])[0]
    assert smaller > larger and smaller > -1e-3


def test_image_options_request_and_synthesis_run(vilt_dir, tmp_path):
    red = solid_image(tmp_path / "red.png", (250, 0, 0))
    request = ScoreRequest("An ant is", " than a bird.", ("larger", "smaller"))
    blank = ViltMaskedLMScorer(str(vilt_dir), device="cpu").score([request])[0]
    with_image = ViltMaskedLMScorer(str(vilt_dir), image="request", device="cpu")
    red_scores = with_image.score([ScoreRequest(request.prefix, request.suffix, request.options, red)])[0]
    assert red_scores != pytest.approx(blank, abs=1e-6)
    assert with_image.score([request])[0] == pytest.approx(blank)  # no image -> blank image

    store = ImageStore(tmp_path / "run")
    store.add_prompts([PromptItem("size-0000", "An ant and a bird.", {"obj_a": "ant", "obj_b": "bird"}),
                       PromptItem("size-0001", "A bird and an ant.", {"obj_a": "bird", "obj_b": "ant"})])
    from PIL import Image

    store.save_image(Image.open(red), "size-0000", 0, seed=0, backend="test", model="m", settings={})
    store.save_image(Image.new("RGB", (40, 40), (0, 0, 250)), "size-0001", 0, seed=0, backend="test",
                     model="m", settings={})
    from_run = ViltMaskedLMScorer(str(vilt_dir), image=str(tmp_path / "run"), device="cpu")
    assert from_run.score([request])[0] == pytest.approx(red_scores, abs=1e-5)
    attached = attach_images([request], ["size-0000"], store)
    assert attached[0].image == store.image_path("size-0000", 0)


def test_image_option_typo_is_an_error_that_creates_nothing(vilt_dir, tmp_path):
    for option in (str(tmp_path / "blnk"), str(vilt_dir)):  # no such path; a directory that is no run
        with pytest.raises(ValueError, match="neither 'blank', 'request' nor a synthesis run"):
            ViltMaskedLMScorer(str(vilt_dir), image=option, device="cpu")
    assert not (tmp_path / "blnk").exists() and not (vilt_dir / "run.sqlite").exists()


def test_missing_model_says_what_to_do(tmp_path):
    with pytest.raises(ModelLoadError, match="local directory"):
        ViltMaskedLMScorer(str(tmp_path / "no-such-model"), device="cpu")


def test_probe_command_runs_vilt_through_the_same_prober(tmp_path):
    """`spatialprobe probe size --model VILT_DIR` picks the ViLT scorer and writes a normal run."""
    import json

    import torch
    from transformers import BertTokenizerFast, ViltForMaskedLM
    from typer.testing import CliRunner

    from spatialprobe.cli import app
    from spatialprobe.files import read_jsonl

    model_dir = tiny_vilt(tmp_path / "tiny-model")  # found by its config's model_type, not its name
    # Its masked-LM head says "larger" at every mask, whatever the input: every prediction is "larger".
    model = ViltForMaskedLM.from_pretrained(model_dir)
    larger = BertTokenizerFast.from_pretrained(model_dir).convert_tokens_to_ids("larger")
    with torch.no_grad():
        model.mlm_score.decoder.weight.zero_()
        model.mlm_score.decoder.bias.zero_()
        model.mlm_score.decoder.bias[larger] = 5.0
    model.save_pretrained(model_dir)
    result = CliRunner().invoke(app, ["probe", "size", "--model", str(model_dir), "--candidates", "manual",
                                      "--device", "cpu", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["settings"]["scorer"]["name"] == "vilt" and config["settings"]["scorer"]["args"]["image"] == "blank"
    rows = read_jsonl(tmp_path / "run" / "predictions.jsonl")
    assert {r["pred"] for r in rows} == {"larger"}
    # every fold holds each pair in both orders: half its gold labels are "larger", so 50% everywhere
    assert [f["accuracy"] for f in summary["details"]["folds"]] == [50.0] * 5
    assert (summary["accuracy"]["mean"], summary["accuracy"]["std"]) == (50.0, 0.0)


def test_prompt_over_40_tokens_is_a_clear_error_not_a_crash_or_truncation(vilt_dir):
    """The tiny tokenizer has no model_max_length: the 40-token limit comes from the model."""
    scorer = ViltMaskedLMScorer(str(vilt_dir), device="cpu")
    assert scorer.max_text_length == 40
    long = " ".join(["the cat"] * 20)
    for request in (ScoreRequest(long + " is", " than a bird.", ("larger",)),  # masks past 40
                    ScoreRequest("An ant is", " than a bird. " + long, ("larger",))):  # suffix past 40
        with pytest.raises(ValueError, match="ViLT reads at most 40"):
            scorer.score([request])
    fits = ScoreRequest(" ".join(["the cat"] * 15), " is big.", ("larger", "bigger"))  # 38 tokens
    assert len(scorer.score([fits])[0]) == 2
