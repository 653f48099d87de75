"""Every benchmark tried offline in one command: ``spatialprobe bench NAME --demo`` (and ``vsr --demo``,
``spatialmqa --demo``) writes a synthetic copy in the benchmark's real layout and asks it of the
tiny untrained model the demo names, found in ``tiny-models/`` (built here through ``spatialprobe
models tiny``); each run says it is synthetic and untrained, reads every item the copy holds,
and the same command resumes it (the copy is deterministic)."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spatialprobe import registry
from spatialprobe.benchmarks import demo_copy
from spatialprobe.cli import app
from spatialprobe.commands.bench import OWN_COMMANDS, benchmarks, module_of

OWN = ("vsr", "spatialmqa")
"""The benchmarks with a command of their own, and a demo too."""


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A working directory holding ``tiny-models/llava`` and ``tiny-models/clip``, built by the command."""
    folder = tmp_path_factory.mktemp("demo")
    for family in ("llava", "clip"):
        said = invoke("models", "tiny", family, "--out", folder / "tiny-models" / family)
        assert said.exit_code == 0, said.output
    return folder


def test_every_registered_benchmark_declares_a_demo_copy():
    names = [n for n in registry.names("source") if n not in OWN_COMMANDS or n in OWN]
    assert set(benchmarks()) | set(OWN) <= set(names)
    for name in names:
        module = module_of(name) if name not in OWN else __import__(f"spatialprobe.benchmarks.{name}", fromlist=["_"])
        assert callable(getattr(module, "demo", None)), f"{name} declares no demo(folder, seed)"


def only_run(root: Path, name: str) -> Path:
    found = sorted((root / "runs").glob(f"ask-{name}-*"))
    assert len(found) == 1, found
    return found[0]


def check_run(root: Path, name: str, output: str) -> dict:
    """The run of ``name``'s demo: marked synthetic and untrained, every item of the copy asked."""
    run = only_run(root, name)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["untrained"] is True
    assert summary["details"]["synthetic"] == f"spatialprobe demo copy in {(root / 'demo-data' / name).resolve()}"
    coverage = summary["details"]["coverage"]
    per_item = 2 if name == "ewok" else 1  # EWoK: two targets of each item of the archive
    assert coverage["used"] == per_item * coverage["total"] > 0
    table = (run / "table.md").read_text()
    assert table.startswith("**UNTRAINED model: its numbers are meaningless.**\n\n**SYNTHETIC data (")
    assert "a SYNTHETIC copy of" in " ".join(output.split())
    assert (root / "demo-data" / name / demo_copy.MARKER).is_file()
    return summary


@pytest.mark.parametrize("name", sorted(set(benchmarks())))
def test_each_benchmark_runs_end_to_end_on_its_demo_copy_in_one_command(name, root, monkeypatch):
    monkeypatch.chdir(root)
    said = invoke("bench", name, "--demo", "--device", "cpu")
    assert said.exit_code == 0, said.output
    check_run(root, name, said.output)


@pytest.mark.parametrize("command", OWN)
def test_vsr_and_spatialmqa_run_end_to_end_on_their_demo_copies_and_resume(command, root, monkeypatch, caplog):
    monkeypatch.chdir(root)
    said = invoke(command, "--demo", "--device", "cpu")
    assert said.exit_code == 0, said.output
    summary = check_run(root, command, said.output)
    assert summary["details"]["model_info"]["model"].endswith("tiny-models/clip")
    again = invoke(command, "--demo", "--device", "cpu")  # the same copy: the same run, resumed
    assert again.exit_code == 0, again.output
    assert f"all {summary['details']['coverage']['used']} items were already computed" in caplog.text


def test_demo_refuses_what_it_does_not_read_and_a_missing_copy_names_demo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    said = invoke("bench", "cv-bench", "--demo", "--images", tmp_path, "--model", "x")
    assert said.exit_code == 2 and "--images does not apply with --demo" in said.output
    said = invoke("bench", "cv-bench", "--model", "x")
    assert said.exit_code == 2 and "bench cv-bench needs --data (or --demo" in " ".join(said.output.split())
    said = invoke("vsr", "--data", tmp_path)
    assert said.exit_code == 2 and "vsr needs --images (or --demo" in " ".join(said.output.split())


def test_a_drawn_scene_puts_the_first_object_in_its_relation_to_the_second():
    for relation, (axis, sign) in {"left": (0, -1), "right": (0, 1), "above": (1, -1), "below": (1, 1)}.items():
        image = demo_copy.draw(demo_copy.Pair("red circle", "blue square", relation))
        pixels = image.load()
        where = {name: [(x, y) for x in range(image.width) for y in range(image.height) if pixels[x, y] == colour]
                 for name, colour in (("a", demo_copy.COLOURS["red"]), ("b", demo_copy.COLOURS["blue"]))}
        centre = {name: sum(p[axis] for p in points) / len(points) for name, points in where.items()}
        assert sign * (centre["a"] - centre["b"]) > 10, relation
