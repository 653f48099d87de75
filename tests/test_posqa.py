"""POSQA (spatialprobe/benchmarks/posqa.py): a small file in its own format (a JSON object keyed by id,
and the Parquet layout of its Hugging Face copy) through the real loader and ``spatialprobe bench``
with tiny masked and causal LMs (cloze) and a chat stand-in (question, both protocols); known
answers; the official metrics equal a transcription of the authors' script on random predictions;
the real release (../shared/data/posqa) when present."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import ClassVar

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spatialprobe.benchmarks.posqa import from_settings

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "posqa" / "datasets" / "posqa.json"
PAIRS = [("ant", "house", False), ("plane", "cup", True), ("bus", "bird", True), ("dog", "bottle", True)]
"""(head, tail, head is bigger): a model that always says "bigger" is right on 3 of 4 pairs."""


def posqa_records() -> dict[str, dict]:
    """Records as cambridgeltl/POSQA's datasets/posqa.json writes them: a bigger and a smaller
    question per pair (ids ``N_M_0`` / ``N_M_1``)."""
    out = {}
    for n, (head, tail, bigger) in enumerate(PAIRS):
        for k, word in enumerate(("bigger", "smaller")):
            label = bigger if word == "bigger" else not bigger
            out[f"{n}_{n + 1}_{k}"] = {
                "h_name": head, "t_name": tail, "magnitude": ["1", "3", 2], "paras": [],
                "general_question": f"Is the {head} {word} than the {tail}", "general_question_label": label,
                "special_question": f"Which one is {word} between {head} and {tail}",
                "special_question_label": head if label else tail}
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("posqa")
    records = posqa_records()
    (folder / "posqa.json").write_text(json.dumps(records, indent=1))
    rows = [{"id": k, **{f: v for f, v in r.items() if f not in ("magnitude", "paras")}} for k, r in records.items()]
    pq.write_table(pa.Table.from_pylist(rows), folder / "test-00000-of-00001.parquet")
    return folder


class Sayer:
    """A chat stand-in that always answers ``answer`` (``Yes`` or the letter ``A``), by score and by reply."""

    name = "sayer"
    protocols: ClassVar[tuple[str, ...]] = ("score", "generate")
    wordings: ClassVar[tuple[str, ...]] = ("question",)

    def __init__(self, answer: str):
        self.answer = answer

    def score(self, requests, progress=None):
        return [tuple(0.0 if n == (0 if self.answer in ("Yes", "A") else 1) else -1.0 for n in range(len(r.options)))
                for r in requests]

    def generate(self, requests, progress=None):
        return [f"{self.answer}." for _ in requests]

    def describe(self):
        return {"model": "sayer", "answer": self.answer}


def _settings(path, subset=None):
    return {"name": "posqa", "data": str(path), "subset": subset}


def test_the_file_and_its_parquet_copy_give_the_same_items_with_their_facts(files):
    keyed = from_settings(_settings(files / "posqa.json"), 0)
    parquet = from_settings(_settings(files), 0)
    assert [(i.key, i.gold, i.fact) for i in keyed.items] == [(i.key, i.gold, i.fact) for i in parquet.items]
    assert [i.gold for i in keyed.items] == ["no", "yes", "yes", "no", "yes", "no", "yes", "no"]
    assert keyed.items[0].fact == ("ant", "smaller", "house") and keyed.items[2].fact == ("plane", "larger", "cup")
    special = from_settings(_settings(files / "posqa.json", "special"), 0)
    assert [i.gold for i in special.items[:2]] == ["house", "ant"] and special.labels == tuple(sorted(
        {x for h, t, _ in PAIRS for x in (h, t)}))
    assert special.items[1].wording("cloze").labels == ("house", "ant")  # "smaller" names the head
    assert keyed.settings["data"]["version"] == keyed.dataset.split("@")[1]


def test_bench_with_tiny_masked_and_causal_lms_through_the_cloze(files, tmp_path, shared_dir):
    """A BERT whose every prediction is "bigger" and a GPT-2 whose every token is equally likely
    (the first option wins a tie) both say "bigger": right exactly where the head is bigger."""
    from causal_helpers import gpt2_tokenizer, untrained_gpt2
    from mlm_helpers import set_output_bias, tiny_wordpiece_bert
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    bert = tiny_wordpiece_bert(tmp_path / "bert")
    set_output_bias(bert, {"bigger": 5.0})
    gpt2 = untrained_gpt2(tmp_path / "gpt2", gpt2_tokenizer(shared_dir))
    runner = CliRunner()
    for model, subset, data in ((bert, "general", files / "posqa.json"), (gpt2, "special", files)):
        out = tmp_path / f"run-{model.name}"
        said = runner.invoke(app, ["bench", "posqa", "--data", str(data), "--subset", subset, "--model", str(model),
                                   "--out", str(out), "--device", "cpu"])
        assert said.exit_code == 0, said.output
        summary = json.loads((out / "summary.json").read_text())
        assert summary["details"]["wording"] == "cloze"
        assert summary["metrics"]["accuracy"]["mean"] == 75.0
        assert summary["metrics"]["micro_f1"]["mean"] == 75.0
    said = runner.invoke(app, ["bench", "posqa", "--data", str(files), "--subset", "which", "--model", str(bert),
                               "--out", str(tmp_path / "no")])
    assert said.exit_code != 0 and "--subset which is not a posqa subset" in said.output
    said = runner.invoke(app, ["bench", "posqa", "--data", str(files), "--images", str(tmp_path),
                               "--model", str(bert), "--out", str(tmp_path / "no")])
    assert said.exit_code != 0 and "--images does not apply to posqa" in said.output


def test_a_yes_sayer_scores_the_yes_share_by_both_protocols(files, tmp_path):
    from spatialprobe.engine.run import ask_run
    from spatialprobe.runner.settings import Component

    general = from_settings(_settings(files / "posqa.json"), 0)
    summary = ask_run(general, Sayer("Yes"), Component("fake", {"model": "sayer"}), None, tmp_path / "g",
                      protocol="both", condition="none")
    yes = 100 * sum(i.gold == "yes" for i in general.items) / len(general.items)
    assert summary["metrics"]["accuracy"]["mean"] == summary["metrics"]["accuracy_generate"]["mean"] == yes == 50.0
    special = from_settings(_settings(files / "posqa.json", "special"), 0)
    summary = ask_run(special, Sayer("A"), Component("fake", {"model": "sayer"}), None, tmp_path / "s",
                      protocol="both", condition="none")
    heads = 100 * sum(i.gold == i.options[0] for i in special.items) / len(special.items)
    assert summary["metrics"]["accuracy"]["mean"] == summary["metrics"]["accuracy_generate"]["mean"] == heads


def _official(preds, golds):
    """cambridgeltl/POSQA @2c9a164 scripts/cal_metric_scores.py, transcribed: cal_accuracy and
    ``f1_score(pred_labels, gold_labels, average=...)`` (the predictions passed as y_true)."""
    from sklearn.metrics import f1_score

    acc = sum([int(i == j) for i, j in zip(preds, golds, strict=True)]) / len(preds)
    return (100 * acc, 100 * f1_score(preds, golds, average="micro"), 100 * f1_score(preds, golds, average="macro"))


@pytest.mark.parametrize("subset", ["general", "special"])
def test_official_metrics_equal_the_authors_script_on_random_predictions(files, subset):
    from dataclasses import replace

    from spatialprobe.engine.metrics import official_metrics

    source = from_settings(_settings(files / "posqa.json", subset), 0)
    declared = (replace(source.official[0], groups=()),)
    rng = random.Random(0)
    for _ in range(150):
        items = rng.sample(source.items, rng.randint(1, len(source.items)))
        rows = [{"instance_id": i.key, "gold": i.gold, "pred": rng.choice(i.labels), "obj_a": i.fields["obj_a"],
                 "obj_b": i.fields["obj_b"]} for i in items]
        ours = official_metrics(rows, source.spec, declared)[0]
        want = _official([r["pred"] for r in rows], [r["gold"] for r in rows])
        got = (ours["accuracy"].mean, ours["micro_f1"].mean, ours["macro_f1_official"].mean)
        assert got == pytest.approx(want, abs=1e-9)


@pytest.mark.skipif(not REAL.is_file(), reason="../shared/data/posqa is not present")
def test_the_real_release_reads_whole_with_consistent_facts():
    general = from_settings(_settings(REAL), 0)
    special = from_settings(_settings(REAL, "special"), 0)
    assert len(general.items) == len(special.items) == 6000
    assert sum(i.gold == "yes" for i in general.items) == 2970  # a yes-sayer scores 49.5
    for g, s in zip(general.items, special.items, strict=True):  # the larger entity answers "which is bigger"
        a, relation, b = g.fact
        assert s.gold == ((a if relation == "larger" else b) if g.fields["comparative"] == "bigger"
                          else (b if relation == "larger" else a))
