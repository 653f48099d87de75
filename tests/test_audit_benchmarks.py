"""``spatialprobe audit blind NAME --data COPY`` on every benchmark module, each on a
synthetic copy in its own file layout (``tests/audit_bench_data.py``) whose construction implies
the answer: a planted shortcut (the gold option's text always ``left``, the right caption alone
carrying a word, the head of a POSQA pair always the bigger) found at exactly 100 by both
classifiers; a constant gold (EWoK's ``matched``, GenEval 2's ``Yes``) scored 100 by the majority
prior; COMFORT's unchanging question scored exactly its majority share by every prior and
classifier. Each copy's items are read text-only (no image exists anywhere)."""

from __future__ import annotations

import json

import pytest
from audit_bench_data import MODULES, build
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.files import read_json

runner = CliRunner()
UNIT = {"viewspatial": "ScanNet scenes and COCO images", "mindcube": "multi-view image groups",
        "omnispatial": "images", "spatialscore": "image sets", "vsibench": "videos", "whatsup": "object pairs",
        "cv-bench": "images", "3dsrbench": "questions", "blink": "questions",
        "embspatial": "images", "site": "questions", "mmsi": "questions", "spatialeval": "scenes",
        "comfort": "sweeps", "posqa": "entity pairs", "ewok": "EWoK items", "geneval2": "prompts",
        "spatialgeneval": "prompts"}
"""Each module's declared cluster unit (its Resampling's ``unit``)."""


def test_every_registered_benchmark_module_has_a_copy():
    """Every source but the seed's tasks and the two real-file ones (audited in the first table)."""
    from spatialprobe import registry

    others = {"task", "qa", "vsr", "spatialmqa"}
    assert sorted(MODULES) == sorted(UNIT) == sorted(set(registry.names("source")) - others)


@pytest.mark.parametrize("name", MODULES)
def test_the_blind_audit_of_each_benchmark_module_gives_what_its_copy_implies(name, tmp_path):
    if name == "ewok":
        pytest.importorskip("pyzipper")
    copy = build(name, tmp_path / name)
    out = tmp_path / "audit.json"
    result = runner.invoke(app, ["audit", "blind", name, "--data", str(copy.path), "--out", str(out), *copy.args],
                           env=copy.env)
    assert result.exit_code == 0, result.output
    found = read_json(out)
    assert found["n"] == len(copy.options)
    assert found["chance"] == pytest.approx(100 * sum(1 / k for k in copy.options) / len(copy.options))
    assert found["grouped_by"] == UNIT[name] and found["folds"] == 5
    assert found["guard"]["passed"]
    scores = {**{k: v["accuracy"] for k, v in found["priors"].items()},
              **{k: v["accuracy"] for k, v in found["classifiers"].items()}}
    assert {k: scores[k] for k in copy.known} == copy.known, copy.why


def test_geneval2s_four_replies_are_two_answers_for_chance_and_the_guard(tmp_path):
    """``Yes``/``yes``/``No``/``no`` carry two labels: a uniform guess is right half the time, and the
    guard's shuffled gold is matched half the time, so at 200 prompts it passes (against a chance of
    1/4 it refused every GenEval 2 audit of this size)."""
    copy = build("geneval2", tmp_path / "g", 200)
    out = tmp_path / "audit.json"
    result = runner.invoke(app, ["audit", "blind", "geneval2", "--data", str(copy.path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    found = read_json(out)
    assert found["n"] == 200 and found["chance"] == 50.0 and found["guard"]["passed"]


def test_a_module_with_its_own_image_checks_reads_text_only(tmp_path):
    """COMFORT looks for each sweep's images itself, GenEval 2 needs its prompts' generated images:
    under the audit neither is looked for (GenEval 2's questions are read without --images)."""
    from spatialprobe.benchmarks.copy_images import text_only
    from spatialprobe.engine.rebuild import rebuild_source

    config = {"path_type": "rotate", "relation": "totheleft", "var_shape": "Sphere", "var_color": "red",
              "ref_shape": "Sphere", "ref_color": "blue", "mapping": {"0.png": 0, "1.png": 90, "2.png": 180}}
    (tmp_path / "left" / "default").mkdir(parents=True)
    (tmp_path / "left" / "default" / "config.json").write_text(json.dumps(config))
    (tmp_path / "geneval2_data.jsonl").write_text(json.dumps(
        {"prompt": "a cat to the left of a dog", "atom_count": 2, "vqa_list": [
            ["Are there any cats in the image?", "Yes"], ["Is the cat to the left of the dog?", "Yes"]],
         "skills": ["object", "position"]}) + "\n")
    with text_only():
        comfort = rebuild_source({"name": "comfort", "data": str(tmp_path)}, 0)
        geneval = rebuild_source({"name": "geneval2", "data": str(tmp_path / "geneval2_data.jsonl")}, 0)  # no --images
    assert len(comfort.items) == 3 and [i.gold for i in comfort.items] == ["yes", "no", "no"]
    assert [i.key for i in geneval.items] == ["p0.1"]  # its position atom (the default --option skills)
    with pytest.raises(Exception, match="not found"):  # outside the audit the images are required
        rebuild_source({"name": "comfort", "data": str(tmp_path)}, 0)


@pytest.mark.parametrize(("args", "refusal"), [
    (["size", "--split", "zeroshot"], "--split applies to vsr and the benchmark modules, not to size"),
    (["vsr", "--task", "posrel"], "--task applies to qa"),
    (["size", "--option", "a=b"], "--subset, --limit and --option apply to a benchmark module"),
    (["cv-bench"], "audit blind cv-bench needs --data"),
])
def test_a_setting_that_does_not_apply_to_the_benchmark_is_refused(args, refusal):
    result = runner.invoke(app, ["audit", "blind", *args])
    assert result.exit_code == 2 and refusal in result.output
