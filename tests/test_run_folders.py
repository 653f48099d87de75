"""A run owns its folder, default folders follow one rule, file outputs refuse a directory, and
a run's provenance can be checked.

Every refusal is a known answer: exit code 2, the one sentence naming the file, and the folder
unchanged byte for byte (no file added either: not even ``run.lock``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from judge_helpers import write_run
from mlm_helpers import tiny_wordpiece_bert
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.errors import OutputError
from spatialprobe.provenance import git_state
from spatialprobe.runner.folders import default_run_dir, slug
from spatialprobe.store import require_own_folder

REPO = Path(__file__).resolve().parents[1]
PROBE = ["probe", "size", "--model", "dummy", "--candidates", "manual"]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def fingerprint(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` by relative path (a new file shows up too)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory) -> Path:
    """A Hugging Face checkpoint folder: save_pretrained of a tiny BertConfig model (with its own
    config.json), which a run must never take over."""
    from transformers import BertConfig, BertForMaskedLM

    path = tmp_path_factory.mktemp("hf") / "bert"
    config = BertConfig(vocab_size=40, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                        intermediate_size=8)
    BertForMaskedLM(config).save_pretrained(path)
    return path


# ---- rule 1: a run owns its folder ----------------------------------------------------------

def test_a_model_checkpoint_given_as_out_is_refused_and_left_as_it_was(bert_folder, tmp_path):
    copy = tmp_path / "bertcopy"
    shutil.copytree(bert_folder, copy)  # cp -r my-bert bertcopy
    before = fingerprint(copy)
    result = invoke(*PROBE, "--out", copy)
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"Error: --out {copy} is not a spatialprobe run: a run would overwrite "
                             f"{copy / 'config.json'}, which has no 'kind'; use a new or empty directory.\n")
    assert fingerprint(copy) == before and sorted(before) == ["config.json", "model.safetensors"]


def test_the_spine_itself_refuses_a_foreign_folder_for_every_kind(bert_folder, tmp_path):
    """The command's early check aside, the one rule sits in the spine (RunDir.claim), before the
    lock file: a run kind called from Python is refused the same way."""
    from spatialprobe.probing.run import ProbeSettings, run_probe
    from spatialprobe.prompts.templates import resolve
    from spatialprobe.tasks import data as task_data

    copy = tmp_path / "bertcopy"
    shutil.copytree(bert_folder, copy)
    before = fingerprint(copy)
    with pytest.raises(OutputError) as err:
        run_probe(task_data.load("size"), resolve("manual", "size"), ProbeSettings(model="dummy"), copy)
    assert str(err.value).endswith(f"a run would overwrite {copy / 'config.json'}, which has no 'kind'; "
                                   "use a new or empty directory.")
    assert fingerprint(copy) == before


def test_synthesize_and_the_image_store_refuse_a_foreign_folder(bert_folder, tmp_path):
    from spatialprobe.imagestore import ImageStore

    copy = tmp_path / "bertcopy"
    shutil.copytree(bert_folder, copy)
    before = fingerprint(copy)
    result = invoke("synthesize", "--prompts", "size", "--backend", "shapes", "--out", copy)
    assert result.exit_code == 2, result.output
    assert f"a run would overwrite {copy / 'config.json'}, which has no 'kind'" in result.stderr
    with pytest.raises(OutputError, match="which has no 'kind'"):
        ImageStore(copy)
    assert fingerprint(copy) == before


def test_a_project_folder_is_refused_naming_the_file_a_run_would_overwrite(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# my project\n")
    (project / "summary.json").write_text('{"mine": true}\n')
    before = fingerprint(project)
    result = invoke(*PROBE, "--out", project)
    assert result.exit_code == 2
    assert result.stderr == (f"Error: --out {project} is not empty and not a spatialprobe run (no "
                             f"config.json): a run would overwrite {project / 'summary.json'}; use a "
                             "new or empty directory.\n")
    assert fingerprint(project) == before
    (project / "summary.json").unlink()  # nothing a run writes: the folder is still not ours
    result = invoke(*PROBE, "--out", project)
    assert result.exit_code == 2
    assert (f"(no config.json): it holds {project / 'README.md'}; use a new or empty directory."
            in result.stderr)
    assert fingerprint(project) == {"README.md": before["README.md"]}


@pytest.mark.parametrize("config,problem", [
    ({"kind": "banana", "identity": "0" * 64, "settings": {}}, "has kind 'banana', which is no run kind"),
    ({"kind": "probe", "settings": {}}, "has no run identity"),
    ({"kind": "probe", "identity": "0" * 64, "settings": []}, "has 'settings' that is not an object"),
    (["kind", "probe"], "holds a JSON list, not a run's settings"),
])
def test_a_config_json_that_is_not_a_run_config_is_refused(tmp_path, config, problem):
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(OutputError) as err:
        require_own_folder(folder)
    assert str(err.value) == (f"--out {folder} is not a spatialprobe run: a run would overwrite "
                              f"{folder / 'config.json'}, which {problem}; use a new or empty directory.")


def test_a_new_path_an_empty_folder_and_a_run_stopped_before_its_config_are_taken(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    started = tmp_path / "started"  # locked and its cache opened, then stopped: ours
    started.mkdir()
    (started / "run.lock").write_text("")
    sqlite3.connect(started / "run.sqlite").close()
    for out in (tmp_path / "new" / "deeper", empty, started):
        result = invoke(*PROBE, "--out", out)
        assert result.exit_code == 0, result.output
        assert json.loads((out / "summary.json").read_text())["kind"] == "probe"


def test_a_folder_of_our_own_run_resumes_and_a_rerun_changes_no_byte(tmp_path):
    out = tmp_path / "run"
    assert invoke(*PROBE, "--out", out).exit_code == 0
    before = fingerprint(out)
    result = invoke(*PROBE, "--out", out)
    assert result.exit_code == 0, result.output
    assert fingerprint(out) == before


# ---- rule 1: file outputs refuse a directory ----------------------------------------------------

FILE_OUTPUTS = [
    ["report", "{run}", "--out", "{dir}"],
    ["judge", "gallery", "{run}", "--out", "{dir}"],
    ["annotate", "export", "{images}", "--out", "{dir}"],
    ["qa", "export", "--task", "size", "--out", "{dir}"],
    ["datasets", "export", "size", "--out", "{dir}"],
    ["datasets", "build", "sr2d", "--out", "{dir}"],
    ["prompts", "backtranslate", "--task", "size", "--out", "{dir}"],
    ["generalize", "--wordnet", "auto", "--out", "{dir}"],
]


@pytest.mark.parametrize("argv", FILE_OUTPUTS, ids=[" ".join(a[:2]) for a in FILE_OUTPUTS])
def test_every_file_output_refuses_a_directory_in_one_sentence(tmp_path, argv):
    images = tmp_path / "images"
    write_run(images, "size", [("larger", "larger", True)])
    folder = tmp_path / "taken"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine\n")
    places = {"run": str(images), "images": str(images), "dir": str(folder)}
    result = invoke(*[arg.format(**places) for arg in argv])
    assert result.exit_code == 2, result.output
    reason = ("--format release writes one JSON lines file" if argv[:2] == ["datasets", "export"]
              else "give the path of the file to write")
    assert result.stderr == f"Error: --out {folder} is a directory; {reason}.\n"
    assert fingerprint(folder) == {"keep.txt": hashlib.sha256(b"mine\n").hexdigest()}


# ---- rule 1: one rule for default output folders -----------------------------------------------

def test_default_folders_follow_one_rule_and_never_collide(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = invoke(*PROBE)
    other = invoke(*PROBE, "--seed", "1")
    again = invoke(*PROBE)
    assert (first.exit_code, other.exit_code, again.exit_code) == (0, 0, 0)
    folders = sorted((tmp_path / "runs").iterdir())
    identities = {json.loads((f / "summary.json").read_text())["identity"] for f in folders}
    assert len(folders) == 2 and len(identities) == 2  # the rerun resumed its own folder
    assert sorted(f.name for f in folders) == sorted(f"probe-size-dummy-{i[:8]}" for i in identities)
    assert f"Run written to {Path('runs') / folders[0].name}" in first.output + again.output


def test_judge_and_annotate_import_default_to_the_same_rule(tmp_path, monkeypatch):
    images = tmp_path / "images"
    write_run(images, "size", [("larger", "larger", True), ("smaller", "smaller", True)])
    monkeypatch.chdir(tmp_path)
    result = invoke("judge", "size", images, "--detector", "colour", "--depth", "colour", "--no-gallery")
    assert result.exit_code == 0, result.output
    (judged,) = (tmp_path / "runs").iterdir()
    identity = json.loads((judged / "config.json").read_text())["identity"]
    assert judged.name == f"judge-size-colour-colour-{identity[:8]}"
    assert not (images / "judge").exists()  # nothing is written into the image run any more


def test_the_rule_itself():
    assert default_run_dir("probe", ("size", "org/bert-base/"), "1a2b3c4d" + "0" * 56) == \
        Path("runs") / "probe-size-bert-base-1a2b3c4d"
    assert slug("/models/my model (v2)") == "my_model_v2"
    assert default_run_dir("qa", ("text", "", "t5"), "f" * 64) == Path("runs") / "qa-text-t5-ffffffff"


# ---- rule 9: provenance a reviewer can check ----------------------------------------------------

def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    return tiny_wordpiece_bert(tmp_path_factory.mktemp("bert"))


def test_provenance_names_commit_command_line_device_and_dtype(tmp_path, tiny_bert):
    if git_state() is None:
        pytest.skip("the toolkit does not run from a git clone here")
    out = tmp_path / "run"
    args = ["probe", "size", "--model", str(tiny_bert), "--candidates", "manual", "--device", "cpu",
            "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "spatialprobe", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    config = json.loads((out / "config.json").read_text())["provenance"]
    summary = json.loads((out / "summary.json").read_text())["provenance"]
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    assert config["git"] == {"commit": _git("rev-parse", "HEAD"), "dirty": dirty}
    assert config["command"][1:] == args
    assert summary["devices"] == [{"component": "text scorers", "device": "cpu", "dtype": "float32"}]
    assert {k: v for k, v in summary.items() if k not in ("devices", "execution")} == config
    assert summary["execution"] == {"where": "local", "workers": 1, "gpus": 0, "batches": 1, "items": 500,
                                    "retried_batches": 0}


def test_the_dummy_scorer_resolves_no_device(tmp_path):
    out = tmp_path / "run"
    assert invoke(*PROBE, "--out", out).exit_code == 0
    assert json.loads((out / "summary.json").read_text())["provenance"]["devices"] == []


def test_confirming_in_place_reads_the_run_and_changes_no_byte(tmp_path, tiny_bert):
    out = tmp_path / "run"
    assert invoke("probe", "size", "--model", tiny_bert, "--candidates", "manual", "--device", "cpu",
                  "--out", out).exit_code == 0
    before = fingerprint(out)
    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    result = invoke("run", out / "config.json")
    assert result.exit_code == 0, result.output
    assert "confirmed: identity" in result.output
    assert fingerprint(out) == before
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name != "run.lock"} == \
        {k: v for k, v in stamps.items() if k != "run.lock"}


def test_a_resumed_run_keeps_its_config_and_lists_the_resume(tmp_path):
    out = tmp_path / "run"
    assert invoke(*PROBE, "--out", out).exit_code == 0
    config = (out / "config.json").read_bytes()
    with sqlite3.connect(out / "run.sqlite") as conn:  # as if killed half way: half the cache lost
        conn.execute("DELETE FROM results WHERE rowid % 2 = 0")
    (out / "summary.json").unlink()
    assert invoke(*PROBE, "--out", out).exit_code == 0
    assert (out / "config.json").read_bytes() == config  # its provenance: when the run began
    provenance = json.loads((out / "summary.json").read_text())["provenance"]
    assert provenance["created"] == json.loads(config)["provenance"]["created"]
    assert len(provenance["resumed"]) == 1 and set(provenance["resumed"][0]) == {"created", "command"}


def test_a_full_disk_inside_sqlite_is_the_one_sentence_a_full_disk_gets(tmp_path, monkeypatch):
    """SQLite's own "database or disk is full" (here: a real SQLITE_FULL, the
    cache capped by ``PRAGMA max_page_count``) reaches the command as the full-disk OSError of
    run.sqlite, which ``spatialprobe`` says in its one sentence, not as a traceback."""
    import errno

    from ray_helpers import CountRun, CountSettings

    from spatialprobe import store
    from spatialprobe.cli import disk_message
    from spatialprobe.runner import execute

    opened = store.connect

    def capped(path):
        conn = opened(path)
        conn.execute("PRAGMA max_page_count = 4")  # a few pages: the batches do not fit
        return conn

    monkeypatch.setattr(store, "connect", capped)
    out = tmp_path / "run"
    with pytest.raises(OSError) as err:
        execute(CountRun(CountSettings(items=400, batch_size=200)), out)
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(out / "run.sqlite")
    assert disk_message(err.value) == (f"cannot write {out / 'run.sqlite'}: the disk is full. Finished work is "
                                       "kept; free space or choose another --out, and run the same command "
                                       "again to resume.")
