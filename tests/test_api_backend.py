"""The openai-api model: against a REAL OpenAI-compatible server (``transformers serve`` with a
tiny random LLaVA of the real architecture, on loopback), its replies equal the in-process
``hf-mllm`` adapter's greedy replies; a server killed mid-run and restarted loses nothing it
answered. Against a tiny scripted server (``http.server`` on loopback): retries with backoff on
429/5xx, the timeout, refusals, the key read from its variable and never written, the cache, and
the likelihood protocol (a known sum of echoed log-probabilities, or a refusal)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from spatialprobe.errors import ModelLoadError, UsageError
from spatialprobe.models.base import GenerateRequest, ScoreRequest

pytest.importorskip("httpx", reason="the api extra (httpx) is not installed")

from api_helpers import MODEL, Script, scripted_fixture, served_fixture  # noqa: F401 (fixtures)

from spatialprobe.models.openai_api import OpenAIServer
from spatialprobe.models.openai_client import request_key


# -- a scripted server ------------------------------------------------------------------------------
def chat(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def adapter(url: str, tmp_path: Path, **kwargs: Any) -> OpenAIServer:
    return OpenAIServer(MODEL, base_url=url, cache_dir=str(tmp_path / "cache"), **kwargs)


def chat_posts(script: Script) -> list[Any]:
    return [body for path, _, body in script.received if path == "/v1/chat/completions"]


# -- transport ----------------------------------------------------------------------------------------
def test_429_and_500_are_retried_with_exponential_backoff_and_counted(scripted, tmp_path):
    url, script = scripted({"/v1/chat/completions": [(429, {"error": "slow down"}, 0), (500, {}, 0),
                                                     (200, chat("Yes. Because"), 0)]})
    model = adapter(url, tmp_path, retries=3, backoff=0.2)
    start = time.perf_counter()
    assert model.generate([GenerateRequest("Is it?", None, 5, (".",))]) == ["Yes"]
    assert time.perf_counter() - start >= 0.2 + 0.4  # waited backoff, then twice it
    traffic = model.traffic()
    assert {k: traffic[k] for k in ("sent", "answered", "cache_hits", "retries", "failures", "truncated")} == {
        "sent": 4, "answered": 2, "cache_hits": 0, "retries": 2, "failures": {"429": 1, "5xx": 1},
        "truncated": 0}  # sent: the GET /models and 3 POSTs
    assert traffic["in_flight"]["halvings"] == 1  # the 429 halved the requests in flight
    body = chat_posts(script)[0]
    assert body == {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "text", "text": "Is it?"}]}],
                    "temperature": 0, "max_tokens": 5}  # the stop string is applied here


def test_a_server_that_keeps_failing_is_one_sentence_after_the_last_retry(scripted, tmp_path):
    url, script = scripted({"/v1/chat/completions": [(500, {"error": "broken"}, 0)]})
    model = adapter(url, tmp_path, retries=2, backoff=0.01)
    with pytest.raises(ModelLoadError, match=r"did not answer after 3 tries \(last: HTTP 500\)\.$"):
        model.generate([GenerateRequest("Is it?")])  # nothing was answered: no resume is promised
    assert len(chat_posts(script)) == 3
    assert model.traffic()["failures"] == {"5xx": 3} and model.traffic()["retries"] == 2
    url, script = scripted({"/v1/chat/completions": [(503, {"error": "overloaded"}, 0)]})
    model = adapter(url, tmp_path, retries=2, backoff=0.001)
    with pytest.raises(ModelLoadError, match=r"did not answer after 9 tries \(last: HTTP 503\)"):
        model.generate([GenerateRequest("Is it?")])  # a rate limit is retried four times as often
    assert len(chat_posts(script)) == 9


def test_a_request_slower_than_the_timeout_is_retried_then_refused(scripted, tmp_path):
    url, _ = scripted({"/v1/chat/completions": [(200, chat("late"), 1.5)]})
    model = adapter(url, tmp_path, retries=1, backoff=0.01, timeout=0.3)
    start = time.perf_counter()
    with pytest.raises(ModelLoadError, match=r"after 2 tries \(last: no whole answer within 0.3 s\)"):
        model.generate([GenerateRequest("Is it?")])
    assert time.perf_counter() - start < 1.5  # it did not wait for the slow answer
    assert model.traffic()["failures"] == {"timeout": 2}


def test_a_status_no_retry_changes_is_refused_at_once(scripted, tmp_path):
    url, script = scripted({"/v1/chat/completions": [(400, {"error": "max_tokens too large"}, 0)]})
    model = adapter(url, tmp_path, retries=4)
    with pytest.raises(UsageError, match=r"refused the request: HTTP 400 .*max_tokens too large"):
        model.generate([GenerateRequest("Is it?")])
    assert len(chat_posts(script)) == 1


def test_at_most_concurrency_requests_are_in_flight(scripted, tmp_path):
    url, _ = scripted({"/v1/chat/completions": [(200, chat("ok"), 0.3)]})
    model = adapter(url, tmp_path, concurrency=3)
    start = time.perf_counter()
    model.generate([GenerateRequest(f"q{i}") for i in range(6)])
    took = time.perf_counter() - start
    assert 0.6 <= took < 1.5  # two waves of three (0.6 s), not one of six (0.3) nor six of one (1.8)


def test_a_rerun_sends_nothing_already_answered(scripted, tmp_path):
    url, script = scripted({"/v1/chat/completions": [(200, chat("a"), 0), (200, chat("b"), 0)]})
    first = adapter(url, tmp_path, concurrency=1)
    assert first.generate([GenerateRequest("q0")]) == ["a"]
    again = adapter(url, tmp_path)
    assert again.generate([GenerateRequest("q0"), GenerateRequest("q1")]) == ["a", "b"]
    assert [b["messages"][0]["content"][0]["text"] for b in chat_posts(script)] == ["q0", "q1"]
    assert again.traffic()["cache_hits"] == 1 and again.traffic()["sent"] == 2  # GET /models + q1
    off = OpenAIServer(MODEL, base_url=url, cache_dir="off")
    assert off.generate([GenerateRequest("q0")]) == ["b"] and off.cache is None


def test_images_travel_as_png_data_urls_and_are_part_of_the_cache_key(scripted, tmp_path):
    from PIL import Image

    url, script = scripted({"/v1/chat/completions": [(200, chat("x"), 0)]})
    model = adapter(url, tmp_path)
    red, blue = Image.new("RGB", (8, 8), (255, 0, 0)), Image.new("RGB", (8, 8), (0, 0, 255))
    model.generate([GenerateRequest("q", red), GenerateRequest("q", blue), GenerateRequest("q", red.copy())])
    sent = chat_posts(script)
    assert len(sent) == 2  # the same image twice is one request
    part = sent[0]["messages"][0]["content"][0]
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("data:image/png;base64,")
    served = model.client.served
    assert request_key(url, "/chat/completions", sent[0], served) != request_key(url, "/chat/completions", sent[1],
                                                                                   served)


# -- key, identity, settings -------------------------------------------------------------------------
def test_the_key_is_read_from_the_named_variable_and_never_written(scripted, tmp_path, monkeypatch):
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("SPATIALPROBE_TEST_KEY", secret)
    url, script = scripted({"/v1/chat/completions": [(200, chat("fine"), 0)]})
    model = adapter(url, tmp_path, api_key_env="SPATIALPROBE_TEST_KEY")
    model.generate([GenerateRequest("Is it?")])
    assert {headers.get("Authorization") for _, headers, _ in script.received} == {f"Bearer {secret}"}
    assert secret not in json.dumps([model.describe(), model.runtime(), model.fingerprint()])
    model.close()
    written = b"".join(p.read_bytes() for p in (tmp_path / "cache").iterdir())
    assert secret.encode() not in written and b"SPATIALPROBE_TEST_KEY" not in written
    with pytest.raises(UsageError) as given_key:
        adapter(url, tmp_path, api_key_env=secret)
    assert secret not in str(given_key.value) and "never the key itself" in str(given_key.value)
    monkeypatch.delenv("SPATIALPROBE_TEST_KEY")
    with pytest.raises(UsageError, match="SPATIALPROBE_TEST_KEY is not set"):
        adapter(url, tmp_path, api_key_env="SPATIALPROBE_TEST_KEY")


def test_a_refused_key_names_its_variable(scripted, tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_TEST_KEY", "wrong")
    url, _ = scripted({"/v1/models": [(401, {"error": "bad key"}, 0)]})
    with pytest.raises(UsageError, match=r"refused the key in \$SPATIALPROBE_TEST_KEY: HTTP 401"):
        adapter(url, tmp_path, api_key_env="SPATIALPROBE_TEST_KEY")


def test_identity_is_the_endpoint_and_the_served_model(scripted, tmp_path):
    url, _ = scripted({})
    model = adapter(url, tmp_path)
    found = model.fingerprint()
    assert {k: found[k] for k in ("model", "endpoint", "served_model")} == {
        "model": MODEL, "endpoint": url, "served_model": {"id": MODEL, "owned_by": "me"}}
    assert found["fingerprint"].startswith("served:")
    assert model.describe()["weights_sha256"] is None
    with pytest.raises(UsageError, match=r"does not serve 'other' \(it serves: tiny\)"):
        OpenAIServer("other", base_url=url, cache_dir="off")
    assert OpenAIServer("/path/of/a/checkpoint", served_model=MODEL, base_url=url, cache_dir="off").model_name == MODEL


@pytest.mark.parametrize("setting, message", [
    ({"base_url": "127.0.0.1:8000"}, "http\\(s\\) URL"),
    ({"base_url": "http://user:secret@host/v1"}, "without credentials"),
    ({"concurrency": 0}, "concurrency=0: it must be auto or at least 1"),
    ({"retries": -1}, "retries=-1: it must be at least 0"),
    ({"timeout": 0.0}, "timeout=0.0: it must be a positive"),
    ({"device": "cuda"}, "--device cuda does not apply to the openai-api model"),
])
def test_settings_out_of_range_are_refused(setting, message):
    with pytest.raises(UsageError, match=message):
        OpenAIServer(MODEL, cache_dir="off", **setting)


def test_registered_as_a_model_whose_options_the_scorer_arg_reaches():
    from spatialprobe import registry
    from spatialprobe.models.options import resolve

    assert registry.lookup("model", "openai-api") is OpenAIServer
    options = resolve("openai-api", {"base_url": "http://h:1/v1", "concurrency": "3"})
    assert options["concurrency"] == 3 and options["api_key_env"] == "" and options["timeout"] == 120.0
    with pytest.raises(UsageError, match="takes no option 'api_key'"):
        resolve("openai-api", {"api_key": "sk-x"})


# -- likelihood -------------------------------------------------------------------------------------
def echoed(prompt: str, pieces: list[str], logprobs: list[float | None]) -> dict[str, Any]:
    """A vLLM-shaped /completions answer with echo: the prompt's tokens, then one generated."""
    assert "".join(pieces) == prompt
    offsets = [sum(len(p) for p in pieces[:i]) for i in range(len(pieces))]
    return {"choices": [{"index": 0, "text": prompt + " X", "logprobs": {
        "tokens": [*pieces, " X"], "token_logprobs": [*logprobs, -0.5], "text_offset": [*offsets, len(prompt)],
        "top_logprobs": None}}], "usage": {"prompt_tokens": len(pieces), "completion_tokens": 1}}


