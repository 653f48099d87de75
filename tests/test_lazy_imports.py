"""Which heavy libraries a command imports: each command runs in a fresh interpreter (the way the
console script runs it) and the modules it loaded are read from ``sys.modules`` at its end.

``--help``, ``ls``, the main job (``probe size --model dummy``), ``report``, ``compare``, ``export``
and ``import`` never import torch or transformers; ``--help`` not even numpy; the main job none of
scikit-learn, pandas, statsmodels, matplotlib, Pillow or ``scipy.stats`` (bench/main_job.py times it)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODEL = ("torch", "transformers", "datasets", "diffusers", "tokenizers", "safetensors", "huggingface_hub", "ray")
"""What only a real model (or a hub copy, or a cluster) needs."""
STATISTICS = ("sklearn", "pandas", "pyarrow", "statsmodels", "matplotlib", "PIL", "scipy.stats")
"""What some outputs need but the main job does not."""

RUN_AND_LIST = """
import json, sys
from spatialprobe.cli import main
sys.argv = ["spatialprobe", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as end:
    code = end.code or 0
else:
    code = 0
found = sorted(m for m in sys.modules if "." not in m or m == "scipy.stats")
print("\\n" + json.dumps({"code": code, "modules": found}))
"""


def loaded(*argv: str, cwd: Path | None = None) -> set[str]:
    """The top-level modules (and ``scipy.stats``) the command ``spatialprobe ARGV`` loaded; it must succeed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", RUN_AND_LIST, json.dumps(list(argv))], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last["code"] == 0, done.stdout + done.stderr
    return set(last["modules"])


def test_help_imports_no_model_library_and_not_even_numpy():
    modules = loaded("--help")
    assert not modules & {*MODEL, *STATISTICS, "numpy", "scipy"}, modules & {*MODEL, *STATISTICS, "numpy", "scipy"}
    assert not loaded("bench", "--help") & {*MODEL, "numpy"}


@pytest.fixture(scope="module")
def dummy_runs(tmp_path_factory):
    """Two main-job runs (seeds 0 and 1) and what the first one loaded."""
    work = tmp_path_factory.mktemp("main-job")
    first = loaded("probe", "size", "--model", "dummy", "--out", str(work / "a"))
    loaded("probe", "size", "--model", "dummy", "--scorer-arg", "seed=1", "--out", str(work / "b"))
    return work, first


def test_the_main_job_imports_no_model_library_and_no_statistics_it_does_not_compute(dummy_runs):
    _, modules = dummy_runs
    assert not modules & {*MODEL, *STATISTICS}, modules & {*MODEL, *STATISTICS}


def test_reading_and_comparing_runs_imports_no_model_library(dummy_runs, tmp_path):
    work, _ = dummy_runs
    for argv in (["ls"], ["report", str(work / "a")], ["report", str(work / "a"), str(work / "b")],
                 ["compare", str(work / "a"), str(work / "b"), "--out", str(tmp_path / "cmp")],
                 ["export", str(work / "a"), "--format", "csv", "--out", str(tmp_path / "items.csv")]):
        assert not loaded(*argv) & set(MODEL), argv


def test_importing_another_harness_log_imports_no_model_library(tmp_path):
    records = [{"id": f"q{k}", "output": "yes" if k % 3 else "no", "answer": "yes"} for k in range(6)]
    (tmp_path / "preds.json").write_text(json.dumps({"predictions": records}), encoding="utf-8")
    modules = loaded("import", "plain", str(tmp_path / "preds.json"), "--records", "predictions", "--id", "id",
                     "--prediction", "output", "--gold", "answer", "--model", "paper-model", "--benchmark", "toy",
                     "--out", str(tmp_path / "imported"))
    assert not modules & set(MODEL), modules & set(MODEL)
