"""SITE (spatialprobe/benchmarks/site.py): its records with single- and multi-image items through
the real loader and ``spatialprobe bench``; accuracy and the chance-adjusted accuracy equal to SITE's
own scoring (``spatial_process_results`` / ``spatial_aggregate_results`` as transcribed in
tests/official/site.py; lmms-eval's ``tasks/sitebench/utils.py`` carries the same two functions, only
its category names differ, which never moves the overall figure compared here) on thousands of
random predictions, each a bare letter the transcribed parser reads as itself."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from bench_a_helpers import bench_a, needs_a_llava
from official import site as o_site
from vl_helpers import solid_image

from spatialprobe.benchmarks.site import matching
from spatialprobe.engine.rebuild import rebuild_source
from spatialprobe.metrics.weighted import STATISTICS


def _records(root, n=9, seed=0):
    rng = random.Random(seed)
    for name, color in (("a.png", (200, 0, 0)), ("b.png", (0, 0, 200))):
        solid_image(root / "images" / name, color, size=16)
    rows = []
    for k in range(n):
        options = [f"choice {j}" for j in range(rng.choice([2, 3, 4, 5]))]
        multi = k % 3 == 0
        rows.append({"id": f"site-{k}", "question": ("<image><image> " if multi else "") + f"Where is it {k}?",
                     "options": options, "answer": chr(65 + rng.randrange(len(options))),
                     "category": "multi-view & cross-image reasoning" if multi else "spatial relationship reasoning",
                     "dataset": "mvdata" if multi else "single", "visual": ["a.png", "b.png"] if multi else ["a.png"]})
    (root / "site.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_the_chance_adjusted_accuracy_equals_sites_on_random_predictions(tmp_path):
    rows = _records(tmp_path, n=23)
    source = rebuild_source({"name": "site", "data": str(tmp_path / "site.jsonl"),
                             "images": str(tmp_path / "images")}, 0)
    assert [len(i.views) for i in source.items] == [1 if k % 3 == 0 else 0 for k in range(23)]
    rng = np.random.default_rng(0)
    for _ in range(2000):
        picks = [chr(65 + int(rng.integers(len(r["options"])))) for r in rows]
        done = [o_site.spatial_process_results(r, [p], o_site.NoDraw()) for r, p in zip(rows, picks, strict=True)]
        values = np.array([matching(i, None, p)["site_value"] for i, p in zip(source.items, picks, strict=True)])
        ours = STATISTICS["mean"](np.zeros(len(values)), values, np.ones((1, len(values))), 0)[0]
        assert round(ours, 5) == pytest.approx(
            o_site.spatial_aggregate_results([d["chance_adjusted_acc"] for d in done]), abs=1e-5)


@needs_a_llava
def test_a_model_that_answers_a_scores_the_a_share(tmp_path):
    rows = _records(tmp_path, n=6, seed=1)
    out = tmp_path / "run"
    metrics = bench_a("site", tmp_path / "site.jsonl", out, "--images", str(tmp_path / "images"))
    done = [o_site.spatial_process_results(r, ["A"], o_site.NoDraw()) for r in rows]
    assert metrics["accuracy"]["mean"] == pytest.approx(o_site.spatial_aggregate_results([d["accuracy"] for d in done]))
    assert metrics["chance_adjusted_accuracy"]["mean"] == pytest.approx(
        o_site.spatial_aggregate_results([d["chance_adjusted_acc"] for d in done]), abs=1e-5)
