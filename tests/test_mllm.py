"""The multimodal LLM adapter (models/mllm.py) on tiny random models of REAL architectures.

Each model is built from a genuine configuration in ``../shared/models`` by the README's shrink
recipe and saved with the genuine processor files (tests/mllm_helpers.py), then loaded through
the adapter's public path (``load_pretrained``). LLaVA-1.5 carries most tests (576 image tokens,
fast); SmolVLM (its processor's image splitting off: 64 image tokens instead of 1,088) and Llama
3.2 Vision (one 560-px tile instead of four: the vision tower's attention is ~16x cheaper) check
the likelihood against a hand computation, the only settings changed for the CPU's sake.
Qwen2.5-VL runs where its processor loads (it needs torchvision, which is not installed here).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mllm_helpers import SHARED, build, processor_loads

pytest.importorskip("PIL")
pytestmark = pytest.mark.skipif(not (SHARED / "llava-1.5-7b-hf").is_dir(),
                                reason="../shared/models (genuine processor files) is absent")

from spatialprobe.models.base import GenerateRequest, ScoreRequest  # noqa: E402


def _image(colour):
    from PIL import Image

    return Image.new("RGB", (64, 64), colour)


COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (250, 250, 250), (0, 0, 0)]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Model directories, built on first use."""
    built: dict[str, Path] = {}

    def get(family: str, bias_word: str | None = None) -> Path:
        key = f"{family}-{bias_word}"
        if key not in built:
            reason = processor_loads(family)
            if reason:
                pytest.skip(reason)
            built[key] = build(family, tmp_path_factory.mktemp(key), bias_word=bias_word, tiles=1, split=False)
        return built[key]

    return get


def _adapter(path: Path, **kwargs):
    from spatialprobe.models.mllm import MultimodalLLM

    return MultimodalLLM(str(path), device="cpu", **kwargs)


def _hand_loglikelihood(adapter, request: ScoreRequest, option: str) -> float:
    """One full forward pass over prompt + reply with the processor; the sum of log-softmax at the
    positions before the reply's tokens (the reply: what prompt + reply adds to the prompt's ids)."""
    import torch

    prompt = adapter.chat_text(request.prefix, request.image is not None)
    reply = option + request.suffix
    full = prompt + (reply if prompt[-1].isspace() else " " + reply)
    images = None if request.image is None else [request.image]
    short, long = adapter.encode([prompt], images)["input_ids"][0], adapter.encode([full], images)
    ids = long["input_ids"][0]
    assert ids[:len(short)].tolist() == short.tolist()
    with torch.no_grad():
        logprobs = torch.log_softmax(adapter.model(**long).logits[0].float(), dim=-1)
    return sum(float(logprobs[t - 1, ids[t]]) for t in range(len(short), len(ids)))


# ---- known answers -----------------------------------------------------------------------------
def test_a_model_biased_toward_yes_answers_yes_on_every_item(models):
    from spatialprobe.readers.option_parser import parse_answer

    adapter = _adapter(models("llava", "Yes"), batch_size=2)
    gold = ["Yes", "No", "Yes", "No"]
    images = [_image(c) for c in COLOURS[:3]] + [None]  # the last item: the blind, text-only turn
    questions = [f"Is the cat above the dog in picture {i}?" for i in range(len(gold))]
    pairs = list(zip(questions, images, strict=True))
    replies = adapter.generate([GenerateRequest(q, im, max_new_tokens=1) for q, im in pairs])
    assert replies == ["Yes"] * 4
    parsed = [parse_answer(r, ("Yes", "No")).option for r in replies]
    assert 100 * sum(p == g for p, g in zip(parsed, gold, strict=True)) / len(gold) == 50.0  # the share of "Yes"
    scores = adapter.score([ScoreRequest(q, "", ("No", "Yes"), im) for q, im in pairs])
    assert [("No", "Yes")[max(range(2), key=s.__getitem__)] for s in scores] == ["Yes"] * 4
    longer = adapter.generate([GenerateRequest(questions[0], images[0], max_new_tokens=3, stop=(" Yes",))])
    assert longer == ["Yes"]  # "Yes Yes Yes" cut at the first stop string


def test_reordering_the_options_does_not_change_the_choice(models):
    adapter = _adapter(models("llava"))
    options = ("left of", "right of", "above", "below")
    request = ScoreRequest("Where is the cat relative to the dog?", "", options, _image(COLOURS[0]))
    base = dict(zip(options, adapter.score([request])[0], strict=True))
    for order in (options[::-1], options[1:] + options[:1]):
        moved = adapter.score([ScoreRequest(request.prefix, "", order, request.image)])[0]
        assert dict(zip(order, moved, strict=True)) == pytest.approx(base, abs=1e-5)
        assert order[max(range(4), key=moved.__getitem__)] == max(base, key=base.__getitem__)


