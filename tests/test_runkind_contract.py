"""Rule 7: run kinds share one typed contract (a RunKind base class, a settings dataclass per kind,
one generic ``from_spec``), and optional hooks are visible no-op methods."""

import dataclasses
import inspect
import json

import pytest
from judge_helpers import write_run
from typer.testing import CliRunner

from spatialprobe import registry
from spatialprobe.cli import app
from spatialprobe.runner import RunKind, RunSpec
from spatialprobe.runner.settings import from_config, to_spec

KINDS = ("probe", "synthesize", "judge", "human", "visor", "ask", "vsr-train", "vqa-judge", "vqa-visor",
         "judge-compare")
HOLD_THEIR_SETTINGS = ("judge-compare", "visor", "vqa-judge", "vqa-visor", "judge", "human", "synthesize", "probe",
                       "vsr-train")
"""Kinds built from their settings alone (``Kind(settings)``): resolved, from_settings and
inputs are the base's, written once; the asked-items kinds follow."""


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("name", KINDS)
def test_every_kind_is_a_runkind_with_a_settings_dataclass(name):
    try:
        cls = registry.lookup("run-kind", name)
    except ImportError as err:  # an optional extra (the kind's module imports it) is absent
        pytest.skip(str(err))
    assert issubclass(cls, RunKind) and cls.kind == name
    assert dataclasses.is_dataclass(cls.Settings)
    assert "from_spec" not in vars(cls)  # the one generic parser, never a hand-written one
    if name in HOLD_THEIR_SETTINGS:
        assert not {"from_settings", "resolved"} & set(vars(cls))
        assert "inputs" not in vars(cls) or name == "vsr-train"  # its VSR folder holds three data files
        assert next(iter(inspect.signature(cls).parameters)) == "settings"


@pytest.mark.parametrize("name", ["qa", "vsr", "spatialmqa"])
def test_a_retired_kind_is_registered_as_its_mapping_to_the_ask_kind(name):
    from spatialprobe.engine.legacy import RETIRED, Retired
    from spatialprobe.engine.run import AskRunSettings

    assert name in RETIRED and registry.lookup("run-kind", name) is Retired
    assert Retired.Settings is AskRunSettings  # a replay overrides the ask kind's runtime settings


def test_hooks_are_visible_no_ops_on_the_base():
    class Counting(RunKind):
        kind = "counting"

        def compute(self, batch):
            return [len(item.key) for item in batch]

    kind = Counting(None)
    assert list(kind.prepare(None, {})) == []
    assert kind.write_extras(None, {}, None) is None
    from spatialprobe.runner import Item

    work = [[Item("a"), Item("bb")], [Item("ccc")]]
    assert [results for _, results in kind.compute_stream(work)] == [[1, 2], [3]]


@dataclasses.dataclass(frozen=True)
class Inner:
    templates: tuple[str, ...] = dataclasses.field(metadata={"nonempty": True})


@dataclasses.dataclass(frozen=True)
class Example:
    folds: int
    ratio: float
    inner: Inner
    name: str | None = None
    device: str = "auto"


def test_spec_is_the_dataclass_split_by_runtime_keys_and_comes_back_equal():
    value = Example(folds=5, ratio=0.5, inner=Inner(("a", "b")), device="cpu")
    spec = to_spec("example", value)
    assert spec.settings == {"folds": 5, "ratio": 0.5, "inner": {"templates": ["a", "b"]}, "name": None}
    assert spec.runtime == {"device": "cpu"}
    assert from_config(Example, spec) == value
    assert from_config(Example, RunSpec("example", {**spec.settings, "ratio": 1}, {})).ratio == 1.0


