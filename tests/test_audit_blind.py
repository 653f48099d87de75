"""The blind-solvability audit (spatialprobe.audit.blind) on benchmarks whose blind ceiling is known.

Synthetic yes/no benchmarks of 400 items in 100 scenes (4 items each): a planted shortcut (the
answer follows the question's template word on 80 % of the items) is found (accuracy = the share
that follows it) with an interval excluding chance; random gold gives an interval covering chance;
a shortcut that lives inside each scene (every item of a scene has the same answer) is found with
ungrouped folds and vanishes with scene-grouped folds; a feature builder that reads the gold is
caught by the permutation guard. On the real VSR and SpatialMQA files the split prior baselines
equal counts made here independently.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from spatialprobe.audit.blind import (
    GuardFailed,
    audit_items,
    classifier,
    cluster_of,
    option_features,
    option_rows,
    out_of_fold,
    per_item,
    prior_predictions,
    splitter,
)
from spatialprobe.benchmarks.base import SourceItem
from spatialprobe.metrics.intervals import Resampling

SPEC = Resampling(("yes", "no"), ("image",), key=("instance_id",), pooled=True, unit="images")
NAMES = ["cat", "dog", "cup", "car", "bus", "tree", "bird", "boat", "horse", "chair"]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _items(gold_of, seed: int = 0) -> list[SourceItem]:
    """400 yes/no items, 4 per scene; ``gold_of(n, word, scene, rng)`` gives each one's gold."""
    rng = np.random.default_rng(seed)
    items = []
    for n in range(400):
        scene, word = f"scene{n // 4:03d}", ("near", "far from")[int(rng.integers(2))]
        a, b = rng.choice(NAMES, 2, replace=False)
        items.append(SourceItem(f"i{n:03d}", f"Is the {a} {word} the {b}? Answer yes or no.", ("Yes", "No"),
                                ("yes", "no"), gold_of(n, word, scene, rng), None, (str(a), str(b), scene),
                                {"image": scene}))
    return items


def _shortcut(n, word, scene, rng):
    follows = rng.random() < 0.8
    return ("yes" if word == "near" else "no") if follows else ("no" if word == "near" else "yes")


@pytest.fixture(scope="module")
def planted():
    items = _items(_shortcut)
    return items, audit_items(items, SPEC, "planted", folds=5, seed=0)


def test_a_planted_template_shortcut_is_found_at_its_rate_with_an_interval_excluding_chance(planted):
    items, audit = planted
    follows = sum((i.gold == "yes") == (" near " in i.question) for i in items)
    assert follows == 327  # 81.75 % of the items follow the planted word (fixed seed)
    # the classifiers find it, losing a point or two to what they fit on the objects' names
    assert {name: found.accuracy for name, found in audit.classifiers.items()} == {"logistic": 80.75, "forest": 81.75}
    for found in audit.classifiers.values():
        assert abs(found.accuracy - 81.75) <= 2.0 and found.ci[0] > 50.0
    assert audit.chance == 50.0 and audit.guard["passed"]
    # the forest's most important features are the planted word, alone or in its template
    assert all(name.split("|")[1].startswith(("word=", "template=")) for name, _ in audit.importances["forest"][:5])


def test_fold_predictions_equal_scikit_learns_cross_val_predict_with_the_same_groups_and_seed(planted):
    from sklearn.model_selection import GroupKFold, cross_val_predict

    items, audit = planted
    groups = [cluster_of(i, SPEC.clusters) for i in items]
    rows = option_rows(items, groups)
    cv = GroupKFold(n_splits=5, shuffle=True, random_state=0)
    theirs = cross_val_predict(classifier("logistic", 0), rows.X, rows.y, groups=rows.groups, cv=cv,
                               method="predict_proba")[:, 1]
    ours = out_of_fold(rows, "logistic", list(splitter(5, 0).split(rows.X, rows.y, rows.groups)), 0)
    np.testing.assert_allclose(ours, theirs)
    preds, p_gold = per_item(rows, theirs, items)
    assert tuple(preds) == audit.classifiers["logistic"].pred
    np.testing.assert_allclose(p_gold, audit.classifiers["logistic"].p_gold)
    # every option of an item and every item of a scene fall in one fold
    for _, test in cv.split(rows.X, rows.y, rows.groups):
        tested = set(rows.groups[test])
        assert not tested & set(rows.groups[np.setdiff1d(np.arange(len(rows.y)), test)])