@pytest.mark.parametrize("family", ["llava", "smolvlm", "mllama", "qwen2.5-vl"])
def test_option_scores_equal_a_hand_computation_with_and_without_the_shared_prompt(models, family):
    path = models(family)
    requests = [ScoreRequest("Where is the red ball?", " today", ("Yes", "on the table", "below it"),
                             _image(COLOURS[1])),
                ScoreRequest("Is a house larger than an ant?", "", ("Yes", "No"))]
    shared, rows = _adapter(path, prompt_cache="on"), _adapter(path, prompt_cache="off")
    assert (shared.scorer.shares_prompt, rows.scorer.shares_prompt) == (True, False)
    got = {"on": shared.score(requests), "off": rows.score(requests)}
    expected = [tuple(_hand_loglikelihood(rows, r, o) for o in r.options) for r in requests]
    for mode in ("on", "off"):
        for scores, want in zip(got[mode], expected, strict=True):
            assert scores == pytest.approx(want, abs=1e-4), mode


def test_batched_generation_equals_one_at_a_time(models):
    path = models("llava")
    requests = [GenerateRequest("Is the cat above the dog?", _image(COLOURS[0]), max_new_tokens=5),
                GenerateRequest("Where is the small red ball relative to the large blue box on the left?",
                                _image(COLOURS[1]), max_new_tokens=5),
                GenerateRequest("Which is taller?", _image(COLOURS[2]), max_new_tokens=3),
                GenerateRequest("Is an ant smaller than a bird?", None, max_new_tokens=5),
                GenerateRequest("Yes or no: is the sky below the sea, as seen in the picture?", None,
                                max_new_tokens=5)]
    batched = _adapter(path, batch_size=8)
    lengths = {int(batched.encode([batched.chat_text(r.prompt, True)], [r.image])["input_ids"].shape[1])
               for r in requests[:3]}
    assert len(lengths) == 3  # the prompts differ in length, so the batch is left-padded
    one = _adapter(path, batch_size=1)
    assert batched.generate(requests) == one.generate(requests)
    assert all(out.strip() for out in one.generate(requests))


def test_scores_are_the_same_batched_and_one_at_a_time(models):
    path = models("llava")
    requests = [ScoreRequest(f"Question {'number ' * i}{i}?", "", ("Yes", "No", "not sure at all"),
                             _image(COLOURS[i])) for i in range(3)]
    batched, single = _adapter(path, batch_size=3).score(requests), _adapter(path, batch_size=1).score(requests)
    for got, want in zip(batched, single, strict=True):
        assert got == pytest.approx(want, abs=1e-4)


def test_normalisation_divides_by_characters_and_tokens_exactly(models):
    path = models("llava")
    request = ScoreRequest("Where is the cat?", " of the dog", ("left", "on top"), _image(COLOURS[2]))
    summed = _adapter(path).score([request])[0]
    char = _adapter(path, normalize="char").score([request])[0]
    token_adapter = _adapter(path, normalize="token")
    token = token_adapter.score([request])[0]
    prompt = token_adapter.chat_text(request.prefix, True)
    for option, s, c, t in zip(request.options, summed, char, token, strict=True):
        reply = option + request.suffix
        assert c == s / len(reply)  # "left of the dog": 15 characters
        assert t == s / len(token_adapter.scorer.reply_ids(prompt, reply))
    assert len("left of the dog") == 15


def test_text_only_request_is_a_text_turn(models):
    adapter = _adapter(models("llava"))
    assert adapter.chat_text("Is it?", True) == "USER: <image>\nIs it? ASSISTANT:"
    assert adapter.chat_text("Is it?", False) == "USER: Is it? ASSISTANT:"
    assert "pixel_values" not in adapter.encode([adapter.chat_text("Is it?", False)], None)


def test_llama_vision_prompt_has_one_bos(models):
    adapter = _adapter(models("mllama"))
    ids = adapter.encode([adapter.chat_text("Is the cat above the dog?", True)], [_image(COLOURS[0])])["input_ids"][0]
    assert ids[:2].tolist() == [128000, 128006]  # <|begin_of_text|><|start_header_id|>, one BOS


def test_device_map_is_not_a_scorer_arg_any_more():
    # one way for every model: --device-map (tests/test_device_map.py), never --scorer-arg device_map
    from spatialprobe.errors import UsageError
    from spatialprobe.models import options

    with pytest.raises(UsageError) as err:
        options.resolve("hf-mllm", {"device_map": "auto"})
    assert str(err.value) == ("device_map is not a --scorer-arg of the hf-mllm model: give --device-map (an "
                              "option of its own, for every text and multimodal LLM).")


def test_settings_out_of_range_are_refused(models):
    from spatialprobe.errors import UsageError

    with pytest.raises(UsageError, match=r"^--scorer-arg normalize=mean is not one of sum, token, char\.$"):
        _adapter(models("llava"), normalize="mean")
    with pytest.raises(UsageError, match=r"^--scorer-arg batch_size=0: it must be at least 1\.$"):
        _adapter(models("llava"), batch_size=0)


def test_registered_as_a_model_with_declared_options():
    from spatialprobe import registry
    from spatialprobe.models.mllm import MultimodalLLM

    assert registry.lookup("model", "hf-mllm") is MultimodalLLM
    assert MultimodalLLM.protocols == ("score", "generate")
    assert {k: o.default for k, o in MultimodalLLM.options.items()} == {
        "batch_size": 8, "normalize": "sum", "prompt_cache": "auto", "precision": "auto"}


