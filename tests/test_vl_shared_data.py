"""The public VSR and SpatialMQA files in ../shared/data load whole, with the released counts."""

from __future__ import annotations

import pytest
from vl_helpers import shared_dir

from spatialprobe.benchmarks.spatialmqa import extra_key_report, load_spatialmqa
from spatialprobe.benchmarks.vsr import load_vsr, negate_caption, relations

DATA = shared_dir() / "data"
VSR_COUNTS = {("random", "train"): 7680, ("random", "dev"): 1097, ("random", "test"): 2195,
              ("zeroshot", "train"): 3489, ("zeroshot", "dev"): 340, ("zeroshot", "test"): 1222}
MQA_COUNTS = {"train": 3780, "dev": 536, "test": 1076}


@pytest.mark.skipif(not (DATA / "vsr").is_dir(), reason="../shared/data/vsr not present")
@pytest.mark.parametrize("split, part", sorted(VSR_COUNTS))
def test_vsr_splits_load_whole(split, part):
    rows = load_vsr(DATA / "vsr", split, part)
    assert len(rows) == VSR_COUNTS[(split, part)]
    assert len({r.id for r in rows}) == len(rows)
    assert all(r.relation in relations() for r in rows)
    assert all(negate_caption(r.caption, r.relation) != r.caption for r in rows)
    if split == "zeroshot":
        assert all(r.subj and r.obj for r in rows)


@pytest.mark.skipif(not (DATA / "vsr").is_dir(), reason="../shared/data/vsr not present")
def test_vsr_uses_66_of_the_71_relations():
    used = {r.relation for s, p in VSR_COUNTS for r in load_vsr(DATA / "vsr", s, p)}
    assert len(used) == 66 and used <= set(relations())


@pytest.mark.skipif(not (DATA / "spatialmqa").is_dir(), reason="../shared/data/spatialmqa not present")
def test_spatialmqa_splits_load_whole():
    loaded = {part: load_spatialmqa(DATA / "spatialmqa", part) for part in MQA_COUNTS}
    assert {p: len(rows) for p, rows in loaded.items()} == MQA_COUNTS
    assert list(extra_key_report(loaded["train"])) == [",answer"]
    test = loaded["test"]
    assert {r.axis for r in test} == {"x", "y", "z"}
    by_perspective = {k: sum(r.perspective == k for r in test) for k in ("outside", "first", "third")}
    assert by_perspective["outside"] == 452  # the authors' rule-1 file holds 452 test questions
    assert sum(by_perspective.values()) == 1076


class LetterReplier:
    """Replies to every SpatialMQA question with one letter: the gold option's, or a fixed one."""

    name = "letters"
    protocols = ("generate",)

    def __init__(self, letter_of):
        self.letter_of = letter_of

    def generate(self, requests, progress=None):
        return [self.letter_of(r.prompt) for r in requests]


@pytest.mark.skipif(not (DATA / "spatialmqa").is_dir(), reason="../shared/data/spatialmqa not present")
def test_spatialmqa_official_metrics_grade_a_letter_reply_as_the_option_it_names(tmp_path):
    """The question wording asks for the option's letter: a model that gives the gold option's letter
    scores 100 on the official lenient and strict accuracy of the test split (graded as raw text, as
    before this was fixed, it scored 40.0 and 0.0 on the whole split), and one that always says B
    scores exactly the share of questions whose option B is the gold. Asked without images, the 62
    questions whose wording repeats with another gold (about another image) are left out: the
    replier sees only the text."""
    from collections import Counter

    from spatialprobe.benchmarks.spatialmqa import spatialmqa_source
    from spatialprobe.engine.rebuild import restrict
    from spatialprobe.engine.run import ask_run
    from spatialprobe.engine.subset import write_subset
    from spatialprobe.runner.settings import Component

    source, _ = spatialmqa_source(DATA / "spatialmqa" / "test.jsonl", None)
    golds = Counter((item.question, item.gold) for item in source.items)
    asked = Counter(item.question for item in source.items)
    unique = [item for item in source.items if golds[item.question, item.gold] == asked[item.question]]
    assert (len(source.items), len(unique)) == (1076, 1014)
    source = restrict(source, write_subset({"dataset": source.dataset, "keys": [i.key for i in unique]}, tmp_path))
    by_prompt = {item.question: chr(65 + item.options.index(item.gold)) for item in unique}
    share_b = 100 * sum(item.options[1] == item.gold for item in unique) / len(unique)
    for name, letter_of, expected in (("gold", by_prompt.__getitem__, 100.0), ("b", lambda _: "B", share_b)):
        summary = ask_run(source, LetterReplier(letter_of), Component("fake", {"model": "letters"}), None,
                          tmp_path / name, protocol="generate", condition="none")
        metrics = summary["metrics"]
        assert metrics["accuracy"]["n"] == 1014
        assert metrics["accuracy"]["mean"] == metrics["strict_accuracy"]["mean"] == pytest.approx(expected)
