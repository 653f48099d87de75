"""3DSRBench (spatialprobe/benchmarks/threedsrbench.py): a VLMEvalKit-style TSV through the real
loader and ``spatialprobe bench``; vanilla, flip, circular and flip+circular accuracy equal to a
transcription of VLMEvalKit's ``_3DSRBench.evaluate`` (open-compass/VLMEvalKit @e8e78f0
``vlmeval/dataset/image_mcq.py`` l. 2662 on) and the circular accuracy of the authors' script
(johnson111788/SpatialReasoner @90eeb8e ``src/eval/compute_3dsrbench_results.py``) on thousands
of random predictions, ``-flip`` ids included."""
# ruff: noqa: B905, C414, C416, SIM108  (the official functions are transcribed as written)

from __future__ import annotations

import base64
import copy as cp
import csv
import json
import random

import numpy as np
import pandas as pd
import pytest
from bench_a_helpers import bench_a, needs_a_llava
from vl_helpers import solid_image

from spatialprobe.benchmarks.threedsrbench import official_scores
from spatialprobe.engine.rebuild import rebuild_source


def report_acc_overall(df):
    """VLMEvalKit's report_acc, its Overall (no split column): the mean hit."""
    return np.mean(df["hit"])


def vlmevalkit_evaluate(data):
    """Transcribed from _3DSRBench.evaluate (VLMEvalKit @e8e78f0 vlmeval/dataset/image_mcq.py)."""
    acc_map = {}
    acc_map['vanilla'] = report_acc_overall(data)
    qid2key = {x: x.replace('-flip', '') for x in data['qid']}
    key_set = set(list(qid2key.values()))
    main = cp.deepcopy(data[data['qid'].isin(key_set)])
    hit_map = {x: y for x, y in zip(main['qid'], main['hit'])}
    for x, y in zip(data['qid'], data['hit']):
        hit_map[qid2key[x]] *= y
    main['hit'] = [hit_map[x] for x in main['qid']]
    acc_map['flip_eval'] = report_acc_overall(main)
    qid2key = {x: x[:8] if '-flip' not in x else x[:13] for x in data['qid']}
    key_set = set(list(qid2key.values()))
    main = cp.deepcopy(data[data['qid'].isin(key_set)])
    hit_map = {x: y for x, y in zip(main['qid'], main['hit'])}
    for x, y in zip(data['qid'], data['hit']):
        hit_map[qid2key[x]] *= y
    main['hit'] = [hit_map[x] for x in main['qid']]
    acc_map['circ_eval'] = report_acc_overall(main)
    qid2key = {x: x[:8] for x in data['qid']}
    key_set = set(list(qid2key.values()))
    main = cp.deepcopy(data[data['qid'].isin(key_set)])
    hit_map = {x: y for x, y in zip(main['qid'], main['hit'])}
    for x, y in zip(data['qid'], data['hit']):
        hit_map[qid2key[x]] *= y
    main['hit'] = [hit_map[x] for x in main['qid']]
    acc_map['flip_circ_eval'] = report_acc_overall(main)
    return acc_map


def authors_circular(qids, hits):
    """Transcribed from compute_3dsrbench_results.py (SpatialReasoner @90eeb8e): row[1] the qid, row[12] the hit."""
    results = {}
    for q, h in zip(qids, hits):
        if q[-2] == '-':
            qid = q[:-2]
        else:
            qid = q
        if qid in results:
            results[qid][0] = results[qid][0] * h
        else:
            results[qid] = [h, None]
    return np.mean([results[k][0] for k in results])


def qids(n_base, rng):
    """Base questions of 8 characters, 2 or 4 rotations each, about half also flipped (-flip, -flip-N)."""
    out = []
    for b in range(n_base):
        base = f"Q{b:03d}ABCD"[:8]
        rotations = rng.choice([2, 4])
        for flip in ([""] + (["-flip"] if rng.random() < 0.5 else [])):
            out += [f"{base}{flip}"] + [f"{base}{flip}-{k}" for k in range(1, rotations)]
    rng.shuffle(out)
    return out


@pytest.mark.parametrize("n_base", [1, 3, 12])
def test_strict_accuracies_equal_vlmevalkit_and_the_authors_on_random_predictions(n_base):
    rng = random.Random(n_base)
    ids = qids(n_base, rng)
    for _ in range(350):
        p = rng.random()
        hits = [int(rng.random() < p) for _ in ids]
        expected = vlmevalkit_evaluate(pd.DataFrame({"qid": ids, "hit": hits}))
        got = official_scores(ids, [bool(h) for h in hits])
        assert [got["vlmevalkit"][k] for k in ("vanilla", "flip", "circular", "flip_circular")] == pytest.approx(
            [100 * expected[k] for k in ("vanilla", "flip_eval", "circ_eval", "flip_circ_eval")], abs=1e-9)
        assert got["authors"]["circular"] == pytest.approx(100 * authors_circular(ids, hits), abs=1e-9)


def _tsv(root, rng, n_base=5):
    """A VLMEvalKit-style TSV: base64 images, repeats shortened to the index of the row holding one."""
    image = base64.b64encode(solid_image(root / "scene.png", size=16).read_bytes()).decode()
    rows = []
    for n, qid in enumerate(qids(n_base, rng)):
        two = n % 3 == 0
        rows.append({"index": n, "qid": qid, "question": f"Is the chair {n} higher?", "A": "yes", "B": "no",
                     "C": "" if two else "maybe", "D": "" if two else "unknown",
                     "answer": rng.choice("AB" if two else "ABCD"), "category": "height_higher",
                     "image": image if n == 0 else "0", "image_url": "http://example.org/scene.png"})
    path = root / "3DSRBench.tsv"
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    return path, rows


def test_the_tsv_is_read_with_its_groups_and_the_authors_grouping(tmp_path):
    path, rows = _tsv(tmp_path, random.Random(1))
    source = rebuild_source({"name": "3dsrbench", "data": str(path)}, 0)
    assert [i.gold for i in source.items] == [r["answer"] for r in rows]
    assert all(len(i.options) == (2 if r["C"] == "" else 4) for i, r in zip(source.items, rows, strict=True))
    assert len({i.image for i in source.items}) == 1 and source.variants["circular"] == "circular"
    flipped = next(i for i in source.items if "-flip-" in i.fields["qid"])
    assert flipped.fields["circular"] == flipped.fields["qid"][:13] and flipped.fields["flip_circular"] == \
        flipped.fields["qid"][:8]
    authors = rebuild_source({"name": "3dsrbench", "data": str(path), "options": {"grouping": "authors"}}, 0)
    assert all(i.fields["circular"] == i.fields["qid"].rsplit("-", 1)[0] if i.fields["qid"][-2] == "-"
               else i.fields["circular"] == i.fields["qid"] for i in authors.items)


@needs_a_llava
def test_a_model_that_answers_a_scores_the_a_share_and_its_strict_accuracies(tmp_path):
    path, rows = _tsv(tmp_path, random.Random(2), n_base=2)
    out = tmp_path / "run"
    metrics = bench_a("3dsrbench", path, out)
    hits = [r["answer"] == "A" for r in rows]
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * sum(hits) / len(rows))
    reported = json.loads((out / "3dsrbench.json").read_text())["real"]
    assert reported == official_scores([r["qid"] for r in rows], hits)
