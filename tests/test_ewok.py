"""EWoK (spatialprobe/benchmarks/ewok.py): a password-protected archive the test encrypts itself (its
compiled test suites as ``ewok.compile`` writes them) read in memory through ``spatialprobe bench``
with a tiny GPT-2; known answers (a model that knows scores 100, one that knows one target of
each pair 50); the score equals a transcription of EWoK's logprobs scoring on random scores, ties
included; a wrong or missing password is refused in one sentence; no item text reaches the run."""

from __future__ import annotations

import csv
import io
import json
import random
import sys
from pathlib import Path
from typing import ClassVar

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

pyzipper = pytest.importorskip("pyzipper")

from spatialprobe.benchmarks.ewok import from_settings  # noqa: E402

PASSWORD = "not-the-real-one"
ITEMS = [  # (domain, Context1, Context2, Target1, Target2)
    ("spatial-relations", "The cup is on the table.", "The cup is under the table.",
     "The table is below the cup.", "The table is above the cup."),
    ("spatial-relations", "Ann stands left of Bo.", "Ann stands right of Bo.",
     "Bo is right of Ann.", "Bo is left of Ann."),
    ("physical-dynamics", "The ball was dropped.", "The ball was thrown up.", "The ball falls.", "The ball rises."),
    ("social-relations", "Ann is Bo's boss.", "Bo is Ann's boss.", "Ann manages Bo.", "Bo manages Ann."),
]
PLAUSIBLE = {(c1, t1) for _, c1, _, t1, _ in ITEMS} | {(c2, t2) for _, _, c2, _, t2 in ITEMS}


