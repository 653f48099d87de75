"""`spatialprobe report --by fact`: a text probe, an ask run with images and a judged image run
joined on the posrel facts they share, with planted right and wrong answers.

Eight distinct posrel facts (two of each relation). The probe (text, every posrel instance) is
right on facts 0-5, the ask run (a multimodal model shown each instance's image) on 0, 1, 4-7,
the judge (the drawn scenes of a generated-image run) on 4-7: per relation and overall the
counts are known, and each pair's McNemar p is scipy's binomial test on its planted discordance.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from judge_helpers import dataset_id, scene
from many_helpers import Planted
from scipy import stats
from test_intervals import Oracle
from typer.testing import CliRunner

from spatialprobe.benchmarks.commonsense import task_source
from spatialprobe.cli import app
from spatialprobe.engine.run import ask_run
from spatialprobe.imagestore import ImageStore, PromptItem
from spatialprobe.probing.run import ProbeSettings, run_probe
from spatialprobe.prompts.templates import fill, resolve
from spatialprobe.reports.facts import by_fact, normalise, row_fact, row_right
from spatialprobe.runner.settings import Component
from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.origin import builtin_source

GOLDS = ["above", "below", "inside", "beside"] * 2
TEXT = [True, True, True, True, True, True, False, False]
ASK = [True, True, False, False, True, True, True, True]
JUDGE = [False, False, False, False, True, True, True, True]
OTHER = {"above": "below", "below": "above", "inside": "beside", "beside": "inside"}


def fact(inst):
    return normalise(inst.obj_a, inst.label, inst.obj_b)


def chosen(dataset):
    """The first instance of each of eight distinct facts, with the golds of GOLDS in order."""
    out, seen = [], set()
    for gold in GOLDS:
        inst = next(i for i in dataset.instances if i.label == gold and fact(i) not in seen)
        seen.add(fact(inst))
        out.append(inst)
    return out


class PlantedCloze(Oracle):
    """A probe scorer that names the gold word, except on the facts planted wrong (the other word)."""

    name = "planted-text"

    def __init__(self, dataset, wrong):
        cands = resolve("manual", "posrel")
        self.answer = {fill(cands.templates[0], i): (OTHER[i.label] if fact(i) in wrong else i.label)
                       for i in dataset.instances}

    def score(self, requests, progress=None):
        return [tuple(0.0 if w == self.answer[(r.prefix, r.suffix)] else -5.0 for w in r.options) for r in requests]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("facts")
    dataset = task_data.load("posrel")
    picked = chosen(dataset)
    # text: the probe over every posrel instance
    wrong = {fact(i) for i, ok in zip(picked, TEXT, strict=True) if not ok}
    run_probe(dataset, resolve("manual", "posrel"), ProbeSettings(model="planted-text"), root / "text",
              scorer=PlantedCloze(dataset, wrong))
    # generated images: one drawn scene per fact, drawn right or wrong, judged by the colour detector
    store = ImageStore(root / "images")
    store.run.start({"kind": "synthesize", "prompts": dataset_id("posrel"), "task": "posrel"})
    store.add_prompts(PromptItem(i.id, i.text, i.to_dict()) for i in picked)
    for inst, ok in zip(picked, JUDGE, strict=True):
        drawn = inst.label if ok else OTHER[inst.label]
        store.save_image(scene("posrel", inst.obj_a, inst.obj_b, drawn), inst.id, 0, seed=0, backend="test",
                         model="drawn-shapes", settings={"drawn": drawn})
    judged = CliRunner().invoke(app, ["judge", "posrel", str(root / "images"), "--detector", "colour",
                                      "--out", str(root / "judge"), "--no-gallery"])
    assert judged.exit_code == 0, judged.output
    # image + text: the eight instances asked with their images
    sub = replace(dataset, instances=tuple(picked))
    source, settings = task_source(sub, builtin_source("posrel"), image=str(root / "images"), folds=2)
    answers = {item.question: item.options[item.labels.index(item.gold if ok else OTHER[item.gold])]
               for item, ok in zip(source.items, ASK, strict=True)}
    ask_run(source, Planted("planted-vlm", answers), Component("planted", {"model": "planted-vlm"}), settings,
            root / "ask")
    return [root / "text", root / "ask", root / "judge"]


def test_the_runs_are_joined_on_their_shared_facts_with_exact_counts_per_relation(runs):
    result = by_fact(runs)
    assert [r["modality"] for r in result["runs"]] == ["text", "image+text", "generation"]
    assert result["shared"] == 8
    relations = result["relations"]
    # above and below are one relation (below(A, B) is above(B, A)): facts 0, 1, 4, 5
    assert {rel: (v["n"], v["right"]) for rel, v in relations.items()} == {
        "above": (4, [4, 4, 2]), "inside": (2, [1, 1, 1]), "beside": (2, [1, 1, 1]), "all": (8, [6, 6, 4])}
    assert relations["all"]["patterns"] == {"✓✓✗": 2, "✓✓✓": 2, "✗✓✓": 2, "✓✗✗": 2}


@pytest.mark.parametrize(("a", "b", "b10", "b01"), [(0, 1, 2, 2), (0, 2, 4, 2), (1, 2, 2, 0)])
def test_each_pair_gets_scipys_exact_mcnemar_p_on_its_discordant_facts(runs, a, b, b10, b01):
    result = by_fact(runs)
    labels = [r["label"] for r in result["runs"]]
    entry = next(p for p in result["relations"]["all"]["pairs"] if (p["a"], p["b"]) == (labels[a], labels[b]))
    assert (entry["n"], entry["b10"], entry["b01"]) == (8, b10, b01)
    assert entry["p_mcnemar"] == stats.binomtest(b10, b10 + b01, 0.5).pvalue


def test_the_command_prints_the_table_and_refuses_another_join(runs, tmp_path):
    result = CliRunner().invoke(app, ["report", "--by", "fact", *map(str, runs), "--out", str(tmp_path / "f.md")])
    assert result.exit_code == 0, result.output
    assert "| all | 8 | 6 (75 %) | 6 (75 %) | 4 (50 %) |" in result.output
    assert (tmp_path / "f.json").is_file()
    refused = CliRunner().invoke(app, ["report", "--by", "model", *map(str, runs)])
    assert refused.exit_code == 2 and "the one there is: fact" in refused.output


def test_relations_are_normalised_to_one_name():
    assert normalise("dog", "right of", "cat") == normalise("cat", "to the left of", "dog") == ("cat", "left of", "dog")
    assert normalise("ant", "smaller", "coin") == ("coin", "larger", "ant")
    assert normalise("cup", "below", "table") == ("table", "above", "cup")
    assert normalise("the Dog", "next to", "a cat") == normalise("cat", "beside", "dog") == ("cat", "beside", "dog")
    assert normalise("bird", "not below", "tree") == ("tree", "not above", "bird")


def test_each_kind_of_row_states_its_fact():
    vsr_false = {"instance_id": "7", "gold": "no", "pred": "no", "fact": ["cat", "not right of", "dog"]}
    assert row_fact(vsr_false) == ("dog", "not left of", "cat") and row_right(vsr_false)
    visor = {"obj_a": "cat", "obj_b": "dog", "rel": "right of", "correct": False, "pred": None}
    assert row_fact(visor) == ("dog", "left of", "cat") and not row_right(visor)
    probe = {"obj_a": "ant", "obj_b": "coin", "gold": "smaller", "pred": "smaller", "fold": 0}
    assert row_fact(probe) == ("coin", "larger", "ant") and row_right(probe)
    assert row_fact({"instance_id": "q1", "gold": "yes", "pred": "yes"}) is None  # a yes/no item without a fact
