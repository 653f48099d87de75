"""``spatialprobe models tiny FAMILY``: every family built offline through the command, with no
../shared and no network, loads through the adapter the toolkit chooses for it, and every run of
it says it is untrained."""

import json

import pytest
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.models.choice import adapters_for
from spatialprobe.tiny import FAMILIES, MARKER, untrained

ADAPTER = {"bert": "hf-mlm", "roberta": "hf-mlm", "gpt2": "hf-causal", "t5": "t5", "clip": "contrastive",
           "siglip": "contrastive", "vilt": "vilt", "vilt-vqa": "vilt-vqa", "llava": "hf-mllm",
           "smolvlm": "hf-mllm"}
"""The adapter the toolkit asks each family with first (spatialprobe ls)."""


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    outputs = {}
    for family in FAMILIES:
        said = invoke("models", "tiny", family, "--out", root / family)
        assert said.exit_code == 0, said.output
        outputs[family] = said.output
    return root, outputs


def test_the_families_are_those_the_toolkit_asks():
    assert set(FAMILIES) == set(ADAPTER)


@pytest.mark.parametrize("family", sorted(ADAPTER))
def test_each_family_is_saved_with_its_note_and_chosen_by_its_adapter(family, built):
    root, outputs = built
    folder = root / family
    note = (folder / MARKER).read_text()
    assert note.startswith(f"# UNTRAINED tiny {family} model") and "mean NOTHING" in note
    assert untrained(str(folder)) and not untrained(str(root))
    assert f"Tiny UNTRAINED {family} model written to {folder}" in " ".join(outputs[family].split())
    config = json.loads((folder / "config.json").read_text())
    assert adapters_for(config)[0] == ADAPTER[family]


def test_a_run_of_a_tiny_model_says_it_is_untrained(built, tmp_path, monkeypatch):
    root, _ = built
    monkeypatch.chdir(tmp_path)
    said = invoke("bench", "posqa", "--demo", "--model", root / "gpt2", "--out", tmp_path / "run", "--device", "cpu")
    assert said.exit_code == 0, said.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["untrained"] is True and summary["metrics"]["accuracy"]["n"] == 16
    probe = invoke("probe", "size", "--model", root / "bert", "--out", tmp_path / "probe", "--device", "cpu",
                   "--candidates", "manual")
    assert probe.exit_code == 0, probe.output
    assert "# size · " in probe.output and "(UNTRAINED smoke model: numbers are meaningless)" in probe.output
    assert json.loads((tmp_path / "probe" / "summary.json").read_text())["untrained"] is True


def test_an_unknown_family_is_refused_naming_the_families(tmp_path):
    said = invoke("models", "tiny", "gpt5", "--out", tmp_path / "x")
    assert said.exit_code == 2 and "no tiny model family 'gpt5'; the families are: bert, roberta" in said.output
    listing = invoke("models", "list")
    assert listing.exit_code == 0 and all(family in listing.output for family in FAMILIES)