def _suite(rows) -> bytes:
    """A test suite CSV with ewok.compile's columns."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["", "Domain", "ConceptA", "ConceptB", "Context1", "Context2", "Target1", "Target2"])
    for n, (domain, c1, c2, t1, t2) in enumerate(rows):
        writer.writerow([n, domain, "a", "b", c1, c2, t1, t2])
    return out.getvalue().encode()


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("ewok") / "ewok-core.zip"
    with pyzipper.AESZipFile(path, "w", compression=pyzipper.ZIP_DEFLATED, encryption=pyzipper.WZ_AES) as z:
        z.setpassword(PASSWORD.encode())
        z.writestr("dataset/testsuite-spatial_relations.csv", _suite(ITEMS[:2]))
        z.writestr("dataset/testsuite-other.csv", _suite(ITEMS[2:]))
        z.writestr("TERMS_OF_USE.txt", b"terms")
    return path


class Knower:
    """Scores a target 0 after the context it follows from, -1 elsewhere (``half``: only target 1s)."""

    name = "knower"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("cloze",)

    def __init__(self, half=False):
        self.half = half

    def score(self, requests, progress=None):
        first = {t1 for *_, t1, _ in ITEMS}
        return [tuple(0.0 if (r.prefix.strip(), o) in PLAUSIBLE and (not self.half or o in first) else -1.0
                      for o in r.options) for r in requests]

    def describe(self):
        return {"model": "knower", "half": self.half}


def _settings(path, **options):
    return {"name": "ewok", "data": str(path), "options": {"password_env": "EWOK_PW", **options}}


def test_the_archive_is_read_in_memory_with_its_spatial_and_physical_items(archive, monkeypatch):
    monkeypatch.setenv("EWOK_PW", PASSWORD)
    source = from_settings(_settings(archive), 0)
    assert len(source.items) == len({i.key for i in source.items}) == 6  # two targets of three items
    assert {i.fields["domain"] for i in source.items} == {"spatial-relations", "physical-dynamics"}
    assert source.settings["options"] == {"password_env": "EWOK_PW"}  # the variable's name, never the password
    first = next(i for i in source.items if i.key == "testsuite-spatial_relations-1/1").wording("cloze")
    assert first.target == ITEMS[0][3] and first.contexts == (ITEMS[0][2], ITEMS[0][1])  # (mismatched, matched)
    social = from_settings(_settings(archive, domains="social-relations"), 0)
    assert len(social.items) == 2
    from spatialprobe.errors import UsageError

    monkeypatch.setenv("EWOK_PW", "wrong")
    with pytest.raises(UsageError, match="the password in --option password_env does not open it"):
        from_settings(_settings(archive), 0)
    monkeypatch.delenv("EWOK_PW")
    with pytest.raises(UsageError, match="the environment variable EWOK_PW is not set"):
        from_settings(_settings(archive), 0)


def test_a_knowing_model_scores_100_and_a_half_knowing_one_50(archive, tmp_path, monkeypatch):
    from spatialprobe.engine.run import ask_run
    from spatialprobe.runner.settings import Component

    monkeypatch.setenv("EWOK_PW", PASSWORD)
    source = from_settings(_settings(archive), 0)
    for model, want in ((Knower(), 100.0), (Knower(half=True), 50.0)):
        summary = ask_run(source, model, Component("fake", {"model": "knower"}), None, tmp_path / str(want),
                          condition="none")
        assert summary["metrics"]["accuracy"]["mean"] == want


def test_bench_with_a_tiny_gpt2_through_the_archive_writes_no_item_text(archive, tmp_path, monkeypatch, shared_dir):
    """A GPT-2 whose every token is equally likely ties every comparison: EWoK counts a tie wrong (0)."""
    from causal_helpers import gpt2_tokenizer, untrained_gpt2
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    monkeypatch.setenv("EWOK_PW", PASSWORD)
    gpt2 = untrained_gpt2(tmp_path / "gpt2", gpt2_tokenizer(shared_dir))
    out = tmp_path / "run"
    runner = CliRunner()
    said = runner.invoke(app, ["bench", "ewok", "--data", str(archive), "--option", "password_env=EWOK_PW",
                               "--model", str(gpt2), "--out", str(out), "--device", "cpu"])
    assert said.exit_code == 0, said.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"]["accuracy"]["mean"] == 0.0 and summary["metrics"]["accuracy"]["n"] == 6
    written = "".join(p.read_text(errors="ignore") for p in out.rglob("*") if p.is_file())
    assert not any(text in written for item in ITEMS for text in item[1:])
    said = runner.invoke(app, ["bench", "ewok", "--data", str(archive), "--option", "password_env=EWOK_PW",
                               "--model", str(gpt2), "--out", str(tmp_path / "gen"), "--protocol", "generate"])
    assert said.exit_code != 0


def _official(s11, s12, s21, s22):
    """EWoK's logprobs score of one item (ewok-core/ewok-paper, as adapted in EwokMinimalPairsTask):
    1 where logP(T1|C1) > logP(T1|C2) and logP(T2|C1) < logP(T2|C2), 0.5 where one holds, else 0."""
    if s11 > s12 and s21 < s22:
        return 1
    if s11 > s12 or s21 < s22:
        return 0.5
    return 0


def test_the_score_equals_ewoks_on_random_scores_with_ties(archive, monkeypatch):
    from spatialprobe.engine.metrics import official_metrics
    from spatialprobe.engine.protocols import Question, ask

    monkeypatch.setenv("EWOK_PW", PASSWORD)
    source = from_settings(_settings(archive), 0)
    rng = random.Random(0)

    class Random:
        protocols: ClassVar[tuple[str, ...]] = ("score",)

        def score(self, requests, progress=None):
            return [(self.table[(r.prefix.strip(), r.options[0])],) for r in requests]

    model = Random()
    for _ in range(500):
        model.table = {(c, t): float(rng.randint(-2, 0)) for _, c1, c2, t1, t2 in ITEMS for c in (c1, c2)
                       for t in (t1, t2)}
        questions = [Question(w.prompt, w.options, target=w.target, contexts=w.contexts)
                     for w in (i.wording("cloze") for i in source.items)]
        answers = ask(model, questions, "likelihood")
        rows = [{"instance_id": i.key, "gold": i.gold, "item": i.fields["item"],
                 "pred": i.labels[i.options.index(a["likelihood"]["option"])]} for i, a in zip(source.items, answers,
                                                                                               strict=True)]
        ours = official_metrics(rows, source.spec, source.official)[0]["accuracy"].mean
        scores = [_official(model.table[(c1, t1)], model.table[(c2, t1)], model.table[(c1, t2)], model.table[(c2, t2)])
                  for d, c1, c2, t1, t2 in ITEMS if d != "social-relations"]
        assert ours == pytest.approx(100 * sum(scores) / len(scores))
