import os
import shutil
import tempfile
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
USER_HOME = Path(os.environ.get("SPATIALPROBE_HOME", Path.home() / ".spatialprobe"))
"""The run index of the user running the suite: no test may write there."""
SESSION_HOME = Path(tempfile.mkdtemp(prefix="spatialprobe-tests-home-"))
"""The suite's own home from the session's start: where runs made by module- and session-scoped
fixtures (which run before any function-scoped fixture) are indexed."""


def pytest_configure(config):
    """Isolate the run index before any fixture runs (``_isolated_home`` is per test, and module-
    and session-scoped fixtures run before it), and keep the hub offline."""
    os.environ["SPATIALPROBE_HOME"] = str(SESSION_HOME)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_unconfigure(config):
    shutil.rmtree(SESSION_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Runs are indexed in a per-test home, never in the user's ~/.spatialprobe."""
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def shared_dir():
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED


@pytest.fixture(scope="module")
def vqgan_clip(tmp_path_factory):
    """A tiny VQGAN and CLIP (tests/synthesis_helpers.py), saved once per test module: their dirs."""
    from synthesis_helpers import tiny_clip, tiny_vqmodel

    root = tmp_path_factory.mktemp("tiny")
    return str(tiny_vqmodel(root / "vq")), str(tiny_clip(root / "clip"))


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    """THE private local Ray cluster every Ray test shares (3 CPU workers; starting one costs seconds):
    its address. Workers import this checkout and tests/ (test-only run kinds), one torch thread."""
    ray = pytest.importorskip("ray")
    tests = Path(__file__).resolve().parent
    env = {"PYTHONPATH": os.pathsep.join((str(tests.parent), str(tests))), "OMP_NUM_THREADS": "1",
           "SPATIALPROBE_HOME": str(tmp_path_factory.mktemp("ray-home")), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    # address="local" and its own temp dir: never a cluster `ray start` left on the machine, so a
    # `ray stop` elsewhere cannot kill the suite's cluster
    # (a short temp dir: Ray's socket paths must stay under 107 characters)
    temp = tempfile.mkdtemp(prefix="sp-ray-tests-")
    ray.init(address="local", _temp_dir=temp, num_cpus=3, include_dashboard=False,
             object_store_memory=100 * 1024 * 1024, runtime_env={"env_vars": env})
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)