def test_the_likelihood_is_the_sum_of_the_continuations_echoed_logprobs(scripted, tmp_path):
    answers = {"An ant is": echoed("An ant is", ["An", " ant", " is"], [None, -1.0, -2.0]),
               "An ant is larger than a bird.": echoed("An ant is larger than a bird.",
                                                       ["An", " ant", " is", " larger", " than", " a", " bird", "."],
                                                       [None, -1.0, -2.0, -3.0, -0.25, -0.5, -4.0, -0.125]),
               "An ant is smaller than a bird.": echoed("An ant is smaller than a bird.",
                                                        ["An", " ant", " is", " sm", "aller", " than", " a", " bird",
                                                         "."], [None, -1.0, -2.0, -1.5, -0.5, -0.25, -0.5, -4.0,
                                                                -0.125])}
    url, script = scripted({"/v1/completions": lambda body: answers[body["prompt"]]})
    model = adapter(url, tmp_path)
    scores = model.score([ScoreRequest("An ant is ", " than a bird.", ("larger", "smaller"))])
    assert scores == [(-3.0 - 0.25 - 0.5 - 4.0 - 0.125, -1.5 - 0.5 - 0.25 - 0.5 - 4.0 - 0.125)]
    sent = [b for p, _, b in script.received if p == "/v1/completions"]
    assert sorted(b["prompt"] for b in sent) == sorted(answers)  # the context once, then each option
    assert all(b["echo"] is True and b["logprobs"] == 1 and b["temperature"] == 0 for b in sent)


