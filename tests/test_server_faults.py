"""The openai-api model through the commands a user runs (``spatialprobe bench posqa``, ``probe``, ``qa
text``, ``runs``), against a scripted, fault-injecting server on loopback (tests/api_helpers.py): the
run is named by what it asks, a misbehaving server cannot make a wrong number (whole-request
timeout, empty replies, oversized replies, a refused first connection, secrets never printed), a
served model swapped between a run and its resume is refused, a changed concurrency is not, the
answer cache never serves another model's or another decoding's answers, and the requests in flight
are bounded by the adapter's concurrency, never by --batch-size."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx", reason="the api extra (httpx) is not installed")

from api_helpers import MODEL, Reply, posqa_file, question_of, scripted_fixture, vllm_like  # noqa: F401
from typer.testing import CliRunner

from spatialprobe.cli import app

ITEMS = 12
"""Questions in the POSQA file (6 pairs, each asked bigger and smaller)."""


def chat(text: str, tokens: int = 2) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": tokens}}


def yes_to_bigger(body: dict[str, Any]) -> dict[str, Any]:
    """Yes to every "bigger" question, No to every "smaller" one: right on the even pairs only."""
    return chat("Yes." if " bigger " in question_of(body) else "No.")


def ask(url: str, data: Path, out: Path, *extra: str) -> Any:
    """``spatialprobe bench posqa`` through the openai-api model at ``url`` (the cache beside ``out``)."""
    return CliRunner().invoke(app, ["bench", "posqa", "--data", str(data), "--backend", "openai-api", "--model",
                                    MODEL, "--base-url", url, "--protocol", "generate", "--max-new-tokens", "4",
                                    "--out", str(out), "--scorer-arg", f"cache_dir={out.parent / 'cache'}", *extra])


def posts(script: Any) -> list[dict[str, Any]]:
    return [body for path, _, body in script.received if path == "/v1/chat/completions"]


def summary_of(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text())


def rows_of(out: Path) -> dict[str, dict[str, Any]]:
    return {row["instance_id"]: row for row in map(json.loads, (out / "predictions.jsonl").open())}


# -- named by what it asks -------------------------------------------------------------------------
def test_bench_asks_the_server_and_the_run_is_named_by_the_served_model(scripted, tmp_path):
    url, _ = scripted({"/v1/chat/completions": yes_to_bigger})
    out = tmp_path / "run"
    result = ask(url, posqa_file(tmp_path), out)
    assert result.exit_code == 0, result.output
    summary, config = summary_of(out), json.loads((out / "config.json").read_text())
    assert summary["metrics"]["accuracy"]["mean"] == 50.0  # right on the 3 even pairs of 6, both questions
    model = config["inputs"]["model"]
    assert model["endpoint"] == url and model["served_model"] == {"id": MODEL, "owned_by": "me"}
    assert model["fingerprint"].startswith("served:") and "unresolved" not in json.dumps(config)
    assert config["settings"]["model"]["name"] == "openai-api"
    assert "concurrency" not in config["settings"]["model"]["args"]  # runtime, not identity
    assert config["runtime"]["model_runtime"]["concurrency"] == "auto"
    requests = summary["details"]["requests"]
    assert {k: requests[k] for k in ("sent", "answered", "retries", "failures", "truncated", "completion_tokens")} \
        == {"sent": ITEMS + 1, "answered": ITEMS + 1, "retries": 0, "failures": {}, "truncated": 0,
            "completion_tokens": 2 * ITEMS}  # sent: the GET /models too
    assert requests["requests_per_s"] > 0 and requests["tokens_per_s"] > 0
    listed = CliRunner().invoke(app, ["runs", str(out)])
    assert listed.exit_code == 0 and f"openai-api at {url}" in listed.output


@pytest.mark.parametrize("spelling", [["--base-url"], ["--scorer-arg", "base_url="]])
def test_both_spellings_of_the_base_url_reach_the_server(scripted, tmp_path, spelling):
    url, script = scripted({"/v1/chat/completions": yes_to_bigger})
    given = [spelling[0], url] if len(spelling) == 1 else [spelling[0], spelling[1] + url]
    result = CliRunner().invoke(app, ["bench", "posqa", "--data", str(posqa_file(tmp_path)), "--backend",
                                      "openai-api", "--model", MODEL, *given, "--protocol", "generate",
                                      "--out", str(tmp_path / "run"), "--scorer-arg", "cache_dir=off"])
    assert result.exit_code == 0, result.output
    assert len(posts(script)) == ITEMS


def test_the_base_url_is_refused_for_a_model_run_in_this_process(tmp_path):
    result = CliRunner().invoke(app, ["probe", "size", "--model", "dummy", "--base-url", "http://127.0.0.1:9/v1",
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "--base-url applies to a model behind a server" in " ".join(result.output.split())


def test_the_requests_in_flight_are_bounded_by_the_concurrency_not_the_batch_size(scripted, tmp_path):
    url, _ = scripted({"/v1/chat/completions": lambda body: Reply(200, yes_to_bigger(body), delay=0.3)})
    data = posqa_file(tmp_path)
    result = ask(url, data, tmp_path / "adaptive", "--batch-size", "2")
    assert result.exit_code == 0, result.output
    assert summary_of(tmp_path / "adaptive")["details"]["requests"]["in_flight"]["most_in_flight"] == ITEMS
    result = ask(url, data, tmp_path / "fixed", "--batch-size", "2", "--scorer-arg", "concurrency=3",
                 "--scorer-arg", "cache_dir=off")
    assert result.exit_code == 0, result.output
    assert summary_of(tmp_path / "fixed")["details"]["requests"]["in_flight"]["most_in_flight"] == 3


def test_rate_limits_halve_the_requests_in_flight_and_every_item_is_answered(scripted, tmp_path):
    seen = {"posts": 0}

    def every_third_refused(body: dict[str, Any]) -> Any:
        seen["posts"] += 1
        if seen["posts"] % 3 == 0:
            return Reply(429, {"error": "slow down"}, headers={"Retry-After": "0"})
        return yes_to_bigger(body)

    url, _ = scripted({"/v1/chat/completions": every_third_refused})
    out = tmp_path / "run"
    result = ask(url, posqa_file(tmp_path), out, "--scorer-arg", "backoff=0.01")
    assert result.exit_code == 0, result.output
    requests = summary_of(out)["details"]["requests"]
    assert requests["answered"] == ITEMS + 1 and summary_of(out)["metrics"]["accuracy"]["mean"] == 50.0
    assert requests["sent"] - 1 == ITEMS + requests["failures"]["429"] <= 1.5 * ITEMS
    assert requests["in_flight"]["halvings"] >= 1


# -- a misbehaving server cannot make a wrong number --------------------------------------------------
def test_the_timeout_bounds_the_whole_request_of_a_dripping_server(scripted, tmp_path):
    url, _ = scripted({"/v1/chat/completions": lambda body: Reply(200, chat("Yes."), drip=0.1)})
    started = time.monotonic()
    result = ask(url, posqa_file(tmp_path, pairs=1), tmp_path / "run", "--scorer-arg", "timeout=1",
                 "--scorer-arg", "retries=0")
    took = time.monotonic() - started
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "did not answer after 1 tries (last: no whole answer within 1 s)." in said
    assert took < 3.0  # a byte every 0.1 s would take ~12 s for the whole answer


def test_an_empty_reply_is_retried_then_a_parse_failure_and_never_cached(scripted, tmp_path):
    fixed = {"now": False}
    broken = "Is the thing0 bigger than the other0"

    def empty_for_one(body: dict[str, Any]) -> dict[str, Any]:
        if broken in question_of(body) and not fixed["now"]:
            return chat("")
        return yes_to_bigger(body)

    url, script = scripted({"/v1/chat/completions": empty_for_one})
    data, first = posqa_file(tmp_path), tmp_path / "first"
    result = ask(url, data, first, "--scorer-arg", "retries=2", "--scorer-arg", "backoff=0.01")
    assert result.exit_code == 0, result.output
    row = next(r for r in rows_of(first).values() if broken in r["question"])
    assert row["reply"] == "" and row["pred_generate"] is None  # a parse failure, counted as wrong
    summary = summary_of(first)
    assert summary["details"]["requests"]["failures"] == {"empty": 3}
    assert summary["metrics"]["parse_failure_rate"]["mean"] == pytest.approx(100 / ITEMS)
    fixed["now"] = True
    before = len(posts(script))
    result = ask(url, data, tmp_path / "second")  # a fresh run, the same answer cache
    assert result.exit_code == 0, result.output
    asked_again = [question_of(b) for b in posts(script)[before:]]
    assert len(asked_again) == 1 and broken in asked_again[0]  # the empty reply was never cached
    assert next(r for r in rows_of(tmp_path / "second").values() if broken in r["question"])["pred"] == "yes"


def test_an_oversized_reply_is_cut_and_counted(scripted, tmp_path):
    huge = "Is the thing1 bigger than the other1"

    def eight_megabytes(body: dict[str, Any]) -> dict[str, Any]:
        return chat("Yes " * 2_000_000) if huge in question_of(body) else yes_to_bigger(body)

    url, _ = scripted({"/v1/chat/completions": eight_megabytes})
    out = tmp_path / "run"
    result = ask(url, posqa_file(tmp_path), out)
    assert result.exit_code == 0, result.output
    row = next(r for r in rows_of(out).values() if huge in r["question"])
    assert row["reply"] == ("Yes " * 64).strip()  # cut at 64 characters a token (4 tokens)
    assert summary_of(out)["details"]["requests"]["truncated"] == 1
    stored = [out / "predictions.jsonl", out / "run.sqlite", tmp_path / "cache" / "openai-api.sqlite"]
    assert all(path.stat().st_size < 200_000 for path in stored)


def test_a_refused_first_connection_fails_at_once_without_promising_a_resume(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    started = time.monotonic()
    result = ask(url, posqa_file(tmp_path), tmp_path / "run")
    assert result.exit_code == 2 and time.monotonic() - started < 2.0
    said = " ".join(result.output.split())
    assert f"nothing answers at {url}" in said and "resume" not in said and "--base-url" in said
    assert not (tmp_path / "run").exists()


def test_a_key_appears_in_no_file_and_no_message(scripted, tmp_path, monkeypatch):
    secret = "sk-live-0123456789abcdefSECRET"
    monkeypatch.setenv("SPATIALPROBE_SERVER_KEY", secret)
    url, script = scripted({"/v1/chat/completions": yes_to_bigger})
    out = tmp_path / "run"
    result = ask(url, posqa_file(tmp_path), out, "--api-key-env", "SPATIALPROBE_SERVER_KEY")
    assert result.exit_code == 0, result.output
    assert {headers.get("Authorization") for _, headers, _ in script.received} == {f"Bearer {secret}"}
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) > 5 and not [p for p in files if secret.encode() in p.read_bytes()]
    assert secret not in result.output
    # a server whose refusal echoes the key: the message says *** instead
    echo, _ = scripted({"/v1/models": [Reply(401, {"error": f"invalid key: Bearer {secret} (key {secret})"})]})
    refused = ask(echo, posqa_file(tmp_path), tmp_path / "refused", "--api-key-env", "SPATIALPROBE_SERVER_KEY")
    said = " ".join(refused.output.split())
    assert refused.exit_code == 2 and secret not in refused.output and "***" in said
    assert "$SPATIALPROBE_SERVER_KEY: HTTP 401" in said
    # a password in the base URL: refused, never echoed
    host = url.removeprefix("http://")
    with_password = ask(f"http://user:{secret}@{host}", posqa_file(tmp_path), tmp_path / "password")
    assert with_password.exit_code == 2 and secret not in with_password.output
    assert "without credentials" in with_password.output and "***@" in with_password.output


# -- resume and the answer cache ----------------------------------------------------------------------
def _failing_once(models: list[Any], fixed: dict[str, bool]):
    """A server whose /models is ``models`` and that refuses (HTTP 400) one question until ``fixed``."""
    def answers(body: dict[str, Any]) -> Any:
        if "thing3 bigger" in question_of(body) and not fixed["now"]:
            return Reply(400, {"error": "a fault"})
        return yes_to_bigger(body)

    return {"/v1/models": models, "/v1/chat/completions": answers}


def _listing(root: str | None = None) -> list[Any]:
    entry = {"id": MODEL, "owned_by": "me", **({"root": root} if root else {})}
    return [Reply(200, {"object": "list", "data": [entry]})]


def test_a_served_model_swapped_between_run_and_resume_is_refused(scripted, tmp_path):
    models, fixed = _listing("org/model-a"), {"now": False}
    url, script = scripted(_failing_once(models, fixed))
    data, out = posqa_file(tmp_path), tmp_path / "run"
    result = ask(url, data, out)
    assert result.exit_code == 2 and "HTTP 400" in result.output
    done = len(json.loads(json.dumps(rows_from_cache(out))))
    assert done == ITEMS - 1  # what answered before the refusal is committed
    models[0] = _listing("org/model-b")[0]  # the server now serves another model under the same name
    sent = len(posts(script))
    swapped = ask(url, data, out)
    said = " ".join(swapped.output.split())
    assert swapped.exit_code == 2 and len(posts(script)) == sent  # refused before asking anything
    assert (f"the server at {url} now serves 'tiny' as id=tiny, owned_by=me, root=org/model-b, not id=tiny, "
            "owned_by=me, root=org/model-a as when this run began") in said
    models[0], fixed["now"] = _listing("org/model-a")[0], True
    resumed = ask(url, data, out)
    assert resumed.exit_code == 0, resumed.output
    assert len(posts(script)) == sent + 1  # only the item left


def test_a_changed_concurrency_on_resume_is_accepted(scripted, tmp_path):
    fixed = {"now": False}
    url, _ = scripted(_failing_once(_listing(), fixed))
    data, out = posqa_file(tmp_path), tmp_path / "run"
    assert ask(url, data, out, "--scorer-arg", "concurrency=2").exit_code == 2
    identity = json.loads((out / "config.json").read_text())["identity"]
    fixed["now"] = True
    resumed = ask(url, data, out, "--scorer-arg", "concurrency=5", "--scorer-arg", "timeout=30")
    assert resumed.exit_code == 0, resumed.output
    config = json.loads((out / "config.json").read_text())
    assert config["identity"] == identity and config["runtime"]["model_runtime"]["concurrency"] == 5
    assert summary_of(out)["metrics"]["accuracy"]["mean"] == 50.0


def test_the_answer_cache_never_hands_a_fresh_run_another_models_answers(scripted, tmp_path):
    models = _listing("org/model-a")
    url, script = scripted({"/v1/models": models, "/v1/chat/completions": yes_to_bigger})
    data = posqa_file(tmp_path)
    assert ask(url, data, tmp_path / "a").exit_code == 0
    assert ask(url, data, tmp_path / "a-again").exit_code == 0
    assert len(posts(script)) == ITEMS  # the same model, decoding and items: all from the cache
    models[0] = _listing("org/model-b")[0]
    assert ask(url, data, tmp_path / "b").exit_code == 0
    assert len(posts(script)) == 2 * ITEMS  # another served model: asked again
    assert ask(url, data, tmp_path / "b-longer", "--max-new-tokens", "8").exit_code == 0
    assert len(posts(script)) == 3 * ITEMS  # another decoding: asked again
    assert {b["max_tokens"] for b in posts(script)[-ITEMS:]} == {8}


def rows_from_cache(out: Path) -> list[str]:
    """The item keys a run committed (its run.sqlite)."""
    import sqlite3

    with sqlite3.connect(out / "run.sqlite") as db:
        return [key for (key,) in db.execute("SELECT key FROM results")]


# -- the other asking commands --------------------------------------------------------------------------
def test_probe_asks_the_task_question_by_generation_and_by_likelihood(tmp_path):
    url, script, server = vllm_like()
    try:
        for protocol in ("generate", "likelihood"):
            out = tmp_path / protocol
            result = CliRunner().invoke(app, ["probe", "posrel", "--backend", "openai-api", "--model", MODEL,
                                              "--base-url", url, "--protocol", protocol, "--out", str(out),
                                              "--scorer-arg", f"cache_dir={tmp_path / 'cache'}"])
            assert result.exit_code == 0, result.output
            summary = summary_of(out)
            assert summary["details"]["protocols"] == [protocol] and summary["details"]["conditions"] == ["none"]
            assert json.loads((out / "config.json").read_text())["settings"]["model"]["name"] == "openai-api"
        assert {path for path, _, _ in script.received} >= {"/v1/chat/completions", "/v1/completions"}
    finally:
        server.shutdown()
        server.server_close()


def test_probe_by_likelihood_against_a_server_without_logprobs_names_the_reason(scripted, tmp_path):
    url, _ = scripted({"/v1/completions": [(200, {"choices": [{"index": 0, "text": " made up"}]}, 0)]})
    result = CliRunner().invoke(app, ["probe", "size", "--backend", "openai-api", "--model", MODEL, "--base-url",
                                      url, "--out", str(tmp_path / "run"), "--scorer-arg", "cache_dir=off"])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "returned no prompt log-probabilities from /completions" in said and "--protocol generate" in said


def test_qa_text_asks_the_server_the_balanced_questions(scripted, tmp_path):
    url, _ = scripted({"/v1/chat/completions": [(200, chat("Yes"), 0)]})
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["qa", "text", "--backend", "openai-api", "--model", MODEL, "--base-url", url,
                                      "--task", "height", "--protocol", "generate", "--out", str(out),
                                      "--scorer-arg", "cache_dir=off"])
    assert result.exit_code == 0, result.output
    assert summary_of(out)["metrics"]["accuracy"]["mean"] == 50.0  # yes to a set balanced between yes and no


# -- chosen by name first; a configuration read once, only where an adapter needs one ---------------
def test_a_named_server_backend_reads_no_configuration(scripted, tmp_path, monkeypatch):
    from spatialprobe.models import choice

    reads: list[str] = []
    real = choice._config_now
    monkeypatch.setattr(choice, "_config_now", lambda model: reads.append(model) or real(model))
    url, _ = scripted({"/v1/chat/completions": yes_to_bigger, "/v1/models": _listing()})
    (tmp_path / MODEL).mkdir()  # a folder of the served name here changes nothing: --model is the server's name
    (tmp_path / MODEL / "config.json").write_text(json.dumps({"model_type": "bert"}))
    monkeypatch.chdir(tmp_path)
    result = ask(url, posqa_file(tmp_path / "data"), tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert reads == []
    assert json.loads((tmp_path / "run" / "config.json").read_text())["settings"]["model"]["args"]["model"] == MODEL


def test_probe_reads_a_checkpoints_configuration_once(tmp_path, monkeypatch):
    from spatialprobe.models import choice

    reads: list[str] = []
    real = choice._config_now
    monkeypatch.setattr(choice, "_config_now", lambda model: reads.append(model) or real(model))
    folder = tmp_path / "bert-without-weights"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertForMaskedLM"]}))
    result = CliRunner().invoke(app, ["probe", "size", "--model", str(folder), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2  # no weights to load: refused after the route was decided
    assert reads == [str(folder)]


def test_hub_options_are_refused_for_a_model_behind_a_server(scripted, tmp_path):
    url, script = scripted({"/v1/chat/completions": yes_to_bigger})
    result = ask(url, posqa_file(tmp_path), tmp_path / "run", "--revision", "v2")
    assert result.exit_code == 2 and not posts(script)
    assert "--revision v2 applies to a checkpoint loaded in this process" in " ".join(result.output.split())
