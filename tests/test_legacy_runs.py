"""Run folders written by the main branch before issue 28 (kinds vsr, spatialmqa, qa, ask) resume and
replay with this code: confirmed in place (the same identity, nothing computed) and reproduced
elsewhere with identical predictions.

The folders are written by tests/legacy_runs.py run with that older checkout (the environment
variable SPATIALPROBE_LEGACY_TREE names it; skipped where it is not there).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.files import read_jsonl

LEGACY = Path(os.environ.get("SPATIALPROBE_LEGACY_TREE", "/work/wt-legacy"))
pytestmark = pytest.mark.skipif(not (LEGACY / "spatialprobe" / "benchmarks" / "vsr.py").is_file(),
                                reason=f"no checkout of the pre-issue-28 main at {LEGACY} "
                                       "(set SPATIALPROBE_LEGACY_TREE)")


@pytest.fixture(scope="module")
def legacy(tmp_path_factory):
    root = tmp_path_factory.mktemp("legacy")
    env = {**os.environ, "PYTHONPATH": str(LEGACY), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(Path(__file__).parent / "legacy_runs.py"), str(root)],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
    return root


@pytest.mark.parametrize("kind", ["vsr", "spatialmqa", "qa", "ask"])
def test_a_legacy_run_folder_is_confirmed_in_place_and_reproduced_elsewhere(legacy, kind, tmp_path):
    run = legacy / "runs" / kind
    if not run.is_dir():
        pytest.skip("the ask folder needs ../shared/models (the genuine LLaVA processor files)")
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.suffix != ".lock"}
    predicted = _predictions(run)
    same = CliRunner().invoke(app, ["run", str(run / "config.json")])
    assert same.exit_code == 0, same.output
    assert "confirmed: identity" in same.output  # the same identity: resumed, nothing computed again
    assert _predictions(run) == predicted
    if kind != "ask":  # still replayed by their own kind: not a byte written
        assert {name: (run / name).read_bytes() for name in before} == before
    copy = CliRunner().invoke(app, ["run", str(run / "config.json"), "--out", str(tmp_path / "copy")])
    assert copy.exit_code == 0, copy.output
    assert _predictions(tmp_path / "copy") == predicted  # recomputed elsewhere: the same predictions


def _predictions(run: Path) -> list[tuple]:
    """(row key, prediction) of every row: an ask row gains the source's new fields (a VSR row its
    category), never another prediction."""
    rows = read_jsonl(run / "predictions.jsonl")
    return [(row.get("instance_id", row.get("id")), row.get("condition"), row.get("pred"),
             row.get("pred_likelihood"), row.get("pred_generate")) for row in rows]