def test_random_gold_is_chance_with_an_interval_covering_it():
    items = _items(lambda n, word, scene, rng: ("yes", "no")[int(rng.integers(2))], seed=1)
    audit = audit_items(items, SPEC, folds=5, seed=0, names=("logistic",))
    assert audit.classifiers["logistic"].ci[0] < 50.0 < audit.classifiers["logistic"].ci[1]


def test_a_shortcut_inside_each_scene_leaks_without_grouping_and_vanishes_with_scene_folds():
    answer = {f"scene{s:03d}": ("yes", "no")[s % 2] for s in range(100)}
    # each question names its scene (as questions about one image share its wording): the scene is then
    # an object a reader sees, and its answer a shortcut that lives inside the scene
    items = [replace(i, question=f"In {i.fields['image']}: {i.question}")
             for i in _items(lambda n, word, scene, rng: answer[scene], seed=2)]
    leaky = audit_items(items, SPEC, folds=5, seed=0, grouped=False, names=("logistic",))
    assert leaky.unit == "instances" and leaky.classifiers["logistic"].accuracy > 90.0
    grouped = audit_items(items, SPEC, folds=5, seed=0, names=("logistic",))
    assert grouped.unit == "images"
    assert grouped.classifiers["logistic"].ci[0] < 50.0 < grouped.classifiers["logistic"].ci[1]


def test_the_permutation_guard_fails_a_classifier_fed_the_gold():
    items = _items(lambda n, word, scene, rng: ("yes", "no")[int(rng.integers(2))], seed=3)

    def reads_gold(item, index):
        return {**option_features(item, index), "is gold": int(item.labels[index] == item.gold)}

    with pytest.raises(GuardFailed, match="the label-permutation guard failed"):
        audit_items(items, SPEC, folds=5, seed=0, features=reads_gold, names=("logistic",))


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open()]


def _majority(counts: Counter, first: str) -> str:
    """The most frequent label; a tie goes to ``first`` (the first option)."""
    top = max(counts.values())
    return first if counts[first] == top else next(k for k, v in counts.items() if v == top)


@pytest.mark.skipif(not (DATA / "vsr" / "random" / "train.jsonl").is_file(), reason="no VSR copy in ../shared/data")
def test_vsr_split_priors_equal_the_per_relation_majority_counted_here():
    from spatialprobe.benchmarks.vsr import vsr_source

    folder = DATA / "vsr" / "random"
    train, test = _lines(folder / "train.jsonl"), _lines(folder / "test.jsonl")
    counts: dict[str, Counter] = {}
    for r in train:
        counts.setdefault(r["relation"], Counter())["yes" if r["label"] else "no"] += 1
    overall = Counter("yes" if r["label"] else "no" for r in train)
    expected = sum(_majority(counts.get(r["relation"], overall), "yes") == ("yes" if r["label"] else "no")
                   for r in test)
    majority = sum(_majority(overall, "yes") == ("yes" if r["label"] else "no") for r in test)
    found = prior_predictions(vsr_source(folder / "train.jsonl", None, part="train")[0].items,
                              items := vsr_source(folder / "test.jsonl", None)[0].items)
    assert len(items) == 2195
    assert sum(p == i.gold for p, i in zip(found["per relation"], items, strict=True)) == expected
    assert sum(p == i.gold for p, i in zip(found["majority"], items, strict=True)) == majority


@pytest.mark.skipif(not (DATA / "spatialmqa" / "train.jsonl").is_file(), reason="no SpatialMQA copy")
def test_spatialmqa_split_priors_equal_the_option_most_often_gold_counted_here():
    from spatialprobe.benchmarks.spatialmqa import spatialmqa_source

    folder = DATA / "spatialmqa"
    train, test = _lines(folder / "train.jsonl"), _lines(folder / "test.jsonl")
    answers = Counter(r["answer"] for r in train)
    positions = Counter(r["options"].index(r["answer"]) for r in train)
    expected = sum(max(r["options"], key=lambda o: (answers[o], -r["options"].index(o))) == r["answer"]
                   for r in test)
    by_position = sum(r["options"][max(range(len(r["options"])), key=lambda i: (positions[i], -i))] == r["answer"]
                      for r in test)
    found = prior_predictions(spatialmqa_source(folder / "train.jsonl", None, part="train")[0].items,
                              items := spatialmqa_source(folder / "test.jsonl", None)[0].items)
    assert len(items) == 1076
    assert sum(p == i.gold for p, i in zip(found["majority"], items, strict=True)) == expected
    assert sum(p == i.gold for p, i in zip(found["per position"], items, strict=True)) == by_position


