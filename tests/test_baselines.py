"""Blind baselines: the answer prior, the vision gain (paired), and the shuffled-image partners."""

from __future__ import annotations

import pytest

from spatialprobe.errors import UsageError
from spatialprobe.image_conditions import check_condition, shuffled_partners
from spatialprobe.metrics.baselines import answer_prior, majority_label, vision_gain
from spatialprobe.metrics.intervals import Resampling


def test_answer_prior_is_the_share_of_the_training_majority_among_test_rows():
    prior = answer_prior(["yes", "yes", "no"], ["yes", "no", "no", "no"])
    assert prior == {"label": "yes", "accuracy": 25.0, "n": 4}


def test_majority_ties_follow_the_task_label_order_not_hashing():
    assert majority_label(["b", "a"], order=("a", "b")) == "a"
    assert majority_label(["b", "a"], order=("b", "a")) == "b"
    assert majority_label(["b", "a"]) == "b"  # no order: the first seen
    with pytest.raises(UsageError):
        majority_label([])


def _rows(preds, golds, images):
    return [{"instance_id": f"q{n}", "image": img, "gold": g, "pred": p}
            for n, (p, g, img) in enumerate(zip(preds, golds, images, strict=True))]


SPEC = Resampling(("True", "False"), ("image",), key=("instance_id",), unit="images", pooled=True)
GOLD = ["True", "False"] * 10
IMAGES = [f"img{n // 2}.jpg" for n in range(20)]  # two captions per image, 10 images


def test_a_model_that_sees_scores_100_real_and_50_blind_so_its_gain_is_50_and_excludes_0():
    real = _rows(GOLD, GOLD, IMAGES)                     # right on every item with the image
    blind = _rows(["True"] * 20, GOLD, IMAGES)           # blind: always the first answer
    gain = vision_gain(real, blind, SPEC, resamples=200)
    acc = gain["accuracy"]
    assert (acc["real"], acc["blind"], acc["gain"]) == (100.0, 50.0, 50.0)
    # every image holds one True and one False caption: the blind half is exactly 50 in every resample
    assert acc["ci"] == [50.0, 50.0]
    assert acc["p"] < 0.05 and acc["significant"]


def test_a_blind_model_has_a_gain_of_exactly_0_with_an_interval_around_it():
    preds = ["True", "True", "False", "True"] * 5
    gain = vision_gain(_rows(preds, GOLD, IMAGES), _rows(preds, GOLD, IMAGES), SPEC, resamples=200)
    acc = gain["accuracy"]
    assert acc["gain"] == 0.0 and acc["ci"] == [0.0, 0.0] and acc["p"] == 1.0
    assert not acc["significant"]


def test_the_gain_refuses_rows_of_different_items():
    with pytest.raises(UsageError, match="not the same items"):
        vision_gain(_rows(GOLD, GOLD, IMAGES), _rows(GOLD[:-1], GOLD[:-1], IMAGES[:-1]), SPEC)


OBJECTS = {"p1": ["dog", "cat"], "p2": ["cat", "car"], "p3": ["car", "bus"], "p4": ["tree", "dog"],
           "p5": ["bird", "boat"]}


def test_shuffled_partners_never_show_an_object_of_the_item_and_do_not_depend_on_order():
    partners = shuffled_partners(OBJECTS, seed=0)
    for key, other in partners.items():
        assert other != key
        assert not set(OBJECTS[key]) & set(OBJECTS[other])
    reordered = dict(reversed(list(OBJECTS.items())))
    assert shuffled_partners(reordered, seed=0) == partners
    seeds = {tuple(sorted(shuffled_partners(OBJECTS, seed=s).items())) for s in range(8)}
    assert len(seeds) > 1  # the seed changes the choice


def test_an_item_sharing_an_object_with_every_other_has_no_blind_partner():
    with pytest.raises(UsageError, match="'a' shares an object with every other item"):
        shuffled_partners({"a": ["dog", "cat"], "b": ["dog"], "c": ["Cat"]})


def test_unknown_condition_is_one_sentence():
    assert check_condition("shuffled") == "shuffled"
    with pytest.raises(UsageError, match="must be one of real, blank, none, shuffled"):
        check_condition("dark")
