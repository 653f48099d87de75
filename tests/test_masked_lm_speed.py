"""The fast masked-LM scoring path gives the scores of the previous code.

The previous code is kept in ``tests/mlm_reference.py``; both run on the same model object, so
any difference is the new code's. On CPU in fp32 the scores agree to 1e-6 (in fact bit for bit:
same batches, same padding, same rows into the LM head, and the piece means added in the same
order).
"""

import json

import numpy as np
import pytest
from mlm_helpers import tiny_bpe_roberta, tiny_distilbert, tiny_wordpiece_bert
from mlm_reference import ReferenceMaskedLM

from spatialprobe.models.base import ScoreRequest
from spatialprobe.models.masked_lm import MaskedLMScorer
from spatialprobe.models.mlm_batches import pack
from spatialprobe.probing.run import ProbeSettings, run_probe
from spatialprobe.prompts.templates import Candidates, builtin, fill
from spatialprobe.tasks import data as task_data


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return tiny_wordpiece_bert(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def roberta_dir(tmp_path_factory):
    return tiny_bpe_roberta(tmp_path_factory.mktemp("roberta"))


def size_requests(instances: int) -> list[ScoreRequest]:
    """The probe's requests on the size task: every built-in prompt x the first instances."""
    ds, cands = task_data.load("size"), builtin("size")
    words = tuple(dict.fromkeys(w for answers in cands.answer_sets(ds.labels) for w in answers))
    return [ScoreRequest(*fill(t, inst), options=words) for t in cands.templates for inst in ds.instances[:instances]]


def both(model_dir, requests, batch_size, progress=False):
    """(new scores, previous scores) and, with ``progress``, the progress calls of each."""
    scorer = MaskedLMScorer(str(model_dir), device="cpu", batch_size=batch_size)
    calls: tuple[list[int], list[int]] = ([], [])
    new = scorer.score(requests, progress=calls[0].append if progress else None)
    old = ReferenceMaskedLM(scorer).score(requests, progress=calls[1].append if progress else None)
    return new, old, calls


@pytest.mark.parametrize(("model", "batch_size"), [("bert", 64), ("bert", 7), ("roberta", 64), ("roberta", 1)])
def test_every_score_of_the_size_probe_equals_the_previous_path(model, batch_size, bert_dir, roberta_dir):
    requests = size_requests(10 if batch_size == 1 else 40)  # 10 prompts x 40 instances x 20 words
    new, old, _ = both(bert_dir if model == "bert" else roberta_dir, requests, batch_size)
    assert [len(scores) for scores in new] == [len(scores) for scores in old] == [20] * len(requests)
    assert np.abs(np.array(new) - np.array(old)).max() <= 1e-6


def test_odd_requests_and_progress_are_as_before(roberta_dir):
    """Empty prefix or suffix, no space before the mask, repeats, no words, different word sets."""
    requests = [ScoreRequest("An ant is ", " than a bird.", ("larger", "huger", "tinier")),
                ScoreRequest("", " is larger than a cup.", ("A house", "cup")),
                ScoreRequest("An ant is", "", ("smaller",)),
                ScoreRequest("A man drives the car. He is ", " the car.", ()),
                ScoreRequest("An ant is ", " than a bird.", ("larger", "huger", "tinier")),
                ScoreRequest("A house is much ", "  ", ("larger", "smaller", "bigger")),
                ScoreRequest("An ant is ", " than a bird.", ("tinier",))]
    new, old, calls = both(roberta_dir, requests, batch_size=3, progress=True)
    assert [len(s) for s in new] == [len(s) for s in old] == [3, 2, 1, 0, 3, 3, 1]
    for a, b in zip(new, old, strict=True):
        assert a == pytest.approx(b, abs=1e-6)
    assert new[0] == new[4]  # the same request, the same pass
    assert calls[0] == calls[1] and sum(calls[0]) == 6  # the request with no words needs no pass


def test_models_without_a_single_head_module_score_as_before(bert_dir, tmp_path):
    """DistilBERT's head is three modules: both paths run the full pass and read the masks."""
    tiny_distilbert(tmp_path, bert_dir)
    new, old, _ = both(tmp_path, size_requests(8), batch_size=16)
    assert MaskedLMScorer(str(tmp_path), device="cpu")._head is None
    assert np.abs(np.array(new) - np.array(old)).max() <= 1e-6


def test_probe_run_predictions_and_summary_are_unchanged(bert_dir, tmp_path):
    ds = task_data.load("size")
    cands = Candidates("size", ("[A] is [MASK] than [B].", "[A] is much [MASK] than [B]."),
                       {"larger": ("larger", "huger"), "smaller": ("smaller", "tinier")}, "test")
    scorer = MaskedLMScorer(str(bert_dir), device="cpu", batch_size=32)
    settings = ProbeSettings(model=str(bert_dir))
    fast = run_probe(ds, cands, settings, tmp_path / "fast", scorer=scorer)
    previous = run_probe(ds, cands, settings, tmp_path / "previous", scorer=ReferenceMaskedLM(scorer))
    assert fast["identity"] == previous["identity"]
    for summary in (fast, previous):
        summary.pop("provenance")
    assert fast == previous
    assert ((tmp_path / "fast" / "predictions.jsonl").read_text()
            == (tmp_path / "previous" / "predictions.jsonl").read_text())
    rows = (tmp_path / "fast" / "predictions.jsonl").read_text().splitlines()
    assert len(rows) == sum(fold["size"] for fold in fast["details"]["folds"]) == 1600
    assert json.loads((tmp_path / "fast" / "summary.json").read_text())["accuracy"] == fast["accuracy"]


def test_pack_lays_out_batches_padding_masks_and_reads():
    """Three sequences (mask id 9, pad id 0), two per batch: sorted by length, ties in order."""
    sequences = [(1, 5, 9, 2), (1, 9, 2), (1, 6, 9, 9, 7, 2)]
    read_seq = np.array([0, 2, 2, 1])
    read_mask = np.array([0, 0, 1, 0])
    read_vocab = np.array([11, 12, 13, 14])
    packed = pack(sequences, read_seq, read_mask, read_vocab, [np.array([[0, 2], [1, 2]])],
                  batch_size=2, pad_id=0, mask_id=9)
    # batch 0: sequences 1 and 0, width 4; batch 1: sequence 2, width 6
    assert packed.ids.tolist() == [1, 9, 2, 0, 1, 5, 9, 2, 1, 6, 9, 9, 7, 2]
    assert packed.attention.tolist() == [1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    assert [(b.rows, b.width, b.token_start, b.mask_start, b.mask_end, b.read_start, b.read_end, b.done)
            for b in packed.batches] == [(2, 4, 0, 0, 2, 0, 2, 0), (1, 6, 8, 2, 4, 2, 4, 2)]
    assert packed.mask_positions.tolist() == [1, 6, 2, 3]
    # reads sorted by mask row: sequence 1 (row 0), sequence 0 (row 1), then sequence 2's two masks
    assert packed.read_order.tolist() == [3, 0, 1, 2]
    assert packed.read_rows.tolist() == [0, 1, 0, 1]
    assert packed.read_vocab.tolist() == [14, 11, 12, 13]


def test_prompts_are_tokenised_in_one_batch_call(bert_dir, monkeypatch):
    scorer = MaskedLMScorer(str(bert_dir), device="cpu")
    batches: list[int] = []
    original = scorer._tokenize_batch
    monkeypatch.setattr(scorer, "_tokenize_batch", lambda texts: batches.append(len(texts)) or original(texts))
    requests = size_requests(5)
    scorer.score(requests)
    scorer.score(requests)  # all cached now
    # 50 distinct (prefix, suffix) pairs: 50 prefixes and 50 suffixes, all non-blank, one call
    assert batches == [100]


@pytest.mark.parametrize("model", ["bert", "roberta"])
def test_backend_tokenisation_gives_the_tokenizer_calls_ids(model, bert_dir, roberta_dir):
    scorer = MaskedLMScorer(str(bert_dir if model == "bert" else roberta_dir), device="cpu")
    texts = ["An ant is", " than a bird.", "A man drives the car. He is", "  the car, usually."]
    expected = [scorer.tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    assert scorer._tokenize_batch(texts) == expected
    scorer.tokenizer.backend_tokenizer.enable_truncation(2)  # set up otherwise: the ordinary call is used
    assert scorer._tokenize_batch(texts) == expected