def test_describe_names_the_model_and_its_settings(models):
    adapter = _adapter(models("llava"), normalize="char")
    described = adapter.describe()
    assert (described["scorer"], described["model_type"], described["dtype"], described["normalize"]) == \
        ("hf-mllm", "llava", "float32", "char")
    assert described["decoding"] == {"do_sample": False, "num_beams": 1}
    assert len(described["weights_sha256"]) == 16


# ---- the answer parser (models/answer_parse.py) -----------------------------------------------
RELATIONS = ("left of", "right of", "on/above", "in front of", "behind")
PARSE_TABLE = [
    # reply, options, (option, rule)
    ("B", RELATIONS, ("right of", "letter")),
    ("(B)", RELATIONS, ("right of", "letter")),
    ("B.", RELATIONS, ("right of", "letter")),
    ("[c]", RELATIONS, ("on/above", "letter")),
    ("Answer: B", RELATIONS, ("right of", "letter")),
    ("The answer is (D) in front of", RELATIONS, ("in front of", "letter")),
    ("(E) behind the table", RELATIONS, ("behind", "letter")),
    ("D. in front of", RELATIONS, ("in front of", "letter")),
    ("**A**", RELATIONS, ("left of", "letter")),
    ("F", RELATIONS, (None, "failure")),  # only five options
    ("A cat is left of the dog.", RELATIONS, ("left of", "text")),  # the article is no letter
    ("The cat is LEFT   OF the dog, not right of it.", RELATIONS, ("left of", "text")),  # first occurrence
    ("behind the chair, not in front of it", RELATIONS, ("behind", "text")),
    ("on top of", ("on", "on top of", "below"), ("on top of", "text")),  # longest at the same place
    ("cleft offer", RELATIONS, (None, "failure")),  # whole words only
    ("Yes, it is.", ("yes", "no"), ("yes", "text")),
    ("No.", ("Yes", "No"), ("No", "text")),
    ("That is correct.", ("Yes", "No"), ("Yes", "yes/no")),
    ("incorrect", ("Yes", "No"), ("No", "yes/no")),
    ("True", ("yes", "no"), ("yes", "yes/no")),
    ("false, the cat is below", ("yes", "no"), ("no", "yes/no")),
    ("I cannot tell from the picture", ("yes", "no"), (None, "failure")),
    ("", ("yes", "no"), (None, "failure")),
    ("It is above the box", RELATIONS, (None, "failure")),  # without the benchmark's rule
]


@pytest.mark.parametrize(("reply", "options", "expected"), PARSE_TABLE)
def test_the_parser_maps_crafted_replies_to_options_and_failures(reply, options, expected):
    from spatialprobe.readers.option_parser import parse_answer

    parsed = parse_answer(reply, options)
    assert (parsed.option, parsed.rule) == expected
    assert parsed.index == (None if expected[0] is None else options.index(expected[0]))


def test_spatialmqa_lenient_rule_and_failure_rate():
    from spatialprobe.readers.option_parser import failure_rate, parse_answer, spatialmqa_option

    replies = ["It is above the box", "on", "left", "under it", "in front of the box"]
    parsed = [parse_answer(r, RELATIONS, lenient=spatialmqa_option) for r in replies]
    assert [(p.option, p.rule) for p in parsed] == [
        ("on/above", "lenient"),  # contains "above": SpatialMQA's on/above rule
        ("on/above", "lenient"),  # "on" is a substring of "on/above"
        ("left of", "lenient"),  # a substring of "left of"
        (None, "failure"),
        ("in front of", "text")]
    assert failure_rate(parsed) == 20.0
    assert failure_rate([]) is None


def test_a_processor_that_needs_a_missing_package_is_one_sentence(tmp_path):
    import importlib.util

    from spatialprobe.errors import ModelLoadError

    folder = SHARED / "qwen2.5-vl-3b-instruct"
    if not folder.is_dir() or importlib.util.find_spec("torchvision") is not None:
        pytest.skip("needs the Qwen2.5-VL processor files and no torchvision")
    with pytest.raises(ModelLoadError, match=r"^The processor of '.*qwen2\.5-vl-3b-instruct' needs torchvision, "
                                             r"which no spatialprobe extra installs: .* then run again\.$"):
        _adapter(folder)


@pytest.mark.parametrize(("model_type", "setting", "shares"), [
    ("llava", "auto", True), ("idefics3", "auto", True), ("mllama", "auto", True),
    ("qwen2_5_vl", "auto", False), ("qwen2_5_vl", "on", True), ("llava", "off", False)])
def test_prompt_cache_auto_shares_the_prompt_only_for_the_tested_families(model_type, setting, shares):
    from types import SimpleNamespace

    from spatialprobe.models.mllm_score import OptionScorer

    model = SimpleNamespace(config=SimpleNamespace(model_type=model_type), forward=lambda input_ids: None)
    assert OptionScorer(model, None, print, "sum", setting).shares_prompt is shares