def test_the_command_audits_a_task_and_its_debiased_subset_restricts_a_source(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.benchmarks.commonsense import task_source
    from spatialprobe.cli import app
    from spatialprobe.engine.rebuild import rebuild_source, restrict
    from spatialprobe.engine.subset import read_subset
    from spatialprobe.tasks import data as task_data
    from spatialprobe.tasks.origin import builtin_source

    result = CliRunner().invoke(app, ["audit", "blind", "posrel", "--out", str(tmp_path / "a.json"),
                                      "--debias", str(tmp_path), "--step", "0.15"])
    assert result.exit_code == 0, result.output
    assert "| chance | 25.0 |" in result.output and "permutation guard" in result.output
    written = next(tmp_path.glob("subset-*.json"))
    record = read_subset(written)
    rounds = record["pruning"]["rounds"]
    assert len(record["keys"]) == rounds[-1]["items"] < 256 and "stop" in rounds[-1]
    removed = {key for r in rounds[:-1] for key, _ in r["removed"]}
    assert len(removed) + len(record["keys"]) == 256
    source = restrict(task_source(task_data.load("posrel"), builtin_source("posrel"), "none")[0], written)
    assert sorted(i.key for i in source.items) == sorted(record["keys"])
    assert {k for _, test in source.folds for k in test} <= set(record["keys"])
    again = rebuild_source(source.settings, 0)  # the subset is part of the recorded settings, applied on replay
    assert [i.key for i in again.items] == [i.key for i in source.items]
    written.write_text(written.read_text().replace(record["keys"][0], "posrel-x"))
    with pytest.raises(Exception, match="edited after it was written"):
        read_subset(written)


def test_vsr_items_asks_only_the_subset_and_a_replay_confirms_it(tmp_path):
    from typer.testing import CliRunner
    from vl_helpers import solid_image, tiny_clip

    from spatialprobe.benchmarks.vsr import vsr_source
    from spatialprobe.cli import app
    from spatialprobe.engine.subset import write_subset

    rows = [{"image": f"{n:012d}.jpg", "caption": f"The cat is {rel} the dog.", "label": n % 2, "relation": rel}
            for n, rel in enumerate(("left of", "on", "near"))]
    path = tmp_path / "vsr" / "random" / "test.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for r in rows:
        solid_image(tmp_path / "coco" / r["image"])
    source = vsr_source(path, None)[0]  # read without images, as the audit reads it
    subset = write_subset({"dataset": source.dataset, "keys": [source.items[1].key]}, tmp_path)
    args = ["vsr", "--model", str(tiny_clip(tmp_path / "clip")), "--data", str(tmp_path / "vsr"), "--images",
            str(tmp_path / "coco"), "--out", str(tmp_path / "run"), "--device", "cpu", "--items", str(subset)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["accuracy"]["n"] == 1
    assert json.loads((tmp_path / "run" / "config.json").read_text())["settings"]["source"]["items"]["n"] == 1
    again = CliRunner().invoke(app, ["run", str(tmp_path / "run" / "config.json")])
    assert again.exit_code == 0 and "confirmed: identity" in again.output, again.output


def test_metadata_that_names_the_answer_is_no_feature():
    """The size task's fact is (ant, smaller, bird): its relation is the gold, which no question
    states. A feature built from it would score 100 on random gold and pass the permutation guard
    (the replaced gold leaves the fact as it was); the audit reads only what a reader sees."""
    from spatialprobe.audit.features import objects_of, relation_of

    rng = np.random.default_rng(6)
    items = []
    for n in range(200):
        a, b = rng.choice(NAMES, 2, replace=False)
        gold = ("larger", "smaller")[int(rng.integers(2))]
        items.append(SourceItem(f"i{n}", f"Which is larger: the {a} or the {b}?", (f"The {a}", f"The {b}"),
                                ("larger", "smaller"), gold, f"img{n}.jpg", (str(a), str(b), f"img{n}.jpg"),
                                {"image": f"scene{n // 2}"}, fact=(str(a), gold, str(b))))
    assert relation_of(items[0]) == "-" and objects_of(items[0]) == list(items[0].fact[::2])  # no file name
    audit = audit_items(items, SPEC, folds=5, seed=0)
    assert audit.priors["per relation"].accuracy == audit.priors["majority"].accuracy
    for found in audit.classifiers.values():
        assert found.ci[0] < 50.0 < found.ci[1]
    stated = replace(items[0], question="Is the cat near the dog?", fields={"relation": "near"})
    assert relation_of(stated) == "near"  # a relation the question states (VSR's caption) is read
