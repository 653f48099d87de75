"""The causal-LM scorer and --format chat: known answers from tiny GPT-2s built (and trained) here."""

import json
import math

import pytest
from causal_helpers import CHAT_TEMPLATE, gpt2_tokenizer, size_texts, trained_gpt2, untrained_gpt2
from conftest import SHARED
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.models import chat
from spatialprobe.models.base import ScoreRequest
from spatialprobe.models.choice import auto_scorer
from spatialprobe.tasks import data as task_data

runner = CliRunner()
V = 50265  # GPT-2's byte-level BPE as ../shared/models/roberta-base's vocab.json holds it


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def rows(run):
    return [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def tokenizer():
    if not SHARED.is_dir():  # as conftest's shared_dir fixture, for module-scoped fixtures
        pytest.skip("../shared is not present")
    return gpt2_tokenizer(SHARED, CHAT_TEMPLATE)


@pytest.fixture(scope="module")
def flat_dir(tokenizer, tmp_path_factory):
    """Untrained, LM head zeroed: every token of every continuation has log-probability -log V."""
    return untrained_gpt2(tmp_path_factory.mktemp("flat"), tokenizer)


@pytest.fixture(scope="module")
def trained_dir(tokenizer, tmp_path_factory):
    """Trained on the 500 size facts, stated as sentences and answered as chat replies."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return trained_gpt2(tmp_path_factory.mktemp("trained"), tokenizer, size_texts(tokenizer, chat=True),
                            steps=800, lr=3e-3)
    finally:
        torch.set_num_threads(threads)


def scorer(path, **kwargs):
    from spatialprobe.models.causal_lm import CausalLMScorer

    return CausalLMScorer(str(path), device="cpu", **kwargs)


# -- the scorer ------------------------------------------------------------------------------------
def test_continuation_is_the_word_and_the_suffix_split_as_lm_eval_splits_it(flat_dir, tokenizer):
    ids, n = scorer(flat_dir).encode("An ant is ", "larger than a bird.")
    assert tokenizer.convert_ids_to_tokens(list(ids)) == [
        "<|endoftext|>", "An", "Ġant", "Ġis", "Ġlarger", "Ġthan", "Ġa", "Ġbird", "."]
    assert n == 5  # the context's trailing space moved into the continuation: "Ġlarger"


def test_normalizations_divide_the_log_likelihood_by_nothing_tokens_or_characters(flat_dir):
    request = ScoreRequest("An ant is ", " than a bird.", ("larger", "tinier"))  # tinier: Ġtin ier
    log_v = math.log(V)
    assert scorer(flat_dir).score([request]) == [pytest.approx((-5 * log_v, -6 * log_v), abs=1e-4)]
    assert scorer(flat_dir, normalize="token").score([request]) == [pytest.approx((-log_v, -log_v), abs=1e-5)]
    expected = (-5 * log_v / len("larger than a bird."), -6 * log_v / len("tinier than a bird."))
    assert scorer(flat_dir, normalize="char").score([request]) == [pytest.approx(expected, abs=1e-5)]


def test_batched_scores_equal_one_sequence_at_a_time(tokenizer, tmp_path):
    path = untrained_gpt2(tmp_path / "random", tokenizer, zero_head=False)
    requests = [ScoreRequest("A house is ", " than a cup.", ("larger", "smaller", "huger")),
                ScoreRequest("", " is what it is.", ("Size",)),
                ScoreRequest("Compared to a bird, an ant is ", ".", ("smaller", "tinier"))]
    batched = scorer(path, batch_size=64).score(requests)
    for got, want in zip(batched, scorer(path, batch_size=1).score(requests), strict=True):
        assert got == pytest.approx(want, abs=1e-4)
    assert batched[0][0] != batched[0][1]  # a random head does tell the words apart


def test_chat_wraps_the_question_in_the_template_and_scores_the_reply(flat_dir, tokenizer):
    s = scorer(flat_dir, format="chat")
    request = ScoreRequest("Which is larger: an ant or a bird?", "", ("An ant", "A bird"))
    assert s.context_text(request) == "user: Which is larger: an ant or a bird?\nassistant: "
    ids, n = s.encode(s.context_text(request), "A bird")
    assert tokenizer.convert_ids_to_tokens(list(ids[-n:])) == ["ĠA", "Ġbird"]
    assert s.score([request]) == [pytest.approx((-2 * math.log(V), -2 * math.log(V)), abs=1e-4)]


def test_questions_and_options_come_from_the_task_files():
    size = task_data.load("size").instances[0]  # an ant, a bird: "smaller"
    assert chat.requests([(chat.question_template("size"), size)], "size", ("larger", "smaller")) == [
        ScoreRequest("Which is larger: an ant or a bird?", "", ("An ant", "A bird"))]
    assert chat.question_template("height") == "Which is taller: [A] or [B]?"
    assert chat.question_template("weight") == "Which is heavier: [A] or [B]?"
    posrel = task_data.load("posrel")
    request = chat.requests([(chat.question_template("posrel"), posrel.instances[0])], "posrel",
                            posrel.labels)[0]
    assert request == ScoreRequest("A man drives the bus. Where is the man relative to the bus: above, "
                                   "below, inside or beside?", "", ("Above", "Below", "Inside", "Beside"))


# -- --scorer auto --------------------------------------------------------------------------------
def test_auto_reads_the_architecture_from_the_config(flat_dir, tmp_path):
    assert auto_scorer(str(flat_dir)) == ("hf-causal", f"architecture GPT2LMHeadModel in {flat_dir}/config.json")
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertForMaskedLM"]}))
    assert auto_scorer(str(bert))[0] == "hf-mlm"
    (bert / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert auto_scorer(str(bert)) == ("hf-causal", f"model_type 'llama' (no architectures) in {bert}/config.json")
    (bert / "config.json").write_text(json.dumps({"model_type": "bert"}))  # bert is masked and causal
    assert auto_scorer(str(bert)) == ("hf-mlm", "no cloze scorer accepts model_type 'bert' (no architectures) in "
                                      f"{bert}/config.json; fell back to the hf-mlm scorer")


def test_auto_without_a_readable_config_falls_back_to_the_masked_scorer_and_says_why():
    assert auto_scorer("nobody/not-cached-anywhere") == (
        "hf-mlm", "no readable configuration (the configuration of 'nobody/not-cached-anywhere' is "
        "neither local nor in the Hugging Face cache); fell back to the hf-mlm scorer")


# -- through the CLI ------------------------------------------------------------------------------
def probe(model, out, *options):
    return invoke("probe", "size", "--model", model, "--out", out, "--device", "cpu", *options)


def test_trained_causal_lm_recovers_the_size_facts(trained_dir, tmp_path):
    result = probe(trained_dir, tmp_path / "run", "--candidates", "manual")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["accuracy"]["mean"] >= 95.0
    config = json.loads((tmp_path / "run" / "config.json").read_text())["settings"]
    assert config["scorer"]["name"] == "hf-causal"
    assert config["scorer"]["args"] == {"model": str(trained_dir), "normalize": "sum", "format": "plain"}
    assert summary["details"]["scorer_choice"] == {
        "scorer": "hf-causal", "reason": f"architecture GPT2LMHeadModel in {trained_dir}/config.json"}


def test_untrained_causal_lm_ties_and_the_first_label_wins(flat_dir, tmp_path):
    # " larger" and " smaller" are one token each: equal scores, so argmax takes "larger"
    result = probe(flat_dir, tmp_path / "run", "--candidates", "manual")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert {r["pred"] for r in rows(tmp_path / "run")} == {"larger"}
    assert summary["accuracy"]["mean"] == 50.0 and summary["macro_f1"]["mean"] == pytest.approx(100 / 3)


def test_trained_chat_model_answers_which_is_larger(trained_dir, tmp_path):
    result = probe(trained_dir, tmp_path / "run", "--format", "chat")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["accuracy"]["mean"] >= 95.0
    settings = json.loads((tmp_path / "run" / "config.json").read_text())["settings"]
    assert settings["candidates"]["templates"] == ["Which is larger: [A] or [B]?"]
    assert settings["scorer"]["args"]["format"] == "chat"


def test_untrained_chat_model_prefers_the_shorter_reply_and_ties_go_to_the_first(flat_dir, tokenizer, tmp_path):
    result = probe(flat_dir, tmp_path / "run", "--format", "chat")
    assert result.exit_code == 0, result.output

    def tokens(obj):  # the reply's tokens after "assistant:": " A bird" -> ĠA Ġbird
        return len(tokenizer(" " + chat.options("size", _inst(obj), ("larger", "smaller"))[0])["input_ids"])

    for r in rows(tmp_path / "run"):
        expected = "larger" if tokens(r["obj_a"]) <= tokens(r["obj_b"]) else "smaller"
        assert r["pred"] == expected, r
    from transformers import AutoTokenizer

    from spatialprobe.tasks.levels import capitalize_first, with_article

    first = rows(tmp_path / "run")[0]  # the row says what was scored: the objects, as the model saw them
    question = f"Which is larger: {with_article(first['obj_a'])} or {with_article(first['obj_b'])}?"
    assert first["question"] == question
    assert first["answers"] == [capitalize_first(with_article(first[k])) for k in ("obj_a", "obj_b")]
    assert first["prompt"] == AutoTokenizer.from_pretrained(flat_dir).apply_chat_template(
        [{"role": "user", "content": question}], add_generation_prompt=True, tokenize=False)
    assert first["prompt"] != question
    result = probe(flat_dir, tmp_path / "token", "--format", "chat", "--normalize", "token")
    assert result.exit_code == 0, result.output  # per token every reply scores -log V: all ties
    assert json.loads((tmp_path / "token" / "summary.json").read_text())["accuracy"]["mean"] == 50.0


def _inst(obj):
    from spatialprobe.records import Instance

    return Instance("x", "size", obj, obj, "larger")


def test_options_that_do_not_apply_are_refused(flat_dir, tokenizer, tmp_path):
    result = probe("dummy", tmp_path / "a", "--normalize", "token")
    assert result.exit_code == 2 and "--normalize applies to the hf-causal and hf-mllm scorers only" in result.output
    result = probe("dummy", tmp_path / "b", "--format", "chat")
    assert result.exit_code == 2 and "--format chat applies to the hf-causal scorer only" in result.output
    result = probe(flat_dir, tmp_path / "c", "--format", "chat", "--candidates", "manual")
    assert result.exit_code == 2 and "--candidates does not apply to --format chat" in result.output
    plain = tmp_path / "plain"
    tokenizer.chat_template = None
    try:
        untrained_gpt2(plain, tokenizer)
    finally:
        tokenizer.chat_template = CHAT_TEMPLATE
    result = probe(plain, tmp_path / "d", "--format", "chat")
    assert result.exit_code == 2 and "has no chat template, so --format chat" in result.output


def test_resume_refuses_another_normalization_accepts_another_batch_size_and_replays(flat_dir, tmp_path):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("obj_a,obj_b,label\nant,house,smaller\nhouse,ant,larger\ncup,plane,smaller\n"
                     "plane,cup,larger\n")
    run = tmp_path / "run"
    base = ("--pairs", pairs, "--candidates", "manual", "--folds", "2")
    assert probe(flat_dir, run, *base).exit_code == 0
    result = probe(flat_dir, run, *base, "--normalize", "char")
    assert result.exit_code == 2
    assert "scorer.args.normalize: 'sum' -> 'char'" in result.output
    assert probe(flat_dir, run, *base, "--batch-size", "3").exit_code == 0
    again = invoke("run", run / "config.json", "--out", tmp_path / "replay")
    assert again.exit_code == 0, again.output
    assert (tmp_path / "replay" / "predictions.jsonl").read_text() == (run / "predictions.jsonl").read_text()


def test_posrel_chat_asks_where_and_ties_go_to_the_first_relation(flat_dir, tmp_path):
    # " Above", " Below", " Inside", " Beside" are one token each: every option scores -log V
    result = invoke("probe", "posrel", "--model", flat_dir, "--out", tmp_path / "run", "--device", "cpu",
                    "--format", "chat")
    assert result.exit_code == 0, result.output
    predictions = rows(tmp_path / "run")
    assert {r["pred"] for r in predictions} == {"above"}
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    for fold in summary["details"]["folds"]:
        tested = [r for r in predictions if r["fold"] == fold["fold"]]
        assert fold["accuracy"] == pytest.approx(100 * sum(r["gold"] == "above" for r in tested) / len(tested))
    settings = json.loads((tmp_path / "run" / "config.json").read_text())["settings"]
    assert settings["candidates"]["templates"] == [
        "[SCENARIO] Where is the [PERSON] relative to the [OBJECT]: above, below, inside or beside?"]
