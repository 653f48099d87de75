"""Repeated sampling (``--samples K --temperature T``) through ``spatialprobe bench``: each item
asked K times with a recorded seed per sample (the replies known in advance from the seeds), the
mean and vote rules, the two-level interval and the share of variance from sampling in
summary.json and table.md, resumption per sample, refusals in one sentence; the real adapters'
sampling (a tiny hf-mllm: a seed gives the same reply in any batch; openai-api: temperature and
seed in the request body)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from quality_helpers import Scripted, registered, write_items, write_model
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.engine.sampling import sample_seed
from spatialprobe.metrics.sampling import two_level, vote_sampling_share

REPLIES = {0: ["A"], 1: ["B"], 2: ["A", "B"], 3: ["A", "B", "B"], 4: ["A", "A", "B", "no idea"]}
"""Item i's possible replies (gold A): always right, always wrong, and three mixtures."""


def setup(tmp_path: Path, n: int = 20) -> tuple[Path, Path]:
    records, script = [], {}
    for i in range(n):
        question = f"Which side is object {i} on?"
        records.append({"id": f"q{i}", "question": question, "options": ["left", "right"], "answer": "A",
                        "scene": f"scene{i // 2}"})
        script[question] = REPLIES[i % 5]
    return write_items(tmp_path / "items.jsonl", records), write_model(tmp_path / "model", script)


def bench(data: Path, model: Path, out: Path, *more: str):
    with registered():
        return CliRunner().invoke(app, ["bench", "quality-demo", "--data", str(data), "--model", str(model),
                                        "--out", str(out), "--protocol", "generate", *more])


def drawn(n: int, samples: int, seed: int = 0) -> dict[tuple[str, int], str]:
    """The reply of sample k of item i: what the scripted model draws with the run's seed for it."""
    return {(f"q{i}", k): random.Random(sample_seed(seed, f"q{i}", k)).choice(REPLIES[i % 5])
            for i in range(n) for k in range(samples)}


def test_each_item_is_asked_k_times_with_its_recorded_seed_and_the_headline_is_the_mean(tmp_path):
    data, model = setup(tmp_path)
    result = bench(data, model, tmp_path / "run", "--samples", "6", "--temperature", "0.8", "--seed", "3")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    expected = drawn(20, 6, seed=3)
    assert len(rows) == 120 and {(r["instance_id"], r["sample"]) for r in rows} == set(expected)
    for row in rows:
        assert row["seed"] == sample_seed(3, row["instance_id"], row["sample"])
        assert row["reply"] == expected[(row["instance_id"], row["sample"])]
    right = np.mean([reply == "A" for reply in expected.values()])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["metrics"]["accuracy"]["mean"] == pytest.approx(100 * right)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["settings"]["samples"] == 6 and config["settings"]["temperature"] == 0.8
    sampling = summary["details"]["sampling"]
    assert sampling["rule"] == "mean" and sampling["samples"] == 6
    found = sampling["metrics"]["accuracy"]
    assert summary["metrics"]["accuracy"]["ci"] == found["ci"] and found["interval"] == "two-level bootstrap"
    assert 0 < found["sampling_share"] < 1
    assert "accuracy: share of variance from sampling" in result.output
    assert f"{100 * found['sampling_share']:.0f} %" in (tmp_path / "run" / "table.md").read_text()


