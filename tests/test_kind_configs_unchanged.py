"""A run kind holds its settings without changing any run's identity: one run
of each converted kind, made with today's code, writes the ``config.json`` that main 657338c
wrote for the same run (``tests/data/configs_from_main.json``, made by ``tests/kind_configs.py``),
and a replay of it (``spatialprobe run CONFIG``, the kind rebuilt from its settings) confirms it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kind_configs import comparable, invoke, make_runs

GOLDEN = Path(__file__).parent / "data" / "configs_from_main.json"

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("kinds").resolve()
    return root, make_runs(root)


def test_every_run_writes_the_config_main_wrote(runs):
    root, folders = runs
    golden = json.loads(GOLDEN.read_text())
    made = {name: comparable(json.loads((folder / "config.json").read_text()), root)
            for name, folder in folders.items()}
    assert sorted(made) == sorted(golden)
    for name in golden:
        assert made[name] == golden[name], name


def test_a_replay_rebuilds_each_kind_from_its_settings_with_the_same_identity(runs):
    root, folders = runs
    for name, folder in folders.items():
        config = json.loads((folder / "config.json").read_text())
        invoke("run", folder / "config.json", "--out", root / "replays" / name)
        again = json.loads((root / "replays" / name / "config.json").read_text())
        assert again["identity"] == config["identity"], name
        assert {k: again[k] for k in ("settings", "inputs", "runtime")} == \
            {k: config[k] for k in ("settings", "inputs", "runtime")}, name
