import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


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