def test_a_server_without_prompt_logprobs_is_refused_in_one_sentence(scripted, tmp_path):
    url, _ = scripted({"/v1/completions": [(200, {"choices": [{"index": 0, "text": " made up"}]}, 0)]})
    with pytest.raises(UsageError, match=r"returned no prompt log-probabilities .* use --protocol generate"):
        adapter(url, tmp_path).score([ScoreRequest("Is it?", "", ("yes", "no"))])


def test_an_image_is_refused_by_the_likelihood_protocol(scripted, tmp_path):
    from PIL import Image

    url, _ = scripted({})
    with pytest.raises(UsageError, match="takes no image: ask items with images by --protocol generate"):
        adapter(url, tmp_path).score([ScoreRequest("Is it?", "", ("yes", "no"), Image.new("RGB", (4, 4)))])


# -- a real server: transformers serve with a tiny random LLaVA ---------------------------------------
def _items() -> list[GenerateRequest]:
    from PIL import Image

    images = [Image.new("RGB", (40, 30), colour) for colour in ((220, 20, 20), (20, 200, 40), (30, 30, 230))]
    prompts = ("Is the cup above the table? Answer yes or no.", "Where is the dog relative to the car?")
    return [GenerateRequest(p, image, 6) for image in images for p in prompts] + [
        GenerateRequest(prompts[0], None, 6), GenerateRequest(prompts[1], images[0], 8, ("the", "a"))]


