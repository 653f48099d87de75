"""The fast paths give the previous scores: the causal LM's shared contexts, ViLT's one pass per prompt.

The previous code is kept in ``tests/causal_reference.py`` and ``tests/vilt_reference.py``; both
paths run on the same model object. Bounds: the causal path adds the same float32
log-probabilities from matrices of other shapes, so a sentence's log-likelihood (about -50 with
GPT-2's 50,265 ids) may differ in its last bits: at most ``CAUSAL_BOUND``; ViLT's logits at a mask
come from the same text and image, so its scores agree to ``VILT_BOUND``. Every request's best
word is the same.
"""

from __future__ import annotations

import numpy as np
import pytest
from causal_helpers import CHAT_TEMPLATE, gpt2_tokenizer, untrained_gpt2
from causal_reference import MaterializedHead, ReferenceCausalLM, materialized
from conftest import SHARED
from vilt_reference import ReferenceVilt

from spatialprobe.models import chat
from spatialprobe.models.base import ScoreRequest
from spatialprobe.models.causal_lm import CausalLMScorer
from spatialprobe.models.causal_prefix import HeadLogProbs, SharedPrefix
from spatialprobe.models.vilt import ViltMaskedLMScorer
from spatialprobe.prompts.templates import builtin, fill
from spatialprobe.tasks import data as task_data

CAUSAL_BOUND = 5e-5
"""|log-likelihood difference|, float32: a few units in the last place of numbers near -50."""
HEAD_BOUND = 1e-5
"""|difference| between the chunked head and the head's logits written out whole."""
VILT_BOUND = 1e-5


def size_requests(instances: int) -> list[ScoreRequest]:
    ds, cands = task_data.load("size"), builtin("size")
    words = tuple(dict.fromkeys(w for answers in cands.answer_sets(ds.labels) for w in answers))
    return [ScoreRequest(*fill(t, inst), words) for t in cands.templates for inst in ds.instances[:instances]]


def assert_same(new, old, bound):
    assert [len(s) for s in new] == [len(s) for s in old]
    flat = [(a, b) for x, y in zip(new, old, strict=True) for a, b in zip(x, y, strict=True)]
    assert max(abs(a - b) for a, b in flat) <= bound
    assert [int(np.argmax(s)) for s in new] == [int(np.argmax(s)) for s in old]


