"""A run's inputs are identified by content: fingerprints of model folders,
hub ids and files; a resume or replay with any of them changed is refused naming it; a replay
honours or refuses every field of its config; confirming a run in place writes no byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spatialprobe import fingerprints
from spatialprobe.cli import app
from spatialprobe.fingerprints import file_fingerprint, folder_fingerprint, model_fingerprint


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def run_bytes(run: Path) -> dict[str, bytes]:
    """Every output file of a run folder (the lock and SQLite's side files aside), by name."""
    return {p.name: p.read_bytes() for p in sorted(run.iterdir())
            if p.is_file() and p.name not in ("run.lock", "run.sqlite-wal", "run.sqlite-shm")}


# ---- fingerprints --------------------------------------------------------------------------

@pytest.fixture
def counted(monkeypatch):
    """Count the files whose content is read to fingerprint them."""
    calls: list[str] = []
    real = fingerprints.sha256_file

    def spy(path):
        calls.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(fingerprints, "sha256_file", spy)
    return calls


def test_a_folder_is_read_once_then_its_fingerprint_comes_from_the_cache(tmp_path, counted):
    import os

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"a": 1}')
    (folder / "model.safetensors").write_bytes(b"weights-1")
    (folder / ".cache").mkdir()
    (folder / ".cache" / "lock").write_text("not part of the model")
    first = folder_fingerprint(folder)
    assert sorted(counted) == ["config.json", "model.safetensors"]
    counted.clear()
    assert folder_fingerprint(folder) == first and counted == []  # no file read again
    cache = json.loads((Path(os.environ["SPATIALPROBE_HOME"]) / "fingerprints.json").read_text())
    assert cache[str((folder / "model.safetensors").resolve())][:1] == [len(b"weights-1")]
    # replaced in place: same size, new content and mtime -> read again, another fingerprint
    weights = folder / "model.safetensors"
    weights.write_bytes(b"weights-2")
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))
    second = folder_fingerprint(folder)
    assert counted == ["model.safetensors"] and second != first
    # the old content back (a new mtime): the fingerprint is the content's, the first one
    weights.write_bytes(b"weights-1")
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 2 * 10**9))
    assert folder_fingerprint(folder) == first


def test_a_corrupt_or_unwritable_cache_is_ignored(tmp_path, monkeypatch, counted):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("SPATIALPROBE_HOME", str(home))
    (home / "fingerprints.json").write_text("{not json")
    data = tmp_path / "data.jsonl"
    data.write_text("x\n")
    import hashlib

    expected = "sha256:" + hashlib.sha256(b"x\n").hexdigest()[:16]
    assert file_fingerprint(data) == expected
    monkeypatch.setenv("SPATIALPROBE_HOME", str(data))  # a home that is a file: nothing is saved
    assert file_fingerprint(data) == expected


def test_a_hub_id_is_the_commit_its_cache_resolves(tmp_path, monkeypatch):
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--org--tiny"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    assert model_fingerprint("org/tiny") == {"fingerprint": f"commit:{commit}", "revision": commit}
    # not cached and the hub unreachable (the tests run offline): the id and the revision asked
    assert model_fingerprint("org/other", "v2") == {"fingerprint": "unresolved:org/other@v2",
                                                    "revision": "v2"}


# ---- vsr: a checkpoint replaced in place ------------------------------------------------------

def _vsr(tmp_path, out, clip_dir):
    return invoke("vsr", "--model", clip_dir, "--data", tmp_path / "vsr", "--images", tmp_path / "coco",
                  "--out", out, "--device", "cpu", "--skip-missing")


def _reweigh(folder: Path, loader, value: float) -> None:
    """Set one weight of a saved model and save it in place (what retraining into the folder does)."""
    import torch

    model = loader.from_pretrained(folder)
    with torch.no_grad():
        next(iter(model.parameters())).flatten()[0] = value
    model.save_pretrained(folder)