@pytest.fixture(scope="module")
def in_process(served) -> list[str]:
    """The hf-mllm adapter's greedy replies on the same checkpoint folder and items."""
    import torch

    from spatialprobe.models.mllm import MultimodalLLM

    torch.set_num_threads(1)
    return MultimodalLLM(str(served.model), device="cpu").generate(_items())


def test_replies_equal_the_in_process_adapters_greedy_replies(served, in_process, tmp_path):
    model = OpenAIServer(str(served.model), base_url=served.url, cache_dir=str(tmp_path), concurrency=4)
    assert model.fingerprint()["served_model"]["id"] == str(served.model)
    replies = model.generate(_items())
    assert replies == in_process
    assert len(set(replies)) > 1  # random weights, different inputs: not one constant reply
    assert model.traffic()["sent"] == 1 + len(_items()) and model.traffic()["failures"] == {}


def test_transformers_serve_gives_no_prompt_logprobs_so_scoring_is_refused(served, tmp_path):
    model = OpenAIServer(str(served.model), base_url=served.url, cache_dir=str(tmp_path))
    with pytest.raises(UsageError, match="returned no prompt log-probabilities"):
        model.score([ScoreRequest("USER: Is the cup above the table? ASSISTANT:", "", (" Yes", " No"))])


def test_a_server_killed_mid_run_and_restarted_loses_nothing_answered(served, in_process, tmp_path):
    items, cache = _items(), str(tmp_path / "cache")
    first = OpenAIServer(str(served.model), base_url=served.url, cache_dir=cache, concurrency=1,
                         retries=1, backoff=0.05)
    done = []

    def kill_after_three(n: int) -> None:
        done.append(n)
        if sum(done) == 3:
            served.kill()

    with pytest.raises(ModelLoadError, match="did not answer after 2 tries"):
        first.generate(items, kill_after_three)
    answered = first.traffic()["answered"] - 1  # less the GET /models
    assert 3 <= answered < len(items) and first.traffic()["failures"].get("connection", 0) >= 1
    served.start()
    resumed = OpenAIServer(str(served.model), base_url=served.url, cache_dir=cache, concurrency=4)
    assert resumed.generate(items) == in_process
    assert resumed.traffic()["cache_hits"] == answered
    assert resumed.traffic()["sent"] == 1 + len(items) - answered  # nothing answered was sent again