def count_passes(module) -> list[int]:
    """Rows of every forward pass of ``module`` from now on."""
    rows: list[int] = []
    forward = module.forward

    def counted(*args, **kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        rows.append(len(ids))
        return forward(*args, **kwargs)

    module.forward = counted
    return rows


# -- the causal LM -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return untrained_gpt2(tmp_path_factory.mktemp("gpt2"), gpt2_tokenizer(SHARED, CHAT_TEMPLATE), zero_head=False)


def causal(path, **kwargs) -> CausalLMScorer:
    return CausalLMScorer(str(path), device="cpu", **kwargs)


@pytest.mark.parametrize("batch_size", [64, 7])
def test_causal_scores_of_the_size_probe_equal_the_previous_path(gpt2_dir, batch_size):
    scorer = causal(gpt2_dir, batch_size=batch_size)
    assert scorer._shared is not None and scorer._shared.head is scorer.model.get_output_embeddings()
    requests = size_requests(2)  # 10 prompts x 2 instances x 20 words, of 1 to 3 tokens
    assert_same(scorer.score(requests), ReferenceCausalLM(scorer).score(requests), CAUSAL_BOUND)


def test_causal_chat_and_normalized_scores_equal_the_previous_path(gpt2_dir):
    ds = task_data.load("size")
    template = chat.question_template("size")
    requests = chat.requests([(template, inst) for inst in ds.instances[:12]], "size", ds.labels)
    for normalize in ("sum", "token", "char"):
        scorer = causal(gpt2_dir, format="chat", normalize=normalize)
        assert_same(scorer.score(requests), ReferenceCausalLM(scorer).score(requests), CAUSAL_BOUND)


def test_causal_context_boundaries_keep_the_previous_tokens(gpt2_dir):
    """A BPE merge across the context's end, no context, trailing spaces, one-token continuations."""
    scorer = causal(gpt2_dir, batch_size=4)
    tok = scorer.tokenizer
    # "An ant is sm" + "aller ...": the sentence's tokens hold "Ġsmaller", which crosses the end of
    # the context; the context keeps its own tokens (..., "Ġsm") and the continuation is "aller ..."
    ids, n = scorer.encode("An ant is sm", "aller than a bird.")
    assert tok.convert_ids_to_tokens(list(ids)) == [
        "<|endoftext|>", "An", "Ġant", "Ġis", "Ġsm", "all", "er", "Ġthan", "Ġa", "Ġbird", "."]
    assert n == 6 and "Ġsmaller" in tok.tokenize("An ant is smaller than a bird.")
    requests = [ScoreRequest("An ant is sm", " than a bird.", ("aller", "all", "art")),
                ScoreRequest("", " is large.", ("A house", "Size")),  # the context is <|endoftext|> alone
                ScoreRequest("An ant is  ", "", ("big", "small", "tiny")),  # one token each
                ScoreRequest("An ant is sm", " than a bird.", ("aller",))]
    new = scorer.score(requests)
    assert_same(new, ReferenceCausalLM(scorer).score(requests), CAUSAL_BOUND)
    assert new[3][0] == new[0][0]  # the same sentence, the same sequence


def test_causal_passes_are_one_per_context_length_and_batch_of_options(gpt2_dir):
    scorer = causal(gpt2_dir, batch_size=8)
    words = tuple(dict.fromkeys(w for a in builtin("size").answer_sets(("larger", "smaller")) for w in a))
    requests = [ScoreRequest("An ant is ", " than a bird.", words),
                ScoreRequest("A very big house is ", " than a bird.", words),
                ScoreRequest("An ant is ", " than a bird.", words)]  # the same context: no new pass
    assert len(words) == 20 and len({len(scorer.encode(r.prefix, "x")[0]) for r in requests}) == 2
    passes = count_passes(scorer.model.transformer)
    new = scorer.score(requests)
    # one prefix pass per context length (1 row each), then the 20 options of each in passes of 8
    assert passes == [1, 8, 8, 4, 1, 8, 8, 4]
    passes.clear()
    ReferenceCausalLM(scorer).score(requests)
    assert passes == [8, 8, 8, 8, 8]  # the previous path: 40 distinct sentences, 8 per pass
    passes.clear()
    scorer.score([ScoreRequest("An ant is", "", ("big", "small", "tiny")), ScoreRequest("A cup is", "", ("big",))])
    assert passes == [2]  # one-token options: the contexts' pass reads them all
    assert new[0] == new[2]


def test_causal_models_failing_the_check_keep_full_passes(gpt2_dir, monkeypatch):
    from transformers import GPT2LMHeadModel

    requests = size_requests(1)
    model = GPT2LMHeadModel.from_pretrained(gpt2_dir)
    model.get_output_embeddings = lambda: None  # no head module: the model's own logits are read
    scorer = causal(gpt2_dir, model_obj=model)
    assert scorer._shared is not None and scorer._shared.head is None
    assert_same(scorer.score(requests), ReferenceCausalLM(scorer).score(requests), CAUSAL_BOUND)

    def no_cache(self, prefixes):
        raise TypeError("returned no key/value cache")

    monkeypatch.setattr(SharedPrefix, "_prefix_pass", no_cache)
    scorer = causal(gpt2_dir)
    assert scorer._shared is None
    passes = count_passes(scorer.model.transformer)
    assert scorer.score(requests) == ReferenceCausalLM(scorer).score(requests)  # the same code
    assert len(passes) == 2 * 4  # 10 prompts x 20 words, 64 per pass, twice


# -- the chunked head ------------------------------------------------------------------
@pytest.mark.parametrize("bias", [False, True])
def test_chunked_head_equals_the_whole_logits_on_random_inputs(bias):
    """Blocks of 512 rows and chunks of the vocabulary (5,003 ids: the last chunk is short) give
    log_softmax's numbers, as exactly as float32 allows: float64's answer within 1e-5, and no
    further from it than the whole logits' own ``torch.logsumexp``."""
    import torch

    torch.manual_seed(0)
    head = torch.nn.Linear(24, 5003, bias=bias)
    torch.nn.init.normal_(head.weight, std=0.6)
    states, targets = torch.randn(1100, 24), torch.randint(0, 5003, (1100,))
    rows = torch.randperm(1100)[:700]
    chunked, reference = HeadLogProbs(head), MaterializedHead(head)
    assert chunked.fused
    with torch.inference_mode():
        new = chunked.logprobs(states, rows, targets[rows])
        old = reference.logprobs(states, rows, targets[rows])
        exact = torch.log_softmax(torch.nn.functional.linear(states.double(), head.weight.double(),
                                                             None if head.bias is None else head.bias.double()), -1)
    exact = exact[rows].gather(1, targets[rows, None])[:, 0]
    assert (new - old).abs().max() <= HEAD_BOUND
    assert (new.double() - exact).abs().max() <= max(HEAD_BOUND, 1.5 * float((old.double() - exact).abs().max()))


def test_chunked_head_recomputes_a_row_whose_later_logits_overflow_the_first_chunks_shift():
    """Row 0's logits are 0 over the first chunk and 200 at the last id: e^200 overflows float32's
    sum, so the row is recomputed whole; row 1 (plain) is not touched."""
    import torch

    head = torch.nn.Linear(4, 3000, bias=False)
    torch.nn.init.zeros_(head.weight)
    head.weight.data[-1, 0] = 20.0
    head.weight.data[:, 1] = torch.linspace(-1, 1, 3000)
    states = torch.tensor([[10.0, 0, 0, 0], [0, 1.0, 0, 0]])
    with torch.inference_mode():
        got = HeadLogProbs(head).logsumexp(states)
    exact = torch.logsumexp(head(states).double(), -1)
    assert torch.isfinite(got).all() and (got.double() - exact).abs().max() <= HEAD_BOUND * 200


@pytest.mark.parametrize("format", ["plain", "chat"])
def test_causal_scores_equal_the_whole_logits_path(gpt2_dir, format):
    """The scorer of the earlier main (the head's logits written out whole, each pass read at
    once) and today's, on the same random GPT-2 and size requests: within 1e-5, the same best words."""
    scorer = causal(gpt2_dir, format=format, batch_size=16)
    assert isinstance(scorer._shared.reads, HeadLogProbs)
    if format == "plain":
        requests = size_requests(3)
    else:
        ds = task_data.load("size")
        requests = chat.requests([(chat.question_template("size"), inst) for inst in ds.instances[:20]],
                                 "size", ds.labels)
    assert_same(scorer.score(requests), materialized(scorer).score(requests), HEAD_BOUND)


# -- ViLT ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def vilt_dir(tmp_path_factory):
    """A tiny random ViLT with bert-base-uncased's genuine word pieces."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    import torch
    from transformers import BertTokenizerFast, ViltConfig, ViltForMaskedLM, ViltImageProcessorPil, ViltProcessor

    directory = tmp_path_factory.mktemp("vilt")
    tokenizer = BertTokenizerFast.from_pretrained(SHARED / "models" / "bert-base-uncased")
    config = ViltConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, image_size=32, patch_size=16, max_position_embeddings=40,
                        max_image_length=-1, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    ViltForMaskedLM(config).save_pretrained(directory)
    images = ViltImageProcessorPil(size={"shortest_edge": 32}, size_divisor=16)
    ViltProcessor(images, tokenizer).save_pretrained(directory)
    return directory


@pytest.mark.parametrize("batch_size", [16, 5])
def test_vilt_scores_of_the_size_probe_equal_the_previous_path(vilt_dir, batch_size):
    scorer = ViltMaskedLMScorer(str(vilt_dir), device="cpu", batch_size=batch_size, blank_size=32)
    requests = size_requests(3)
    assert {len(scorer.tokenizer.tokenize(w)) for w in requests[0].options} == {1, 2}  # e.g. tin ##ier
    assert_same(scorer.score(requests), ReferenceVilt(scorer).score(requests), VILT_BOUND)


def test_vilt_images_per_request_equal_the_previous_path(vilt_dir, tmp_path):
    from vl_helpers import solid_image

    scorer = ViltMaskedLMScorer(str(vilt_dir), image="request", device="cpu", batch_size=4, blank_size=32)
    red, blue = solid_image(tmp_path / "red.png", (250, 0, 0)), solid_image(tmp_path / "blue.png", (0, 0, 250), 64)
    words = ("larger", "smaller", "tinier")
    requests = [ScoreRequest("An ant is", " than a bird.", words, image) for image in (red, blue, None, red)]
    new = scorer.score(requests)
    assert_same(new, ReferenceVilt(scorer).score(requests), VILT_BOUND)
    assert new[0] == new[3] and new[0] != new[1]


def test_vilt_reads_single_piece_answers_in_one_pass_per_prompt(vilt_dir):
    scorer = ViltMaskedLMScorer(str(vilt_dir), device="cpu", batch_size=16, blank_size=32)
    prompts = [("An ant is", " than a bird."), ("A cat is much", " than a dog."), ("The car is", " than a cup.")]
    single = [ScoreRequest(p, s, ("larger", "smaller", "bigger", "taller")) for p, s in prompts]
    assert all(len(scorer.tokenizer.tokenize(w)) == 1 for w in single[0].options)
    passes = count_passes(scorer.model)
    scorer.score(single)
    assert passes == [3]  # one row per prompt, one pass
    passes.clear()
    ReferenceVilt(scorer).score(single)
    assert passes == [12]  # the previous path: one row per answer word
    passes.clear()
    mixed = [ScoreRequest(p, s, ("larger", "tinier", "smaller")) for p, s in prompts]  # tinier: tin ##ier
    scorer.score(mixed)
    assert passes == [6]  # one row per prompt and number of pieces
