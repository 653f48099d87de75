"""Across stages: a masked-LM probe run and a judged image run in one report (the paper's Table 2)."""

import json

from judge_helpers import write_run
from typer.testing import CliRunner

from spatialprobe.cli import app

runner = CliRunner()


def test_probe_and_judge_runs_side_by_side(tmp_path):
    probe = runner.invoke(app, ["probe", "size", "--model", "dummy", "--candidates", "manual",
                                "--out", str(tmp_path / "probe")])
    assert probe.exit_code == 0, probe.output
    plan = [("larger", "larger", True), ("smaller", "smaller", True), ("larger", "smaller", True),
            ("smaller", "smaller", True)]
    write_run(tmp_path / "images", "size", plan)
    judged = runner.invoke(app, ["judge", "size", str(tmp_path / "images"), "--detector", "colour",
                                 "--depth", "colour", "--out", str(tmp_path / "judged")])
    assert judged.exit_code == 0, judged.output
    result = runner.invoke(app, ["report", "--out", str(tmp_path / "table.md")])  # every indexed run
    assert result.exit_code == 0, result.output
    lines = (tmp_path / "table.md").read_text().splitlines()
    # one row per run; a probe's accuracy and a judge's are not one column: a table each
    assert lines[0] == "| run | probe size acc | probe size macro-F1 |"
    probe_acc = json.loads((tmp_path / "probe" / "summary.json").read_text())["accuracy"]
    low, high = probe_acc["ci"]
    assert lines[2].startswith(f"| dummy [untrained] | {probe_acc['mean']:.1f} ± {probe_acc['std']:.1f} "
                               f"[{low:.1f}, {high:.1f}] |")
    # 3 of 4 images judged right; cluster-robust over its few objects (Wilson for the accuracy, the
    # macro-F1's t interval clipped to [0, 100])
    assert lines[3:7] == ["", "| run | judge size acc | judge size macro-F1 |", "|---|---|---|",
                          "| test:drawn-shapes [untrained] | 75.0 [10.5, 98.7] | 73.3 [0.0, 100.0] |"]
