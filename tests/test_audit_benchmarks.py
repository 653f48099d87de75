"""``spatialprobe audit blind NAME --data COPY`` on the benchmark modules (issue 32): each one's
items read text-only (no image looked for), and a planted shortcut - the gold option's text is
always ``left`` - found at exactly 100 by both classifiers, whatever the option order, on every
lettered benchmark (where the labels are letters, the option's text is what gives it away)."""

from __future__ import annotations

import json

import pytest
from audit_bench_data import PLANTED, planted_copy
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.files import read_json

runner = CliRunner()
UNIT = {"cv-bench": "images", "embspatial": "images", "spatialeval": "scenes"}


@pytest.mark.parametrize("name", PLANTED)
def test_a_planted_option_text_shortcut_is_found_on_every_lettered_benchmark(name, tmp_path):
    path, more = planted_copy(name, tmp_path / name)  # no image exists anywhere: the audit reads text only
    extra = [x for key, value in more.items() for x in (f"--{key}", value)]
    out = tmp_path / "a.json"
    result = runner.invoke(app, ["audit", "blind", name, "--data", str(path), "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    found = read_json(tmp_path / "a.json")
    assert found["n"] == 40 and found["chance"] == 50.0 and found["grouped_by"] == UNIT.get(name, "questions")
    assert {k: v["accuracy"] for k, v in found["classifiers"].items()} == {"logistic": 100.0, "forest": 100.0}
    assert found["guard"]["passed"]


def test_a_module_with_its_own_image_checks_reads_text_only(tmp_path):
    """COMFORT looks for each sweep's images itself, GenEval 2 needs its prompts' generated images:
    under the audit neither is looked for (GenEval 2's questions are read without --images)."""
    from spatialprobe.sources.files import text_only
    from spatialprobe.sources.rebuild import replay

    config = {"path_type": "rotate", "relation": "totheleft", "var_shape": "Sphere", "var_color": "red",
              "ref_shape": "Sphere", "ref_color": "blue", "mapping": {"0.png": 0, "1.png": 90, "2.png": 180}}
    (tmp_path / "left" / "default").mkdir(parents=True)
    (tmp_path / "left" / "default" / "config.json").write_text(json.dumps(config))
    (tmp_path / "geneval2_data.jsonl").write_text(json.dumps(
        {"prompt": "a cat to the left of a dog", "atom_count": 2, "vqa_list": [
            ["Are there any cats in the image?", "Yes"], ["Is the cat to the left of the dog?", "Yes"]],
         "skills": ["object", "position"]}) + "\n")
    with text_only():
        comfort = replay({"name": "comfort", "data": str(tmp_path)}, 0)
        geneval = replay({"name": "geneval2", "data": str(tmp_path / "geneval2_data.jsonl")}, 0)  # no --images
    assert len(comfort.items) == 3 and [i.gold for i in comfort.items] == ["yes", "no", "no"]
    assert [i.key for i in geneval.items] == ["p0.1"]  # its position atom (the default --option skills)
    with pytest.raises(Exception, match="not found"):  # outside the audit the images are required
        replay({"name": "comfort", "data": str(tmp_path)}, 0)


@pytest.mark.parametrize(("args", "refusal"), [
    (["size", "--split", "zeroshot"], "--split applies to vsr and the benchmark modules, not to size"),
    (["vsr", "--task", "posrel"], "--task applies to qa"),
    (["size", "--option", "a=b"], "--subset, --limit and --option apply to a benchmark module"),
    (["cv-bench"], "audit blind cv-bench needs --data"),
])
def test_a_setting_that_does_not_apply_to_the_benchmark_is_refused(args, refusal):
    result = runner.invoke(app, ["audit", "blind", *args])
    assert result.exit_code == 2 and refusal in result.output