def test_vsr_resume_with_its_clip_replaced_in_place_is_refused_naming_it(tmp_path, monkeypatch):
    from test_vl_vsr import RANDOM, write_split
    from transformers import CLIPModel
    from vl_helpers import solid_image, tiny_clip

    from spatialprobe.models.clip_scoring import ClipSimilarity

    write_split(tmp_path / "vsr", "random", "test", RANDOM)
    for name in ("000000000001.jpg", "000000000002.jpg"):
        solid_image(tmp_path / "coco" / name)
    clip_dir = tiny_clip(tmp_path / "clip")
    run = tmp_path / "run"
    assert _vsr(tmp_path, run, clip_dir).exit_code == 0
    config = json.loads((run / "config.json").read_text())
    assert config["inputs"]["model"] == {"what": "the model", "model": str(clip_dir), "revision": None,
                                         "fingerprint": folder_fingerprint(clip_dir)}
    assert config["inputs"]["data"]["fingerprint"] == file_fingerprint(tmp_path / "vsr" / "random" / "test.jsonl")
    before = run_bytes(run)

    def refuse(*args, **kwargs):
        raise AssertionError("scored again")

    monkeypatch.setattr(ClipSimilarity, "batch_scores", refuse)
    again = _vsr(tmp_path, run, clip_dir)  # unchanged: resumes, computes nothing
    assert again.exit_code == 0, again.output
    old = folder_fingerprint(clip_dir)
    _reweigh(clip_dir, CLIPModel, 0.5)
    new = folder_fingerprint(clip_dir)
    before = run_bytes(run)
    replaced = _vsr(tmp_path, run, clip_dir)
    assert replaced.exit_code == 2
    assert (f"the weights of the model {str(clip_dir)!r} changed since this run "
            f"(fingerprint {old[:19]} -> {new[:19]})") in " ".join(replaced.output.split())
    assert run_bytes(run) == before  # nothing written


# ---- qa: the answerer replaced, the data file edited, a task edited in the config -------------

@pytest.fixture(scope="module")
def qa_setup(tmp_path_factory):
    from qa_helpers import make_t5, train_t5

    from spatialprobe.models.qa_models import unifiedqa_input
    from spatialprobe.tasks import data as task_data
    from spatialprobe.tasks.yes_no import QASet, build_qa

    qa = build_qa(task_data.load("posrel"))
    items = tuple(i for i in qa.items if i.context in ("A man drives the bus.", "A man cleans the bus."))
    qa = QASet(qa.name, "test", qa.task, items)
    path = make_t5(tmp_path_factory.mktemp("t5") / "t5", [i.full_text for i in qa.items])
    return qa, train_t5(path, [unifiedqa_input(i.question, i.context) for i in qa.items],
                        [i.answer for i in qa.items])


def _qa_run(tmp_path, qa_setup, *extra):
    import shutil

    from spatialprobe.files import write_jsonl
    from spatialprobe.tasks.yes_no import to_qa_records

    qa, t5 = qa_setup
    model = tmp_path / "t5"
    if not model.exists():
        shutil.copytree(t5, model)
    data = tmp_path / "qa.jsonl"
    if not data.exists():
        write_jsonl(data, to_qa_records(qa))
    out = tmp_path / "run"
    result = invoke("qa", "text", "--model", model, "--data", data, "--out", out, "--device", "cpu", *extra)
    return result, model, data, out


def test_qa_resume_with_its_answerer_replaced_is_refused_naming_it(tmp_path, qa_setup):
    from transformers import T5ForConditionalGeneration

    first, model, _, out = _qa_run(tmp_path, qa_setup)
    assert first.exit_code == 0, first.output
    old = folder_fingerprint(model)
    _reweigh(model, T5ForConditionalGeneration, 3.0)
    before = run_bytes(out)
    again, *_ = _qa_run(tmp_path, qa_setup)
    assert again.exit_code == 2
    assert (f"the weights of the model {str(model)!r} changed since this run "
            f"(fingerprint {old[:19]} -> {folder_fingerprint(model)[:19]})") in " ".join(again.output.split())
    assert run_bytes(out) == before


def test_replay_with_a_changed_data_file_is_refused_in_place_and_a_new_run_elsewhere(tmp_path, qa_setup):
    first, _, data, out = _qa_run(tmp_path, qa_setup)
    assert first.exit_code == 0, first.output
    old = file_fingerprint(data)
    lines = data.read_text().splitlines()
    data.write_text("\n".join(lines[:-1]) + "\n")  # one question fewer
    before = run_bytes(out)
    refused = invoke("run", out / "config.json")
    assert refused.exit_code == 2
    text = " ".join(refused.output.split())
    assert (f"{out / 'config.json'}: the QA data file {str(data)!r} changed since this run "
            f"(fingerprint {old[:19]} -> {file_fingerprint(data)[:19]})") in text
    assert "Its results are of the old inputs: replay into a new --out directory" in text
    assert run_bytes(out) == before
    elsewhere = invoke("run", out / "config.json", "--out", tmp_path / "new")
    assert elsewhere.exit_code == 0, elsewhere.output
    assert "new run of changed inputs (the QA data file" in elsewhere.output
    assert json.loads((tmp_path / "new" / "summary.json").read_text())["accuracy"]["n"] == len(lines) - 1
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    assert invoke("run", out / "config.json", "--out", occupied).exit_code == 2
    assert [p.name for p in occupied.iterdir()] == ["notes.txt"]