def test_the_two_level_interval_and_share_are_the_functions_own(tmp_path):
    data, model = setup(tmp_path)
    assert bench(data, model, tmp_path / "run", "--samples", "4", "--temperature", "1").exit_code == 0
    expected = drawn(20, 4)
    values = np.array([[float(expected[(f"q{i}", k)] == "A") for k in range(4)] for i in range(20)])
    keys = np.array([[i // 2] for i in range(20)])
    found = two_level(values, keys, 10, 1000, 0)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["metrics"]["accuracy"]["ci"] == list(found.ci)
    within = values.var(1, ddof=1).sum() / 4 / 20 ** 2 * 1e4
    assert summary["details"]["sampling"]["metrics"]["accuracy"]["variance_sampling"] == pytest.approx(within)


def test_a_model_that_always_knows_scores_100_with_no_sampling_variance(tmp_path):
    data = write_items(tmp_path / "items.jsonl", [{"id": f"q{i}", "question": f"Q{i}?", "options": ["x", "y"],
                                                    "answer": "B", "scene": f"s{i}"} for i in range(8)])
    model = write_model(tmp_path / "model", {f"Q{i}?": ["B", "(B)", "B. y"] for i in range(8)})
    result = bench(data, model, tmp_path / "run", "--samples", "3", "--temperature", "1.0")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert result.exit_code == 0 and summary["metrics"]["accuracy"]["mean"] == 100.0
    assert summary["details"]["sampling"]["metrics"]["accuracy"]["variance_sampling"] == 0.0


def test_a_vote_rule_gives_one_row_per_item_answered_by_its_most_frequent_sample(tmp_path):
    data, model = setup(tmp_path)
    result = bench(data, model, tmp_path / "run", "--samples", "5", "--temperature", "1", "--option", "rule=vote")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    expected = drawn(20, 5)
    assert len(rows) == 20
    for row in rows:
        replies = [expected[(row["instance_id"], k)] for k in range(5)]
        labels = [r for r in replies if r in "AB"]
        top = sorted({x: labels.count(x) for x in labels}.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        assert row["pred"] == top and [s["reply"] for s in row["samples"]] == replies
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["metrics"]["accuracy"]["mean"] == pytest.approx(100 * np.mean([r["pred"] == "A" for r in rows]))
    assert summary["details"]["sampling"]["rule"] == "vote"
    assert 0 < summary["details"]["sampling"]["metrics"]["accuracy"]["sampling_share"] <= 1


def test_vote_sampling_share_is_zero_when_samples_agree_and_positive_when_they_split():
    gold = np.zeros(6, dtype=int)
    assert vote_sampling_share(np.zeros((6, 3), dtype=int), gold, 10.0) == 0.0
    split = np.array([[0, 1, 1]] * 6)
    assert vote_sampling_share(split, gold, 100.0) > 0


def test_a_killed_run_resumes_sample_by_sample_to_the_same_rows(tmp_path, monkeypatch):
    data, model = setup(tmp_path, n=10)
    whole = tmp_path / "whole"
    assert bench(data, model, whole, "--samples", "3", "--temperature", "1", "--batch-size", "4").exit_code == 0
    calls = {"n": 0}
    original = Scripted.generate

    def dies(self, requests, progress=None):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(self, requests, progress)

    monkeypatch.setattr(Scripted, "generate", dies)
    killed = tmp_path / "killed"
    first = bench(data, model, killed, "--samples", "3", "--temperature", "1", "--batch-size", "4")
    assert first.exit_code != 0 and not (killed / "predictions.jsonl").exists()
    monkeypatch.setattr(Scripted, "generate", original)
    again = bench(data, model, killed, "--samples", "3", "--temperature", "1", "--batch-size", "4")
    assert again.exit_code == 0, again.output
    assert (killed / "predictions.jsonl").read_text() == (whole / "predictions.jsonl").read_text()


@pytest.mark.parametrize(("more", "message"), [
    (["--samples", "3", "--temperature", "1", "--protocol", "likelihood"], "apply to --protocol generate"),
    (["--samples", "3"], "at temperature 0 asks for 3 equal greedy replies"),
    (["--temperature", "0.5", "--backend", "greedy-scripted"], "cannot sample replies"),
])
def test_sampling_that_does_not_apply_is_refused_in_one_sentence(tmp_path, more, message):
    data, _ = setup(tmp_path, n=4)
    kind = "greedy-scripted" if "greedy-scripted" in more else "scripted"
    model = write_model(tmp_path / "m", {f"Which side is object {i} on?": ["A"] for i in range(4)}, kind)
    more = [m for m in more if m not in ("--backend", "greedy-scripted")]
    with registered():
        result = CliRunner().invoke(app, ["bench", "quality-demo", "--data", str(data), "--model", str(model),
                                          "--out", str(tmp_path / "run"), *(["--protocol", "generate"]
                                          if "--protocol" not in more else []), *more])
    assert result.exit_code == 2 and message in result.output, result.output
    assert not (tmp_path / "run").exists()


def test_greedy_runs_keep_their_identity(tmp_path):
    data, model = setup(tmp_path, n=4)
    assert bench(data, model, tmp_path / "run").exit_code == 0
    settings = json.loads((tmp_path / "run" / "config.json").read_text())["settings"]
    assert "samples" not in settings and "temperature" not in settings
    rows = (tmp_path / "run" / "predictions.jsonl").read_text()
    assert '"sample"' not in rows and '"seed"' not in rows


# -- the real adapters ------------------------------------------------------------------------------

def test_hf_mllm_samples_with_a_seed_per_request_whatever_the_batch(tmp_path):
    from mllm_helpers import build, processor_loads

    from spatialprobe.models.base import GenerateRequest
    from spatialprobe.models.mllm import MultimodalLLM

    if processor_loads("llava") is not None:
        pytest.skip(processor_loads("llava"))
    import torch

    torch.set_num_threads(1)
    folder = build("llava", tmp_path / "llava")
    requests = [GenerateRequest(f"Where is the cup {i}?", None, 6, temperature=1.5, seed=100 + i) for i in range(4)]
    together = MultimodalLLM(str(folder), device="cpu", batch_size=4).generate(requests)
    alone = MultimodalLLM(str(folder), device="cpu", batch_size=1).generate(requests)
    assert together == alone
    other = MultimodalLLM(str(folder), device="cpu", batch_size=4).generate(
        [GenerateRequest(r.prompt, None, 6, temperature=1.5, seed=7) for r in requests])
    assert other != together  # another seed, another draw
    greedy = MultimodalLLM(str(folder), device="cpu", batch_size=4).generate(
        [GenerateRequest(r.prompt, None, 6) for r in requests])
    assert greedy != together


def test_openai_api_sends_the_temperature_and_the_samples_seed(tmp_path):
    pytest.importorskip("httpx")
    from api_helpers import MODEL, start

    from spatialprobe.models.base import GenerateRequest
    from spatialprobe.models.openai_api import OpenAIServer

    url, script, server = start({"/v1/chat/completions": lambda body: {"choices": [
        {"index": 0, "message": {"role": "assistant", "content": f"seed {body.get('seed')}"}}]}})
    try:
        model = OpenAIServer(MODEL, base_url=url, cache_dir=str(tmp_path / "cache"), concurrency=1)  # in order
        assert model.generate([GenerateRequest("q", temperature=0.7, seed=11), GenerateRequest("q")]) == \
            ["seed 11", "seed None"]
        bodies = [body for path, _, body in script.received if path == "/v1/chat/completions"]
        assert bodies[0]["temperature"] == 0.7 and bodies[0]["seed"] == 11
        assert bodies[1]["temperature"] == 0 and "seed" not in bodies[1]
    finally:
        server.shutdown()
        server.server_close()


def test_probe_refuses_sampling_for_a_model_it_does_not_ask(tmp_path):
    result = CliRunner().invoke(app, ["probe", "size", "--model", "dummy", "--samples", "3", "--temperature", "1",
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "--samples, --temperature apply to models asked the task's question" in " ".join(result.output.split())
