import json

import pytest
from mlm_helpers import tiny_wordpiece_bert

from spatialprobe.files import read_jsonl
from spatialprobe.models.masked_lm import MaskedLMScorer
from spatialprobe.probing.run import ProbeSettings, run_probe
from spatialprobe.prompts.templates import Candidates, fill
from spatialprobe.store import list_runs
from spatialprobe.tasks import data as task_data


class OracleForOneTemplate:
    """Knows the gold answer, but only when the prompt says 'usually'; elsewhere it is wrong."""

    name = "oracle"

    def __init__(self, dataset, words_of_label):
        self.gold = {}
        for inst in dataset.instances:
            for t in ("[A] is [MASK] than [B].", "[A] is usually [MASK] than [B]."):
                self.gold[fill(t, inst)] = words_of_label[inst.label]
        self.calls = 0

    def describe(self):
        return {"scorer": "oracle", "model": "oracle", "weights_sha256": "0"}

    def score(self, requests, progress=None):
        self.calls += len(requests)
        out = []
        for req in requests:
            right = self.gold[(req.prefix, req.suffix)]
            good = "usually" in req.prefix
            out.append(tuple((0.0 if (w in right) == good else -5.0) for w in req.options))
        return out


CANDS = Candidates("size", ("[A] is [MASK] than [B].", "[A] is usually [MASK] than [B]."),
                   {"larger": ("larger", "bigger"), "smaller": ("smaller", "tinier")}, "test")


def test_selection_picks_the_template_that_works_on_dev(tmp_path):
    ds = task_data.load("size")
    scorer = OracleForOneTemplate(ds, {"larger": ("larger", "bigger"), "smaller": ("smaller", "tinier")})
    summary = run_probe(ds, CANDS, ProbeSettings(model="oracle"), tmp_path / "run", scorer=scorer)
    assert scorer.calls == 2 * 500  # every template x instance once, for all five folds
    assert [f["prompt"] for f in summary["details"]["folds"]] == ["[A] is usually [MASK] than [B]."] * 5
    assert all(f["accuracy"] == 100.0 and f["size"] == 320 for f in summary["details"]["folds"])
    assert {k: summary["accuracy"][k] for k in ("mean", "std")} == {"mean": 100.0, "std": 0.0}
    assert summary["details"]["whole_set"]["accuracy"] == 0.0  # the hand-written prompt is always wrong here
    rows = read_jsonl(tmp_path / "run" / "predictions.jsonl")
    assert len(rows) == 5 * 320 and {"obj_a", "obj_b", "gold", "pred", "fold"} <= set(rows[0])


def test_rerun_on_the_same_directory_scores_nothing_again(tmp_path):
    ds = task_data.load("size")
    words = {"larger": ("larger", "bigger"), "smaller": ("smaller", "tinier")}
    first = OracleForOneTemplate(ds, words)
    run_probe(ds, CANDS, ProbeSettings(model="oracle"), tmp_path / "run", scorer=first)
    again = OracleForOneTemplate(ds, words)
    summary = run_probe(ds, CANDS, ProbeSettings(model="oracle"), tmp_path / "run", scorer=again)
    assert again.calls == 0 and summary["accuracy"]["mean"] == 100.0


def test_interrupted_scoring_resumes_where_it_stopped(tmp_path):
    ds = task_data.load("size")
    words = {"larger": ("larger", "bigger"), "smaller": ("smaller", "tinier")}

    class Crashing(OracleForOneTemplate):
        def score(self, requests, progress=None):
            if self.calls >= 512:
                raise KeyboardInterrupt
            return super().score(requests, progress)

    with pytest.raises(KeyboardInterrupt):
        run_probe(ds, CANDS, ProbeSettings(model="oracle"), tmp_path / "run", scorer=Crashing(ds, words))
    resumed = OracleForOneTemplate(ds, words)
    run_probe(ds, CANDS, ProbeSettings(model="oracle"), tmp_path / "run", scorer=resumed)
    assert resumed.calls == 1000 - 512