def test_a_task_edited_in_the_config_is_refused_not_dropped(tmp_path, qa_setup):
    first, _, _, out = _qa_run(tmp_path, qa_setup)
    assert first.exit_code == 0, first.output
    config = json.loads((out / "config.json").read_text())
    config["settings"]["source"]["task"] = "size"
    (out / "config.json").write_text(json.dumps(config))
    before = run_bytes(out)
    edited = invoke("run", out / "config.json")
    assert edited.exit_code == 2
    # the ask kind rebuilds the source from the edited settings: the file's questions are refused
    assert "field 'task': is 'posrel', not the size asked for" in " ".join(edited.output.split())
    assert run_bytes(out) == before


def test_confirming_a_run_in_place_reads_it_and_writes_no_byte(tmp_path, qa_setup, monkeypatch):
    from spatialprobe.models.qa_models import T5YesNo

    first, _, _, out = _qa_run(tmp_path, qa_setup)
    assert first.exit_code == 0, first.output
    before = run_bytes(out)
    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name in before}

    def refuse(*args, **kwargs):
        raise AssertionError("answered again")

    monkeypatch.setattr(T5YesNo, "answer", refuse)
    same = invoke("run", out / "config.json")
    assert same.exit_code == 0, same.output
    assert "confirmed: identity" in same.output
    assert run_bytes(out) == before
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name in before} == stamps


# ---- judge: the detector replaced in place --------------------------------------------------

def test_judge_resume_with_its_detector_replaced_is_refused_naming_it(tmp_path):
    from judge_helpers import tiny_dpt, tiny_owlvit, write_run
    from transformers import OwlViTForObjectDetection

    write_run(tmp_path / "images", "size", [("larger", "larger", True)])
    owl, dpt = tiny_owlvit(tmp_path / "owl"), tiny_dpt(tmp_path / "dpt")
    args = ("judge", "size", tmp_path / "images", "--detector", "owlvit", "--detector-model", owl,
            "--threshold", "0.0", "--depth", "dpt", "--depth-model", dpt, "--out", tmp_path / "j",
            "--no-gallery")
    assert invoke(*args).exit_code == 0
    config = json.loads((tmp_path / "j" / "config.json").read_text())
    assert config["inputs"] == {
        "detector": {"what": "the detector", "model": str(owl), "revision": None,
                     "fingerprint": folder_fingerprint(owl)},
        "depth_model": {"what": "the depth model", "model": str(dpt), "revision": None,
                        "fingerprint": folder_fingerprint(dpt)}}
    assert invoke(*args).exit_code == 0  # unchanged: resumes
    old = folder_fingerprint(owl)
    _reweigh(owl, OwlViTForObjectDetection, 1.5)
    before = run_bytes(tmp_path / "j")
    again = invoke(*args)
    assert again.exit_code == 2
    assert (f"the weights of the detector {str(owl)!r} changed since this run "
            f"(fingerprint {old[:19]} -> {folder_fingerprint(owl)[:19]})") in " ".join(again.output.split())
    assert run_bytes(tmp_path / "j") == before


# ---- --revision and --trust-remote-code ----------------------------------------------------

