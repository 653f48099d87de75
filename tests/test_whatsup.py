"""What'sUp (spatialprobe/benchmarks/whatsup.py): the authors' files through the real loader and
``spatialprobe bench``, and its pair and set accuracy equal to the authors'
``Controlled_Images.evaluate_scores`` as transcribed in tests/official/whatsup.py on thousands of
random predictions."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from bench_a_helpers import a_llava
from mllm_helpers import SHARED
from official import whatsup as o_whatsup
from typer.testing import CliRunner
from vl_helpers import solid_image, tiny_clip

from spatialprobe.benchmarks.sentence_facts import stated_fact
from spatialprobe.benchmarks.whatsup import official_scores
from spatialprobe.cli import app
from spatialprobe.engine.rebuild import rebuild_source

A_SLOTS = {"on": "on", "under": "under", "left": "left_of", "right": "right_of"}
B_SLOTS = {"in-front": "in-front_of", "behind": "behind", "left": "left_of", "right": "right_of"}
WORDS = {"on": "on", "under": "under", "left": "to the left of", "right": "to the right of",
         "in-front": "in front of", "behind": "behind"}


def controlled(n_pairs, subset="A", rng=None, drop=0, repeat=0):
    """A controlled dataset: every object pair in its four images (``drop`` images removed and
    ``repeat`` repeated at random, the odd cases), each with its four captions, the right one first."""
    slots = A_SLOTS if subset == "A" else B_SLOTS
    folder = "controlled_images" if subset == "A" else "controlled_clevr"
    rows = []
    for k in range(n_pairs):
        a, b = f"mug{k}", f"plate-{k}"
        for slot, in_name in slots.items():
            others = [s for s in slots if s != slot]
            rows.append({"image_path": f"data/{folder}/{a}_{in_name}_{b}.jpeg",
                         "caption_options": [f"A {a} {WORDS[s]} a {b}" for s in (slot, *others)]})
    rng = rng or random.Random(0)
    for _ in range(drop):
        rows.pop(rng.randrange(len(rows)))
    for _ in range(repeat):
        rows.insert(rng.randrange(len(rows)), dict(rng.choice(rows)))
    return rows


@pytest.mark.parametrize("subset", ["A", "B"])
def test_pair_and_set_accuracy_equal_the_authors_on_random_predictions(subset):
    rng = np.random.default_rng(0)
    draws = 0
    for n_pairs, drop, repeat in [(1, 0, 0), (2, 0, 0), (5, 0, 0), (6, 1, 0), (6, 2, 1), (7, 0, 3)]:
        rows = controlled(n_pairs, subset, random.Random(n_pairs), drop, repeat)
        for _ in range(400):
            scores = rng.integers(0, 3, size=(len(rows), 1, 4)).astype(float)  # ties on purpose
            if rng.random() < 0.3:
                scores[:, 0, 0] += 5 * (rng.random(len(rows)) < 0.8)  # mostly right: whole sets count
            expected = o_whatsup.evaluate_scores(rows, scores, subset)[0]
            correct = np.argmax(scores[:, 0, :], axis=-1) == 0
            got = official_scores([r["image_path"] for r in rows], list(correct), f"controlled_{subset.lower()}")
            assert (got["individual"], got["pair"], got["set"]) == pytest.approx(expected, abs=1e-9)
            draws += 1
    assert draws == 2400


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return tiny_clip(tmp_path_factory.mktemp("clip"))


def _write_controlled(root, n_pairs=3):
    rows = controlled(n_pairs)
    for n, row in enumerate(rows):
        solid_image(root / row["image_path"], (30 * n % 255, 80, 200 - 10 * n))
    data = root / "controlled_images_dataset.json"
    data.write_text(json.dumps(rows))
    return data, rows


def test_bench_ranks_the_captions_with_clip_and_reports_the_authors_numbers(clip, tmp_path):
    data, rows = _write_controlled(tmp_path / "whatsup")
    out = tmp_path / "run"
    said = CliRunner().invoke(app, ["bench", "whatsup", "--model", str(clip), "--data", str(data), "--out", str(out)])
    assert said.exit_code == 0, said.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["details"]["wording"] == "contrastive" and summary["dataset"].startswith("whatsup-controlled_a@")
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    predictions.sort(key=lambda r: r["order"])
    scores = np.array([[r["scores"]] for r in predictions])  # the captions in the authors' order
    (individual, pair, set_), _ = o_whatsup.evaluate_scores(rows, scores, "A")
    reported = json.loads((out / "whatsup.json").read_text())["real"]
    assert reported == pytest.approx({"individual": individual, "pair": pair, "set": set_})
    assert summary["metrics"]["accuracy"]["mean"] == pytest.approx(individual)
    assert {r["pair"] for r in predictions} >= {"mug0|plate-0|lr", "mug0|plate-0|other"}
    recorded = json.loads((out / "config.json").read_text())["settings"]["source"]  # what `spatialprobe run` replays
    again = rebuild_source(recorded, 0)
    assert again.dataset == summary["dataset"] and [i.key for i in again.items] == [str(n) for n in range(len(rows))]


def test_the_lettered_order_is_drawn_per_item_and_the_subsets_are_read(tmp_path):
    data, rows = _write_controlled(tmp_path / "whatsup", n_pairs=6)
    source = rebuild_source({"name": "whatsup", "data": str(data)}, 0)
    gold_letters = [item.options.index(item.wording("contrastive").options[0]) for item in source.items]
    assert 0 < gold_letters.count(0) < len(rows)  # option A is right only sometimes
    assert all(item.labels[item.options.index(item.wording("contrastive").options[0])] == item.gold
               for item in source.items)
    official = rebuild_source({"name": "whatsup", "data": str(data), "options": {"order": "official"}}, 0)
    assert all(item.options[0] == row["caption_options"][0] for item, row in zip(official.items, rows, strict=True))
    assert source.variants == {"pair": "pair", "set": "set"} and source.spec.clusters == ("set",)
    # each item states its correct caption's fact: "A mug0 on a plate-0", "A mug0 under a plate-0", ...
    assert [i.fact for i in source.items[:4]] == [("mug0", "on", "plate-0"), ("mug0", "under", "plate-0"),
                                                  ("mug0", "to the left of", "plate-0"),
                                                  ("mug0", "to the right of", "plate-0")]
    # COCO-QA two objects: [image id, true caption, false caption], images val2017/{id:012d}.jpg
    coco = tmp_path / "coco_qa_two_obj.json"
    coco.write_text(json.dumps([[7, "A dog to the left of a cat", "A dog to the right of a cat"],
                                [9, "A cup above a table", "A cup below a table"]]))
    for image_id in (7, 9):
        solid_image(tmp_path / "val2017" / f"{image_id:012d}.jpg")
    qa = rebuild_source({"name": "whatsup", "data": str(coco), "images": str(tmp_path)}, 0)
    assert [(i.gold, i.fields["preposition"]) for i in qa.items] == [("left", "left"), ("above", "above")]
    assert [i.fact for i in qa.items] == [("dog", "to the left of", "cat"), ("cup", "above", "table")]
    one = tmp_path / "coco_qa_one_obj.json"  # one object: its caption relates it to no other object
    one.write_text(json.dumps([[7, "A photo of a dog on the left", "A photo of a dog on the right"]]))
    assert rebuild_source({"name": "whatsup", "data": str(one), "images": str(tmp_path)}, 0).items[0].fact is None
    assert stated_fact("A cup on a table under a lamp") is None  # two relations: ambiguous, no fact
    assert qa.variants == {} and qa.dataset.startswith("whatsup-coco_two@")


@pytest.mark.skipif(not (SHARED / "llava-1.5-7b-hf").is_dir(), reason="../shared/models (LLaVA processor) is absent")
def test_a_model_that_answers_a_scores_the_share_of_items_whose_caption_is_a(tmp_path):
    data, rows = _write_controlled(tmp_path / "whatsup", n_pairs=2)
    source = rebuild_source({"name": "whatsup", "data": str(data)}, 0)
    at_a = sum(item.labels[0] == item.gold for item in source.items)
    for order, expected in (("shuffled", 100 * at_a / len(rows)), ("official", 100.0)):
        out = tmp_path / order
        said = CliRunner().invoke(app, ["bench", "whatsup", "--model", str(a_llava()), "--data", str(data), "--out",
                                        str(out), "--protocol", "generate", "--max-new-tokens", "1",
                                        "--option", f"order={order}"])
        assert said.exit_code == 0, said.output
        assert json.loads((out / "summary.json").read_text())["metrics"]["accuracy"]["mean"] == pytest.approx(expected)
    assert 0 < at_a < len(rows)  # in the authors' order option A is always right; shuffled it is not
