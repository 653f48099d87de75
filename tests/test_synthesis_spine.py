"""synthesize as a kind of the run spine: replay from config.json, the image store as a reader."""

from __future__ import annotations

import json

import pytest
from PIL import Image
from synthesis_helpers import one_torch_thread, tiny_clip, tiny_vqmodel  # noqa: F401
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.imagestore import ImageStore, PromptItem
from spatialprobe.store import list_runs


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))


def _invoke(args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def test_replay_confirms_in_place_and_reproduces_elsewhere(tmp_path):
    vq, clip = tiny_vqmodel(tmp_path / "vq"), tiny_clip(tmp_path / "clip")
    (tmp_path / "p.txt").write_text("A cat on the mat.\nA dog under the table.\n", encoding="utf-8")
    out = tmp_path / "run"
    _invoke(["synthesize", "--prompts", tmp_path / "p.txt", "--backend", "vqgan-clip", "--vqgan", vq,
             "--clip", clip, "--size", 32, "--iterations", 2, "--cutouts", 4, "--set", "large_cutouts=1",
             "-n", 2, "--seed", 7, "--batch-size", 3, "--device", "cpu", "--out", out])
    images = {r.path.name: r.path.read_bytes() for r in ImageStore(out).images()}
    assert sorted(images) == ["line-0001_00.png", "line-0001_01.png", "line-0002_00.png",
                              "line-0002_01.png"]
    stamps = {name: (out / "images" / name).stat().st_mtime_ns for name in images}
    identity = json.loads((out / "config.json").read_text())["identity"]

    files = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    same = _invoke(["run", out / "config.json"])  # the same directory: confirms, makes nothing
    assert f"confirmed: identity {identity[:12]}" in same.output
    assert {n: (out / "images" / n).stat().st_mtime_ns for n in images} == stamps
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == files  # not a byte changed
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["details"]["already_done"], summary["details"]["generated_this_invocation"]) == (0, 4)

    again = tmp_path / "again"  # elsewhere: the same images, byte for byte
    replay = _invoke(["run", out / "config.json", "--out", again, "--device", "cpu"])
    assert f"confirmed: identity {identity[:12]}" in replay.output
    assert {r.path.name: r.path.read_bytes() for r in ImageStore(again).images()} == images
    assert json.loads((again / "config.json").read_text())["runtime"]["batch_size"] == 3
    assert json.loads((again / "summary.json").read_text())["details"]["generated_this_invocation"] == 4
    listed = [r for r in list_runs() if r["kind"] == "synthesize"]
    assert len(listed) >= 2 and {r["dataset"] for r in listed} == {str(tmp_path / "p.txt")}


def test_image_store_built_by_hand_lists_every_prompt_and_lifts_the_settings(tmp_path):
    store = ImageStore(tmp_path / "run")
    store.add_prompts([PromptItem("b", "B text", {"obj_a": "b"}), PromptItem("a", "A text")])
    store.add_prompts([PromptItem("b", "B edited", {"obj_a": "bb"})])  # known id: updated in place
    store.save_image(Image.new("RGB", (8, 8)), "a", 1, seed=3, backend="test", model="m", settings={})
    store.save_image(Image.new("RGB", (8, 8)), "a", 0, seed=2, backend="test", model="m", settings={})
    with pytest.raises(ValueError, match="lists no prompt 'c'; add it with add_prompts first"):
        store.save_image(Image.new("RGB", (8, 8)), "c", 0, seed=0, backend="test", model="m", settings={})
    again = ImageStore(tmp_path / "run")
    assert [(p.prompt_id, p.prompt, p.meta) for p in again.prompts()] == [
        ("b", "B edited", {"obj_a": "bb"}), ("a", "A text", {})]
    assert [(r.prompt_id, r.image_index, r.seed) for r in again.images()] == [("a", 0, 2), ("a", 1, 3)]
    assert again.finished() == {("a", 0), ("a", 1)} and again.missing_images() == []
    (tmp_path / "run" / "images" / "a_01.png").unlink()
    assert [(r.prompt_id, r.image_index) for r in again.missing_images()] == [("a", 1)]
    assert again.source() is None and again.run.config() is None
    # a spine config: the settings are read at the top level too (judge and qa look up "prompts")
    (tmp_path / "run" / "config.json").write_text(json.dumps(
        {"kind": "synthesize", "identity": "x", "settings": {"prompts": "size@abc", "task": "size"},
         "runtime": {}}))
    config = again.run.config()
    assert (config["prompts"], config["task"], config["kind"]) == ("size@abc", "size", "synthesize")
    assert again.source() == "size@abc"
