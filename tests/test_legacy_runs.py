"""Run folders written by the main branch before issue 28 (kinds vsr, spatialmqa, qa, ask) resume and
replay with this code: confirmed in place (the same identity, nothing computed) and reproduced
elsewhere with identical predictions.

The folders are written by tests/legacy_runs.py run, in a subprocess, with the package as it was
at :data:`LEGACY_COMMIT` (main just before the engine merge), taken from this repository's own
history with ``git archive``: a fresh clone has it, so the test runs everywhere (skipped, with the
reason, only where git or that commit is not available).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.files import read_jsonl

LEGACY_COMMIT = "6125a7a"
"""main before issue 28's engine merge: its vsr, spatialmqa and qa commands wrote their own kinds."""
REPO = Path(__file__).resolve().parent.parent


def old_package(into: Path) -> Path:
    """The ``spatialprobe`` package of :data:`LEGACY_COMMIT`, extracted under ``into`` from this
    repository's history; the test is skipped, naming why, where git or the commit is missing."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the pre-change package cannot be taken from history")
    found = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{LEGACY_COMMIT}^{{commit}}"],
                           capture_output=True, check=False)
    if found.returncode != 0:
        pytest.skip(f"commit {LEGACY_COMMIT} is not in this clone's history (a shallow clone?)")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", LEGACY_COMMIT, "spatialprobe"],
                             capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


@pytest.fixture(scope="module")
def legacy(tmp_path_factory):
    root = tmp_path_factory.mktemp("legacy")
    tree = old_package(tmp_path_factory.mktemp("legacy-tree"))
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
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
