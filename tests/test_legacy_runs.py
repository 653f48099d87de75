"""Run folders written by an earlier main resume and replay with this code: those of
the retired kinds (vsr, spatialmqa, qa) migrate to ask runs in place with their cached answers
(spatialprobe.engine.legacy) and are recomputed elsewhere with identical predictions; an ask folder
is confirmed in place (the same identity, nothing computed).

The folders are written by tests/legacy_runs.py run, in a subprocess, with the package as it was
at :data:`LEGACY_COMMIT` (main just before the engine merge), taken from this repository's own
history with ``git archive``: a fresh clone has it, so the test runs everywhere (skipped, with the
reason, only where git or that commit is not available).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.files import read_jsonl

LEGACY_COMMIT = "6125a7a"
"""the earlier main: its vsr, spatialmqa and qa commands wrote their own kinds."""
REPO = Path(__file__).resolve().parent.parent


def old_package(into: Path) -> Path:
    """The ``spatialprobe`` package of :data:`LEGACY_COMMIT`, extracted under ``into`` from this
    repository's history; the test is skipped, naming why, where git or the commit is missing."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the pre-change package cannot be taken from history")
    found = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{LEGACY_COMMIT}^{{commit}}"],
                           capture_output=True, check=False)
    if found.returncode != 0:
        pytest.skip(f"commit {LEGACY_COMMIT} is not in this clone's history (a shallow clone?)")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", LEGACY_COMMIT, "spatialprobe"],
                             capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        # the "data" filter (no absolute paths or links out of the folder) where this Python has it
        # (3.10.12+, 3.11.4+); the archive is git's own of this repository's history either way
        tar.extractall(into, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return into


@pytest.fixture(scope="module")
def legacy(tmp_path_factory):
    root = tmp_path_factory.mktemp("legacy")
    tree = old_package(tmp_path_factory.mktemp("legacy-tree"))
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(Path(__file__).parent / "legacy_runs.py"), str(root)],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
    return root


@pytest.mark.parametrize("kind", ["vsr", "spatialmqa", "qa", "qa-image"])
def test_a_retired_kinds_folder_migrates_in_place_and_replays_elsewhere(legacy, kind, tmp_path):
    """Resumed in place, the folder becomes an ask run with the old predictions and scores, nothing
    computed, its provenance naming the old kind and identity; a second resume confirms it; replayed
    into a new folder, the ask run computes the same predictions and scores afresh."""
    run = legacy / "runs" / kind
    old_config = json.loads((run / "config.json").read_text())
    expected = _old_answers(kind, read_jsonl(run / "predictions.jsonl"))
    old_metrics = _means(run, json.loads((run / "summary.json").read_text())["metrics"])  # every one it had
    moved = CliRunner().invoke(app, ["run", str(run / "config.json")])
    assert moved.exit_code == 0, moved.output
    assert f"migrated: a {old_config['kind']} run (identity {old_config['identity'][:12]})" in moved.output
    config = json.loads((run / "config.json").read_text())
    assert config["kind"] == "ask"
    assert config["provenance"]["migrated_from"] == {"kind": old_config["kind"], "identity": old_config["identity"]}
    assert config["provenance"]["created"] == old_config["provenance"]["created"]
    assert _answers(run) == expected  # the cached answers, translated: exactly the old ones
    assert _means(run, old_metrics) == _rounded(old_metrics)  # and its metrics, official ones included
    assert "resumed" not in json.loads((run / "summary.json").read_text())["provenance"]  # nothing computed
    again = CliRunner().invoke(app, ["run", str(run / "config.json")])
    assert again.exit_code == 0, again.output
    assert f"confirmed: identity {config['identity'][:12]}" in again.output
    copy = CliRunner().invoke(app, ["run", str(run / "config.json"), "--out", str(tmp_path / "copy")])
    assert copy.exit_code == 0, copy.output
    fresh = _answers(tmp_path / "copy")
    assert [row[:2] for row in fresh] == [row[:2] for row in expected]  # recomputed: the same predictions
    assert [row[2] for row in fresh] == [pytest.approx(row[2], abs=1e-4) for row in expected]
    assert _means(tmp_path / "copy", old_metrics) == _rounded(old_metrics)


MQA_METRICS = ("accuracy", "macro_f1", "f1", "precision", "recall")