def test_revision_and_trust_remote_code_are_passed_recorded_and_replayed(tmp_path, monkeypatch):
    from test_vl_vsr import RANDOM, write_split
    from vl_helpers import solid_image, tiny_clip

    from spatialprobe.models.clip_scoring import ClipSimilarity

    commit = "89abcdef0123456789abcdef0123456789abcdef"
    repo = tmp_path / "hub" / "models--org--tiny-clip"
    tiny_clip(repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "v1").write_text(commit)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    write_split(tmp_path / "vsr", "random", "test", RANDOM)
    for name in ("000000000001.jpg", "000000000002.jpg"):
        solid_image(tmp_path / "coco" / name)
    run = tmp_path / "run"
    result = _vsr(tmp_path, run, "org/tiny-clip")  # no v1 asked: the default branch is not cached
    assert result.exit_code == 2 and "hf download org/tiny-clip`" in " ".join(result.output.split())
    result = invoke("vsr", "--model", "org/tiny-clip", "--revision", "v1", "--trust-remote-code",
                    "--data", tmp_path / "vsr", "--images", tmp_path / "coco", "--out", run, "--device", "cpu",
                    "--skip-missing")
    assert result.exit_code == 0, result.output
    config = json.loads((run / "config.json").read_text())
    assert config["inputs"]["model"] == {"what": "the model", "model": "org/tiny-clip", "revision": commit,
                                         "fingerprint": f"commit:{commit}", "requested_revision": "v1",
                                         "trust_remote_code": True}
    before = run_bytes(run)
    monkeypatch.setattr(ClipSimilarity, "batch_scores", lambda *a, **k: pytest.fail("scored again"))
    same = invoke("run", run / "config.json")  # loads v1 again (else: the load error above)
    assert same.exit_code == 0, same.output
    assert "confirmed: identity" in same.output and run_bytes(run) == before
    tiny_clip(tmp_path / "clip")
    refused = invoke("vsr", "--model", tmp_path / "clip", "--revision", "v1", "--data", tmp_path / "vsr",
                     "--images", tmp_path / "coco", "--out", tmp_path / "local", "--device", "cpu", "--skip-missing")
    assert refused.exit_code == 2 and not (tmp_path / "local").exists()
    assert (f"--revision v1 applies to hub models; {str(tmp_path / 'clip')!r} is a local directory, which "
            "has no revisions.") in " ".join(refused.output.split())


# ---- a model given by a relative path is recorded absolute; its fingerprint decides ----
def _size_lines(path: Path, count: int = 40) -> Path:
    """The size set's first ``count`` release lines: all ``ant`` first, so every gold is smaller."""
    from spatialprobe.tasks import data as task_data
    from spatialprobe.tasks.release import to_release_records

    records = to_release_records(task_data.load("size"))[:count]
    assert {r["label"] for r in records} == {0}
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def two_folders(tmp_path_factory):
    """Folders A and B, each with a tiny BERT at the same relative path ``m``: A's always says
    smaller (100 % right here), B's always larger (0 %)."""
    from mlm_helpers import set_output_bias, tiny_wordpiece_bert

    root = tmp_path_factory.mktemp("relative")
    for folder, word in (("A", "smaller"), ("B", "larger")):
        set_output_bias(tiny_wordpiece_bert(root / folder / "m"), {word: 9.0})
    _size_lines(root / "size.jsonl")
    return root


def _probe_relative(root: Path, out: str):
    return invoke("probe", "size", "--model", "m", "--data", root / "size.jsonl", "--folds", "2",
                  "--candidates", "manual", "--out", out)


def test_a_relative_model_path_is_recorded_absolute_and_a_replay_elsewhere_runs_the_same_weights(
        two_folders, monkeypatch):
    root = two_folders
    monkeypatch.chdir(root / "A")
    assert _probe_relative(root, "run").exit_code == 0
    config = json.loads((root / "A" / "run" / "config.json").read_text())
    here = str((root / "A" / "m").resolve())
    assert config["settings"]["model"] == here and config["settings"]["scorer"]["args"]["model"] == here
    assert config["inputs"]["model"]["model"] == here
    monkeypatch.chdir(root / "B")  # where another model sits at the relative path "m"
    result = invoke("run", root / "A" / "run" / "config.json", "--out", root / "B" / "replay")
    assert result.exit_code == 0, result.output
    summary = json.loads((root / "B" / "replay" / "summary.json").read_text())
    assert summary["metrics"]["accuracy"]["mean"] == 100.0  # A's weights (B's score 0)
    assert summary["identity"] == config["identity"] and "confirmed" in result.output


def test_a_run_recorded_with_a_relative_model_path_resumes_from_its_folder(two_folders, monkeypatch):
    from spatialprobe.runner.spec import RunSpec

    root = two_folders
    monkeypatch.chdir(root / "A")
    assert _probe_relative(root, "old").exit_code == 0
    path = root / "A" / "old" / "config.json"
    here = str((root / "A" / "m").resolve())
    old = json.loads(path.read_text().replace(json.dumps(here), json.dumps("m")))  # as runs recorded it before
    old["identity"] = RunSpec.from_dict(old).identity
    path.write_text(json.dumps(old))
    monkeypatch.chdir(root / "B")  # the recorded relative path names B's weights there: refused in place
    replay = invoke("run", path)
    assert replay.exit_code == 2
    assert f"the scorer's model: 'm' -> '{(root / 'B' / 'm').resolve()}'" in "".join(replay.output.split("\n"))
    monkeypatch.chdir(root / "A")
    result = _probe_relative(root, "old")
    assert result.exit_code == 0, result.output
    assert json.loads(path.read_text())["settings"]["model"] == here  # recorded absolute from now on
