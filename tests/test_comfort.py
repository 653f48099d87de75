"""COMFORT (spatialprobe/benchmarks/comfort.py): a small copy in its own layout (CONFIGURATION/
VARIATION/config.json + 0..36.png) through ``spatialprobe bench`` with a tiny LLaVA and through the
engine with a model whose P(yes) follows the cosine (a perfect sweep: error, symmetry and spread 0,
accuracy 100); the sweep metrics equal sled-group/COMFORT @f30830d
comfort_utils/{symmetry,smoothness,std,accuracy}_metric.py as transcribed in tests/official/comfort.py
on random sweeps."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import ClassVar

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from official import comfort as o_comfort

from spatialprobe.benchmarks import comfort


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    from PIL import Image

    root = tmp_path_factory.mktemp("comfort_ball")
    for variation in ("default", "color"):
        folder = root / "left" / variation
        folder.mkdir(parents=True)
        mapping = {}
        for step in range(37):
            Image.new("RGB", (8, 8), (step * 6, 0, 0)).save(folder / f"{step}.png")
            mapping[f"{step}.png"] = step * 10
        config = {"path_type": "rotate", "relation": "totheleft", "var_shape": "Sphere", "var_color": "red",
                  "ref_shape": "Sphere", "ref_color": "blue", "mapping": mapping}
        (folder / "config.json").write_text(json.dumps(config))
    return root


class Follower:
    """P(yes) = (cos(angle) + 1) / 2, reading the angle from the image's red channel (just under
    one half at 90° and 270°, where the cosine is 0 and the authors' ground truth is no)."""

    name = "follower"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("question",)

    def score(self, requests, progress=None):
        out = []
        for r in requests:
            angle = r.image.getpixel((0, 0))[0] / 6 * 10
            cosine = math.cos(angle / 180 * math.pi)
            p = 0.49 if abs(cosine) < 1e-9 else min(max((cosine + 1) / 2, 1e-12), 1 - 1e-12)  # 90, 270: no
            out.append((math.log(1 - p), math.log(p)))
        return out

    def describe(self):
        return {"model": "follower"}


def _source(copy, **options):
    return comfort.from_settings({"name": "comfort", "data": str(copy), "options": options}, 0)


def test_sweeps_read_with_their_question_gold_and_variants(copy):
    source = _source(copy)
    assert len(source.items) == 74 and source.variants == {"sweep": "sweep"}
    first = source.items[0]
    assert first.question == "Is the red sphere to the left of the blue sphere?"
    assert [i.gold for i in source.items[:10]] == ["yes"] * 9 + ["no"]  # cos > 0 below 90 degrees
    # the fact asked, in the camera's frame: true below 90 degrees, "not" at 90 (cos 0) and beyond
    assert (source.items[0].fact, source.items[9].fact) == (("red sphere", "to the left of", "blue sphere"),
                                                            ("red sphere", "not to the left of", "blue sphere"))
    assert {i.fact for i in _source(copy, frame="addressee").items} == {None}  # another frame: another relation
    from spatialprobe.errors import UsageError

    with pytest.raises(UsageError, match="--option frame=sideways is not one of"):
        _source(copy, frame="sideways")


def test_a_model_that_follows_the_cosine_has_a_perfect_sweep(copy, tmp_path):
    from spatialprobe.engine.run import ask_run
    from spatialprobe.runner.settings import Component

    summary = ask_run(_source(copy), Follower(), Component("fake", {"model": "follower"}), None, tmp_path / "run")
    assert summary["metrics"]["accuracy"]["mean"] == 100.0
    report = json.loads((tmp_path / "run" / "comfort.json").read_text())
    assert report["mean"]["cosine_error"] == pytest.approx(math.sqrt(2 * 0.01 ** 2 / 37), abs=1e-6)
    assert report["mean"]["symmetry"] == pytest.approx(0, abs=1e-9) and report["mean"]["accuracy"] == 1.0
    assert report["std"] == {"left": pytest.approx(0, abs=1e-12)}


def test_bench_with_a_tiny_llava(copy, tmp_path):
    from bench_helpers import yes_llava
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    llava = yes_llava()
    if llava is None:
        pytest.skip("../shared/models is not present")
    out = tmp_path / "run"
    said = CliRunner().invoke(app, ["bench", "comfort", "--data", str(copy), "--model", str(llava), "--out", str(out),
                                    "--device", "cpu", "--limit", "37"])
    assert said.exit_code == 0, said.output
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 37 and all(r["p_yes"] > 0.5 for r in rows)  # wired to say Yes
    summary = json.loads((out / "summary.json").read_text())
    # the yes share of the 36 scored images (0-80, 280-350): the 37th (360°, a repeat of 0°) is
    # dropped as the authors drop it
    assert summary["metrics"]["accuracy"]["mean"] == pytest.approx(100 * 17 / 36)
    report = json.loads((out / "comfort.json").read_text())
    assert list(report["sweeps"]) == ["left/color"]  # the first sweep in name order
    assert report["sweeps"]["left/color"]["smoothness"] is None  # a flat sweep: the authors divide by 0


LEFT = {"relation": "totheleft"}  # accuracy_metric only checks that the config names a relation


def test_sweep_metrics_equal_comforts_on_random_sweeps():
    rng = random.Random(0)
    angles = [10.0 * k for k in range(37)]
    for _ in range(200):
        frame = rng.choice(list(comfort.FRAMES))  # the same draw as a choice among the shifts
        shift = comfort.FRAMES[frame]
        sweeps = [[rng.random() for _ in range(37)] for _ in range(3)]
        if rng.random() < 0.2:  # a flat stretch and the last point equal to the first, as a full turn has
            sweeps[0][5:12] = [sweeps[0][5]] * 7
            sweeps[0][36] = sweeps[0][0]
        p = sweeps[0]
        data = [(a, {"Yes": v}) for a, v in zip(angles, p, strict=True)]
        assert comfort.symmetry(p) == pytest.approx(o_comfort.spatial_symmetry_metric(data))
        assert comfort.smoothness(p) == pytest.approx(o_comfort.smoothness_lowpass_metric(data))
        assert comfort.cosine_error(p, angles, shift) == pytest.approx(
            o_comfort.accuracy_metric(data, LEFT, frame, mode="normalize"))
        assert comfort.sweep_accuracy(p, angles, shift) == pytest.approx(
            o_comfort.accuracy_metric(data, LEFT, frame, mode="acc"))
        variations = [[(a, {"Yes": v}) for a, v in zip(angles, s, strict=True)] for s in sweeps]
        assert comfort.spread(sweeps) == pytest.approx(o_comfort.calculate_standard_deviation(variations))