def test_a_spatialmqa_run_of_the_generate_method_migrates_with_its_replies_and_official_metrics(legacy, tmp_path):
    """The generate method's folder becomes an ask run (protocol generate, the spatialmqa source's
    legacy-generate wording): each row's reply, strict and lenient label are the old row's output,
    strict_label and lenient_label, and the official metrics (lenient and strict_) the old ones;
    replayed into a new folder, the tiny LLaVA is asked the old prompt again: the same rows."""
    run = legacy / "runs" / "spatialmqa-generate"
    if not run.is_dir():
        pytest.skip("the generate run needs ../shared/models (the genuine LLaVA processor files)")
    old_config = json.loads((run / "config.json").read_text())
    old = read_jsonl(run / "predictions.jsonl")
    expected = [(r["id"], r["output"], r["strict_label"], r["lenient_label"]) for r in old]
    assert [row[1:] for row in expected] == [("below", "--", "below"), ("below", "below", "below")]  # the old run
    prompt = old_config["settings"]["answerer"]["prompt"]  # the prompt the old kind recorded it asked
    asked = [prompt.format(question=r["question"], options="; ".join(r["options"]))
             for r in old]
    old_metrics = _means(run, [*MQA_METRICS, *(f"strict_{m}" for m in MQA_METRICS)])
    moved = CliRunner().invoke(app, ["run", str(run / "config.json")])
    assert moved.exit_code == 0, moved.output
    assert f"migrated: a spatialmqa run (identity {old_config['identity'][:12]})" in moved.output
    config = json.loads((run / "config.json").read_text())
    settings = config["settings"]
    assert (config["kind"], settings["protocol"], settings["max_new_tokens"]) == ("ask", "generate", 1)
    assert config["settings"]["source"]["wording"] == "legacy-generate"
    assert _replies(run) == expected
    assert [r["question"] for r in read_jsonl(run / "predictions.jsonl")] == asked
    assert _means(run, old_metrics) == _rounded(old_metrics)
    copy = CliRunner().invoke(app, ["run", str(run / "config.json"), "--out", str(tmp_path / "copy")])
    assert copy.exit_code == 0, copy.output
    assert _replies(tmp_path / "copy") == expected  # recomputed: the old prompt asked again, the same replies
    parsed = [(r["pred"], r["parse_rule"]) for r in read_jsonl(run / "predictions.jsonl")]
    assert [(r["pred"], r["parse_rule"]) for r in read_jsonl(tmp_path / "copy" / "predictions.jsonl")] == parsed
    assert [r["question"] for r in read_jsonl(tmp_path / "copy" / "predictions.jsonl")] == asked
    assert _means(tmp_path / "copy", old_metrics) == _rounded(old_metrics)


def test_a_full_vocab_image_qa_run_migrates_with_its_answer_words_voted_as_it_voted(legacy, tmp_path):
    """A ``qa image --full-vocab`` folder becomes a generate run of the qa source that combines a
    scenario's replies as the old kind did (``vote: words``): the first scenario's images were
    answered ``two`` and ``yes``, and the old answer ``two`` (wrong: no label) stays, where a vote
    over replies parsed to yes or no would say ``yes``; accuracy and macro-F1 are the old ones; replayed
    into a new folder, the ViLT is asked again: the same replies and predictions."""
    run = legacy / "runs" / "qa-image-full-vocab"
    old_config = json.loads((run / "config.json").read_text())
    old = read_jsonl(run / "predictions.jsonl")
    expected = [(r["id"], r["pred"] if r["pred"] in ("yes", "no") else "--") for r in old]  # --: no label
    assert [r["pred"] for r in old] == ["two", "two", "no", "no", "yes", "yes"]  # the old run, as the ViLT was built
    old_metrics = _means(run, ["accuracy", "macro_f1"])
    moved = CliRunner().invoke(app, ["run", str(run / "config.json")])
    assert moved.exit_code == 0, moved.output
    assert f"migrated: a qa run (identity {old_config['identity'][:12]})" in moved.output
    settings = json.loads((run / "config.json").read_text())["settings"]
    assert (settings["protocol"], settings["source"]["vote"]) == ("generate", "words")
    rows = read_jsonl(run / "predictions.jsonl")
    assert [(r["instance_id"], r["pred"]) for r in rows] == expected
    assert rows[0]["replies"] == ["two", "yes"]  # the parsed vote would be yes: right for this question
    assert (rows[0]["gold"], rows[0]["pred"], rows[0]["pred_generate"]) == ("yes", "--", None)
    assert _means(run, old_metrics) == _rounded(old_metrics)
    assert old_metrics == pytest.approx({"accuracy": 100 / 3, "macro_f1": 40.0})  # sklearn's, over yes and no
    copy = CliRunner().invoke(app, ["run", str(run / "config.json"), "--out", str(tmp_path / "copy")])
    assert copy.exit_code == 0, copy.output
    fresh = read_jsonl(tmp_path / "copy" / "predictions.jsonl")
    assert [(r["instance_id"], r["pred"], r["replies"]) for r in fresh] == [
        (r["instance_id"], r["pred"], r["replies"]) for r in rows]
    assert _means(tmp_path / "copy", old_metrics) == _rounded(old_metrics)


