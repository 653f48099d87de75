import pytest


@pytest.fixture(autouse=True)
def _spatialprobe_home(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path_factory.mktemp("spatialprobe-home")))
