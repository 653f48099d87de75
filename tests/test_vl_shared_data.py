"""The public VSR and SpatialMQA files in ../shared/data load whole, with the released counts."""

from __future__ import annotations

import pytest
from vl_helpers import shared_dir

from spatialprobe.datasets.spatialmqa import extra_key_report, load_spatialmqa
from spatialprobe.datasets.vsr import load_vsr, negate_caption, relations

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
