import pytest


@pytest.fixture(autouse=True)
def _spatialprobe_home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "spatialprobe-home"))