def _rounded(old: dict) -> dict:
    """The old kind's metrics were rounded to 2 decimals; the ask kind's are not."""
    return {name: pytest.approx(value, abs=0.005) for name, value in old.items()}


def _replies(run: Path) -> list[tuple]:
    return [(r["instance_id"], r["reply"], r["pred_strict"], r["pred_lenient"])
            for r in read_jsonl(run / "predictions.jsonl")]


def _means(run: Path, names) -> dict:
    metrics = json.loads((run / "summary.json").read_text())["metrics"]
    return {name: metrics[name]["mean"] for name in names}


def _old_answers(kind: str, rows: list[dict]) -> list[tuple]:
    """(item, prediction in the ask kind's labels, scores in its option order) of an old kind's rows,
    written out independently of spatialprobe.engine.legacy."""
    if kind == "vsr":
        return [(r["id"], "yes" if r["pred"] == 1 else "no", [r["score_negation"], r["score_caption"]])
                for r in rows]
    if kind == "spatialmqa":
        return [(r["id"], r["output"], r["scores"]) for r in rows]
    return [(r["id"], r["pred"], [r["yes_score"], r["no_score"]]) for r in rows]


def _answers(run: Path) -> list[tuple]:
    return [(r["instance_id"], r["pred"], r["scores"]) for r in read_jsonl(run / "predictions.jsonl")]


def test_an_ask_folder_written_before_the_sources_resumes_with_the_same_identity(legacy, tmp_path):
    run = legacy / "runs" / "ask"
    if not run.is_dir():
        pytest.skip("the ask folder needs ../shared/models (the genuine LLaVA processor files)")
    predicted = _predictions(run)
    same = CliRunner().invoke(app, ["run", str(run / "config.json")])
    assert same.exit_code == 0, same.output
    assert "confirmed: identity" in same.output  # the same identity: resumed, nothing computed again
    assert _predictions(run) == predicted
    copy = CliRunner().invoke(app, ["run", str(run / "config.json"), "--out", str(tmp_path / "copy")])
    assert copy.exit_code == 0, copy.output
    assert _predictions(tmp_path / "copy") == predicted  # recomputed elsewhere: the same predictions


def _predictions(run: Path) -> list[tuple]:
    """(row key, prediction) of every row: an ask row gains the source's new fields (a VSR row its
    category), never another prediction."""
    rows = read_jsonl(run / "predictions.jsonl")
    return [(row["instance_id"], row.get("condition"), row.get("pred"),
             row.get("pred_likelihood"), row.get("pred_generate")) for row in rows]


@pytest.mark.parametrize(("kind", "settings", "why"), [
    ("spatialmqa", {"method": "generate", "answerer": {"prompt": "{question}? {options}"}}, "a prompt of its own"),
    ("qa", {"mode": "text", "questions": {"source": {"given": "mine"}}}, "given in memory"),
])
def test_a_retired_run_without_a_faithful_mapping_is_refused_in_one_sentence(kind, settings, why):
    from spatialprobe.engine.legacy import ask_run_of
    from spatialprobe.errors import UsageError
    from spatialprobe.runner import RunSpec

    with pytest.raises(UsageError, match=why):
        ask_run_of(RunSpec(kind, settings), "old/config.json")