def test_a_run_directory_refuses_another_model(tmp_path):
    ds = task_data.load("size")
    run_probe(ds, CANDS, ProbeSettings(model="dummy"), tmp_path / "run")
    with pytest.raises(ValueError, match="settings that differ: model: 'dummy' -> 'oracle'"):
        run_probe(ds, CANDS, ProbeSettings(model="oracle"), tmp_path / "run",
                  scorer=OracleForOneTemplate(ds, {"larger": ("larger",), "smaller": ("smaller",)}))


def _counting(forward, rows: list[int]):
    """``forward`` that also appends each call's batch size to ``rows``."""
    def counted(*args, **kwargs):
        rows.append(kwargs["input_ids"].shape[0])
        return forward(*args, **kwargs)
    return counted


def test_five_fold_search_costs_no_more_forward_passes_than_one_fold(tmp_path):
    model_dir = tiny_wordpiece_bert(tmp_path / "bert")
    ds = task_data.load("size")
    cands = Candidates("size", ("[A] is [MASK] than [B].", "[A] is much [MASK] than [B]."),
                       {"larger": ("larger", "huger"), "smaller": ("smaller", "tinier")}, "test")
    counts = {}
    for k in (2, 5):
        scorer = MaskedLMScorer(str(model_dir), device="cpu", batch_size=256)
        rows = []
        encoder = scorer.model.base_model  # every pass, with or without the mask-only head, runs it
        original = encoder.forward
        encoder.forward = _counting(original, rows)
        run_probe(ds, cands, ProbeSettings(model=str(model_dir), folds=k), tmp_path / f"k{k}", scorer=scorer)
        counts[k] = sum(rows)
    # one sequence per (template, instance, piece count): 1-piece words and 2-piece words
    assert counts[5] == counts[2] == 2 * 500 * 2
    assert scorer._head is not None  # BERT's head runs at the mask positions only


def test_summary_contract_and_index(tmp_path):
    ds = task_data.load("posrel")
    summary = run_probe(ds, Candidates("posrel", ("[SCENARIO] [PRONOUN] is [MASK] the [OBJECT].",),
                                       {label: (label,) for label in ds.labels}, "manual"),
                        ProbeSettings(model="dummy", seed=1), tmp_path / "run")
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    assert on_disk["task"] == "posrel" and on_disk["model"] == "dummy" and on_disk["untrained"] is True
    for fold in on_disk["details"]["folds"]:
        assert {"prompt", "answers", "accuracy", "macro_f1", "size"} <= set(fold)
    assert set(on_disk["accuracy"]) == {"mean", "std", "n", "ci", "breakdown"} == set(on_disk["macro_f1"])
    assert on_disk["intervals"]["clusters"] == ["obj_b"] and on_disk["seed"] == 1  # posrel: the object
    assert 0 <= on_disk["details"]["same_answer_both_actions"] <= 100
    assert on_disk["provenance"]["toolkit_version"]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["settings"]["dataset"]["version"] == ds.version and config["settings"]["seed"] == 1
    assert [r["path"] for r in list_runs()] == [str((tmp_path / "run").resolve())]


def test_same_answer_share_counts_pairs_of_actions(tmp_path):
    ds = task_data.load("posrel")

    class AlwaysInside:
        name = "inside"

        def describe(self):
            return {"model": "inside", "weights_sha256": "x"}

        def score(self, requests, progress=None):
            return [tuple(1.0 if w == "inside" else 0.0 for w in r.options) for r in requests]

    summary = run_probe(ds, Candidates("posrel", ("[SCENARIO] [PRONOUN] is [MASK] the [OBJECT].",),
                                       {label: (label,) for label in ds.labels}, "manual"),
                        ProbeSettings(model="inside"), tmp_path / "run", scorer=AlwaysInside())
    assert summary["details"]["same_answer_both_actions"] == 100.0
    share_inside = sum(i.label == "inside" for i in ds.instances) / len(ds)
    assert summary["details"]["whole_set"]["accuracy"] == pytest.approx(100 * share_inside)
