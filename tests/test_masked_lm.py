import math

import numpy as np
import pytest
import torch
from mlm_helpers import set_output_bias, tiny_bpe_roberta, tiny_distilbert, tiny_wordpiece_bert

from spatialprobe.models.base import ScoreRequest
from spatialprobe.models.masked_lm import MaskedLMScorer, ModelLoadError


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return tiny_wordpiece_bert(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def roberta_dir(tmp_path_factory):
    return tiny_bpe_roberta(tmp_path_factory.mktemp("roberta"))


def _reference(model_dir, prefix, suffix, word):
    """Mean log-probability of the word's pieces, one unbatched forward pass per word."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForMaskedLM.from_pretrained(model_dir).eval()
    pieces = tok(" " + word, add_special_tokens=False)["input_ids"]
    text = prefix + " ".join([tok.mask_token] * len(pieces)) + suffix
    if tok.mask_token == "<mask>":  # byte-level BPE: masks written without spaces between them
        text = prefix.rstrip() + tok.mask_token * len(pieces) + suffix
    enc = tok(text, return_tensors="pt")
    with torch.no_grad():
        logprobs = model(**enc).logits.log_softmax(-1)[0]
    positions = (enc["input_ids"][0] == tok.mask_token_id).nonzero().flatten().tolist()
    return float(np.mean([logprobs[p, i].item() for p, i in zip(positions, pieces, strict=True)]))


def test_batched_scores_equal_unbatched_reference(bert_dir):
    scorer = MaskedLMScorer(str(bert_dir), device="cpu", batch_size=3)
    requests = [ScoreRequest("An ant is ", " than a bird.", ("larger", "smaller", "huger")),
                ScoreRequest("A house is much ", " than a cup.", ("larger", "tinier")),
                ScoreRequest("A man drives the car. He is ", " the car.", ("inside", "beside", "above"))]
    got = scorer.score(requests)
    for req, scores in zip(requests, got, strict=True):
        for word, score in zip(req.options, scores, strict=True):
            assert score == pytest.approx(_reference(bert_dir, req.prefix, req.suffix, word), abs=1e-4)


def test_multi_piece_answers_use_one_mask_per_piece_and_mean_log_probability(tmp_path):
    path = tiny_wordpiece_bert(tmp_path / "m")
    set_output_bias(path, {"larger": 4.0, "hug": 6.0, "##er": 2.0, "tin": 1.0, "##ier": 1.0})
    scorer = MaskedLMScorer(str(path), device="cpu")
    assert scorer.tokenizer.tokenize("huger") == ["hug", "##er"]
    vocab = len(scorer.tokenizer)
    z = math.log(math.exp(4) + math.exp(6) + math.exp(2) + 2 * math.exp(1) + (vocab - 5))
    (scores,) = scorer.score([ScoreRequest("An ant is ", " than a bird.", ("larger", "huger", "tinier", "cup"))])
    assert scores[0] == pytest.approx(4 - z, abs=1e-4)
    assert scores[1] == pytest.approx(((6 - z) + (2 - z)) / 2, abs=1e-4)
    assert scores[2] == pytest.approx(((1 - z) + (1 - z)) / 2, abs=1e-4)
    assert scores[3] == pytest.approx(-z, abs=1e-4)


def test_leading_space_tokenizer_scores_the_spaced_word(roberta_dir, tmp_path):
    scorer = MaskedLMScorer(str(roberta_dir), device="cpu")
    assert scorer.tokenizer.convert_ids_to_tokens(scorer.word_pieces("larger", after_space=True)) == ["Ġlarger"]
    assert scorer.tokenizer.convert_ids_to_tokens(scorer.word_pieces("huger", after_space=True)) == ["Ġhu", "ger"]
    requests = [ScoreRequest("An ant is ", " than a bird.", ("larger", "smaller", "huger"))]
    for word, score in zip(requests[0].options, scorer.score(requests)[0], strict=True):
        assert score == pytest.approx(_reference(roberta_dir, "An ant is ", " than a bird.", word), abs=1e-4)
    # with only "Ġlarger" raised, the spaced piece must win: the unspaced pieces would not
    path = tiny_bpe_roberta(tmp_path / "r")
    set_output_bias(path, {"Ġlarger": 5.0, "lar": 3.0, "ger": 3.0})
    (scores,) = MaskedLMScorer(str(path), device="cpu").score(
        [ScoreRequest("An ant is ", " than a bird.", ("larger", "smaller"))])
    assert scores[0] > scores[1] + 4


def test_real_bert_tokenizer_word_pieces(shared_dir, tmp_path):
    """The genuine bert-base-uncased vocabulary: 'bookshelf' is three pieces, in prompts and answers."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    source = shared_dir / "models" / "bert-base-uncased"
    tok = AutoTokenizer.from_pretrained(source)
    assert tok.tokenize("bookshelf") == ["books", "##hel", "##f"]
    config = BertConfig.from_pretrained(source)
    config.update({"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64})
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    scorer = MaskedLMScorer(str(tmp_path), device="cpu")
    seq = scorer._encode("A bookshelf is ", 3, " than an ant.")
    assert scorer.tokenizer.convert_ids_to_tokens(list(seq)) == \
        ["[CLS]", "a", "books", "##hel", "##f", "is", "[MASK]", "[MASK]", "[MASK]", "than", "an", "ant", ".", "[SEP]"]
    req = ScoreRequest("An ant is ", " than a bookshelf.", ("larger", "bookshelf"))
    (scores,) = scorer.score([req])
    assert scores[1] == pytest.approx(_reference(tmp_path, req.prefix, req.suffix, "bookshelf"), abs=1e-4)


def test_unloadable_model_gets_one_clear_sentence(tmp_path):
    with pytest.raises(ModelLoadError, match=r"Could not load .* local directory"):
        MaskedLMScorer(str(tmp_path / "no-such-model"), device="cpu")


def test_describe_records_weights_hash(bert_dir):
    a = MaskedLMScorer(str(bert_dir), device="cpu").describe()
    b = MaskedLMScorer(str(bert_dir), device="cpu").describe()
    assert a["weights_sha256"] == b["weights_sha256"] and len(a["weights_sha256"]) == 16
    assert a["model"] == str(bert_dir)


def test_models_whose_head_is_not_one_module_keep_the_full_pass(bert_dir, tmp_path):
    """DistilBERT's head is three modules: the scorer must fall back to the full forward pass."""
    tiny_distilbert(tmp_path, bert_dir)
    scorer = MaskedLMScorer(str(tmp_path), device="cpu")
    assert scorer._head is None
    assert MaskedLMScorer(str(bert_dir), device="cpu")._head is not None
    req = ScoreRequest("An ant is ", " than a bird.", ("larger", "huger"))
    for word, score in zip(req.options, scorer.score([req])[0], strict=True):
        assert score == pytest.approx(_reference(tmp_path, req.prefix, req.suffix, word), abs=1e-4)


def test_hub_id_offline_fails_at_once_without_retries(monkeypatch):
    import time

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(ModelLoadError, match="hub cannot be reached"):
        MaskedLMScorer("no-such-org/no-such-model", device="cpu")
    assert time.perf_counter() - start < 10