@pytest.mark.parametrize("settings,sentence", [
    ({"folds": "five"}, "config.json, field 'folds': must be an integer, not 'five'."),
    ({"folds": True}, "config.json, field 'folds': must be an integer, not True."),
    ({"inner": {"templates": []}}, "config.json, field 'inner.templates': must not be empty, not []."),
    ({"inner": {"templates": ["a", 3]}}, "config.json, field 'inner.templates[1]': must be a string, not 3."),
    ({"banana": 1}, "config.json, field 'banana': is not a setting of this run kind (its settings: "
                    "folds, ratio, inner, name, device)."),
    ({"name": ["x"]}, "config.json, field 'name': must be a string or null, not ['x']."),
])
def test_a_hand_edited_config_is_refused_naming_the_key(settings, sentence):
    good = {"folds": 5, "ratio": 0.5, "inner": {"templates": ["a"]}}
    with pytest.raises(ValueError) as err:
        from_config(Example, RunSpec("example", {**good, **settings}, {}))
    assert str(err.value) == sentence


def test_a_missing_key_is_named():
    with pytest.raises(ValueError, match=r"^config.json, field 'ratio': is missing.$"):
        from_config(Example, RunSpec("example", {"folds": 5, "inner": {"templates": ["a"]}}, {}))


@pytest.fixture
def probe_config(tmp_path):
    out = tmp_path / "run"
    result = invoke("probe", "size", "--model", "dummy", "--out", out, "--candidates", "manual", "--folds", "2")
    assert result.exit_code == 0, result.output
    return out / "config.json"


@pytest.mark.parametrize("edit,sentence", [
    (lambda s: s.update(folds="five"), "field 'folds': must be an integer, not 'five'."),
    (lambda s: s["candidates"].update(templates=[]), "field 'candidates.templates': must not be empty, not []."),
    (lambda s: s.pop("folds"), "field 'folds': is missing."),
    (lambda s: s.update(foldz=2), "field 'foldz': is not a setting of this run kind"),
])
def test_run_refuses_a_hand_edited_probe_config_with_exit_2(probe_config, tmp_path, edit, sentence):
    config = json.loads(probe_config.read_text())
    edit(config["settings"])
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(config))
    result = invoke("run", edited, "--out", tmp_path / "replay")
    assert result.exit_code == 2, result.output
    assert f"Error: {edited}, {sentence}" in " ".join(result.output.split())
    assert not (tmp_path / "replay" / "summary.json").exists()


def test_probe_identity_and_config_survive_a_replay(probe_config, tmp_path):
    result = invoke("run", probe_config, "--out", tmp_path / "again")
    assert result.exit_code == 0, result.output
    before, after = json.loads(probe_config.read_text()), json.loads((tmp_path / "again" / "config.json").read_text())
    assert after["identity"] == before["identity"] and after["settings"] == before["settings"]


def test_judge_no_gallery_writes_no_gallery(tmp_path):
    write_run(tmp_path / "images", "size", [("larger", "larger", True), ("smaller", "smaller", True)])
    args = ["judge", "size", tmp_path / "images", "--detector", "colour", "--depth", "colour"]
    result = invoke(*args, "--out", tmp_path / "plain", "--no-gallery")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "plain" / "summary.json").exists()
    assert not (tmp_path / "plain" / "gallery.html").exists()
    assert "gallery:" not in result.output
    result = invoke(*args, "--out", tmp_path / "shown")  # the default still writes it
    assert result.exit_code == 0, result.output
    assert (tmp_path / "shown" / "gallery.html").read_text().count("<figure") == 2


def test_a_judge_config_without_its_image_run_is_one_sentence(tmp_path):
    write_run(tmp_path / "images", "size", [("larger", "larger", True)])
    out = tmp_path / "judged"
    result = invoke("judge", "size", tmp_path / "images", "--detector", "colour", "--depth", "colour",
                    "--out", out, "--no-gallery")
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    del config["settings"]["source"]["path"]
    config["settings"]["detector"]["args"] = {}
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(config))
    result = invoke("run", edited, "--out", tmp_path / "again")
    assert result.exit_code == 2, result.output
    assert "Error: this run's config.json has no settings key 'source.path'." in " ".join(result.output.split())
    config["settings"]["depth"] = {"name": "colour"}  # a component without its args
    edited.write_text(json.dumps(config))
    result = invoke("run", edited, "--out", tmp_path / "again")
    assert result.exit_code == 2, result.output
    assert f"Error: {edited}, field 'depth.args': is missing." in " ".join(result.output.split())
