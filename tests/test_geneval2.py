"""GenEval 2 (spatialprobe/benchmarks/geneval2.py): a small ``geneval2_data.jsonl`` and its images
given as GenEval 2's own ``{prompt: image}`` JSON, through ``spatialprobe bench`` with a tiny
LLaVA and through the engine with a judge whose probabilities are known; Soft-TIFA AM and GM equal
a transcription of facebookresearch/GenEval2 @a6e82d2 (evaluation.py, soft_tifa_analysis.py) on
random atom scores."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import ClassVar

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spatialprobe.benchmarks.geneval2 import from_settings, geometric_means

DATA = [
    {"prompt": "a cat to the left of a dog", "atom_count": 3,
     "vqa_list": [["Are there any cats in the image?", "Yes"], ["Is the cat to the left of the dog?", "Yes"],
                  ["Are there any dogs in the image?", "Yes"]], "skills": ["object", "position", "object"]},
    {"prompt": "a cup above a bowl and a spoon below the bowl", "atom_count": 5,
     "vqa_list": [["Is the cup above the bowl?", "Yes"], ["Is the spoon below the bowl?", "Yes"],
                  ["How many cups are in the image?", "one"]], "skills": ["position", "position", "count"]},
    {"prompt": "two red apples", "atom_count": 3, "vqa_list": [["How many apples are in the image?", "two"]],
     "skills": ["count"]},
    {"prompt": "a bird below a plane", "atom_count": 3, "vqa_list": [["Is the bird below the plane?", "Yes"]],
     "skills": ["position"]},
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from PIL import Image

    root = tmp_path_factory.mktemp("geneval2")
    (root / "geneval2_data.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DATA))
    (root / "images").mkdir()
    mapping = {}
    for n, d in enumerate(DATA[:3]):  # the last prompt has no image: left out and counted
        Image.new("RGB", (32, 32), (60 * n, 0, 0)).save(root / "images" / f"{n}.png")
        mapping[d["prompt"]] = f"images/{n}.png"
    (root / "images.json").write_text(json.dumps(mapping))
    return root


class Judge:
    """Puts probability ``p`` on "Yes", 0.1 on "yes", 0.05 on each "No"/"no", whatever it sees."""

    name = "judge"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("question",)
    p = 0.7

    def score(self, requests, progress=None):
        mass = {"Yes": self.p, "yes": 0.1, "No": 0.05, "no": 0.05}
        return [tuple(math.log(mass[o]) for o in r.options) for r in requests]

    def describe(self):
        return {"model": "judge"}


def _source(files, **options):
    return from_settings({"name": "geneval2", "data": str(files / "geneval2_data.jsonl"),
                   "images": str(files / "images.json"), "options": options}, 0)


def test_position_atoms_of_prompts_with_images_and_their_facts(files):
    source = _source(files)
    assert [i.key for i in source.items] == ["p0.1", "p1.0", "p1.1"]
    assert source.items[0].fact == ("cat", "to the left of", "dog")
    assert source.details["prompts_without_images"] == 1
    assert Path(source.items[0].image).is_file()
    both = _source(files, skills="position,object")
    assert len(both.items) == 5


def test_a_known_judge_gives_the_soft_tifa_it_puts_on_yes(files, tmp_path):
    from spatialprobe.engine.run import ask_run
    from spatialprobe.runner.settings import Component

    summary = ask_run(_source(files), Judge(), Component("fake", {"model": "judge"}), None, tmp_path / "run")
    m = summary["metrics"]
    assert m["accuracy"]["mean"] == 100.0 and m["soft_tifa_am"]["mean"] == pytest.approx(80.0)
    written = json.loads((tmp_path / "run" / "geneval2.json").read_text())
    assert written["soft_tifa_gm"] == pytest.approx(80.0) and written["prompts"] == 2


def test_bench_with_a_tiny_llava_judge(files, tmp_path):
    from bench_helpers import yes_llava
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    llava = yes_llava()
    if llava is None:
        pytest.skip("../shared/models is not present")
    out = tmp_path / "run"
    said = CliRunner().invoke(app, ["bench", "geneval2", "--data", str(files / "geneval2_data.jsonl"),
                                    "--images", str(files / "images.json"), "--model", str(llava),
                                    "--out", str(out), "--device", "cpu"])
    assert said.exit_code == 0, said.output
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [r["pred"] for r in rows] == ["yes"] * 3  # a judge wired to say Yes affirms every atom
    summary = json.loads((out / "summary.json").read_text())
    mean = sum(r["atom_score"] for r in rows) / 3
    assert summary["metrics"]["soft_tifa_am"]["mean"] == pytest.approx(mean) and mean > 50


def _official(all_score_lists, all_skill_lists):
    """facebookresearch/GenEval2 @a6e82d2: soft_tifa_analysis.py per_skill_analysis (position) and
    evaluation.py main's soft_tifa_gm total, transcribed."""
    from scipy.stats import gmean

    position_score, position_total = 0, 0
    for score_list, skill_list in zip(all_score_lists, all_skill_lists, strict=True):
        for i in range(len(score_list)):
            if skill_list[i] == 'position':
                position_score += score_list[i]
                position_total += 1
    per_prompt_scores = [gmean(s) for s in all_score_lists]
    return 100 * position_score / position_total, 100 * sum(per_prompt_scores) / len(per_prompt_scores)


def test_soft_tifa_am_and_gm_equal_geneval2s_on_random_atom_scores(files):
    from spatialprobe.engine.metrics import official_metrics

    source = _source(files)
    declared = tuple(o for o in source.official if "soft_tifa_am" in o.metrics)
    rng = random.Random(0)
    for _ in range(500):
        masses = {i.key: rng.choice([0.0, rng.random()]) if rng.random() < 0.1 else rng.random() for i in source.items}
        rows = [{"instance_id": i.key, "gold": i.gold, "prompt": i.fields["prompt"], "skill": i.fields["skill"],
                 "atom_score": 100 * masses[i.key]} for i in source.items]
        am = official_metrics(rows, source.spec, declared)[0]["soft_tifa_am"].mean
        lists = [[masses["p0.1"]], [masses["p1.0"], masses["p1.1"]]]
        want_am, want_gm = _official(lists, [["position"], ["position", "position"]])
        assert am == pytest.approx(want_am) and geometric_means(rows) == pytest.approx(want_gm)
