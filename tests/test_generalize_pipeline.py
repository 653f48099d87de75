"""A generalized set through the rest of the toolkit: prober, synthesizer, QA from its images."""

from __future__ import annotations

import json

import pytest
from generalize_helpers import make_wordnet_dir, write_corpus
from qa_helpers import make_vilt
from synthesis_helpers import one_torch_thread, tiny_stable_diffusion  # noqa: F401
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.files import write_jsonl
from spatialprobe.imagestore import ImageStore
from spatialprobe.tasks import data as task_data

pytest.importorskip("torch")
pytest.importorskip("diffusers")


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))


def _invoke(args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def test_generalized_file_probes_synthesizes_and_answers(tmp_path):
    # Source: the man/woman scenarios of three objects of the built-in set (12 scenarios).
    objects = ("bus", "camel", "kite")
    source = [i for i in task_data.load("posrel").instances
              if i.obj_b in objects and i.obj_a in ("man", "woman")]
    write_jsonl(tmp_path / "source.jsonl", task_data.to_release_records(
        task_data.Dataset("s", "v", "posrel", task_data.load("posrel").labels, tuple(source))))
    corpus = write_corpus(tmp_path / "books.txt", ["An enchantress flies the kite."])
    gen = tmp_path / "general.jsonl"
    _invoke(["generalize", "--source", tmp_path / "source.jsonl", "--wordnet", make_wordnet_dir(tmp_path / "wn"),
             "--replace", "person", "--max-per-scenario", 1, "--corpus", corpus, "--out", gen])
    data = task_data.load(str(gen))
    assert {i.obj_b for i in data.instances} == set(objects)
    assert "An enchantress flies the kite." not in {i.text for i in data.instances}
    assert all(i.pronoun == ("She" if i.obj_a in ("ballerina", "enchantress", "sorceress") else "He")
               for i in data.instances)

    # The masked-LM prober reads it like any dataset file.
    _invoke(["probe", "posrel", "--data", gen, "--model", "dummy", "--folds", 3, "--out", tmp_path / "probe"])
    probe = json.loads((tmp_path / "probe" / "summary.json").read_text())
    assert probe["dataset"] == f"general.jsonl@{data.version}"
    assert probe["metrics"]["whole_set_accuracy"]["n"] == len(data)

    # The synthesizer: one image per scenario, the instance as the prompt's metadata (the judge's input).
    pipeline = tiny_stable_diffusion(tmp_path / "sd")
    _invoke(["synthesize", "--prompts", gen, "--backend", "diffusers", "--model", pipeline, "--steps", 1,
             "--height", 16, "--width", 16, "--device", "cpu", "--out", tmp_path / "synth"])
    records = list(ImageStore(tmp_path / "synth").images())
    assert [r.prompt for r in records] == [i.text for i in data.instances]
    assert all({"obj_a", "obj_b", "label"} <= set(r.meta) for r in records)
    assert {(r.meta["obj_a"], r.meta["obj_b"], r.meta["label"]) for r in records} == \
        {(i.obj_a, i.obj_b, i.label) for i in data.instances}

    # The judge accepts the run (its colour detector finds nothing in noise: all unrecognized).
    _invoke(["judge", "posrel", tmp_path / "synth", "--detector", "colour", "--out", tmp_path / "judged"])
    judged = json.loads((tmp_path / "judged" / "summary.json").read_text())
    assert judged["kind"] == "judge" and judged["task"] == "posrel" and judged["accuracy"]["n"] == len(data)
    assert set(judged["details"]["per_object"]) == {i.obj_a for i in data.instances} | set(objects)

    # QA from those images asks about the generalized scenarios, every one with its image.
    vilt = make_vilt(tmp_path / "vilt", [i.text for i in data.instances] + ["is the on under inside beside"],
                     {"yes": 0.0, "no": 1.0})
    _invoke(["qa", "image", "--images", tmp_path / "synth", "--model", vilt, "--device", "cpu",
             "--out", tmp_path / "qa"])
    summary = json.loads((tmp_path / "qa" / "summary.json").read_text())
    assert summary["accuracy"]["n"] == summary["details"]["n_questions"] == 2 * len(data)
    assert summary["dataset"].startswith("general.jsonl@") and summary["accuracy"]["mean"] == 50.0
    preds = [json.loads(line) for line in (tmp_path / "qa" / "predictions.jsonl").read_text().splitlines()]
    assert {p["context"] for p in preds} == {i.text for i in data.instances}
