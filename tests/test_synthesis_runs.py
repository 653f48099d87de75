"""Runs into the image store: image rows, resume, refusal to mix runs, kill -9 mid-run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image
from synthesis_helpers import one_torch_thread, tiny_clip, tiny_settings, tiny_vqmodel  # noqa: F401

from spatialprobe.imagestore import ImageStore
from spatialprobe.synthesis import image_seed, load_prompts, synthesize

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return str(tiny_vqmodel(root / "vq")), str(tiny_clip(root / "clip"))


def vqgan_args(models, **settings):
    return {"vqgan": models[0], "clip": models[1], "preset": "paper",
            "settings": tiny_settings(**settings), "device": "cpu", "precision": "auto"}


def prompt_file(tmp_path, count):
    path = tmp_path / "prompts.txt"
    path.write_text("".join(f"A man number {i} washes the car.\n" for i in range(count)),
                    encoding="utf-8")
    return load_prompts(str(path))


def test_run_fills_the_image_rows_and_resumes(tmp_path, models):
    prompts = prompt_file(tmp_path, 2)
    out = tmp_path / "run"
    first = synthesize(prompts, out, "vqgan-clip", vqgan_args(models, snapshots=(2,)),
                       images_per_prompt=2, seed=5, batch_size=3)
    assert (first.total, first.already_done, first.generated) == (4, 0, 4)
    records = list(ImageStore(out).images())
    assert [(r.prompt_id, r.image_index) for r in records] == [
        ("line-0001", 0), ("line-0001", 1), ("line-0002", 0), ("line-0002", 1)]
    for r in records:
        assert r.seed == image_seed(5, r.prompt_id, r.image_index)
        assert r.backend == "vqgan-clip" and r.model.startswith("vqgan=")
        assert r.clip_score is not None and Image.open(r.path).size == (32, 32)
        assert (out / "snapshots" / f"{r.path.stem}_it0002.png").exists()
    assert len({r.seed for r in records}) == 4
    with sqlite3.connect(out / "run.sqlite") as conn:  # the spine's one cache table
        key, value = conn.execute("SELECT key, value FROM results ORDER BY key").fetchone()
    row = json.loads(value)
    assert key == "line-0001#0" and row["path"] == "images/line-0001_00.png"
    assert (row["prompt"], row["prompt_index"], row["meta"]) == ("A man number 0 washes the car.", 0,
                                                                  {"line": 1, "template": "none"})
    assert len(row["weights_hash"].split(";")) == 2 and row["settings"]["iterations"] == 4
    assert (row["settings"]["device"], row["settings"]["images_per_prompt"]) == ("cpu", 2)
    assert [p.prompt_id for p in ImageStore(out).prompts()] == ["line-0001", "line-0002"]
    before = {r.path: r.path.stat().st_mtime_ns for r in records}

    # the same run with another batch size (runtime) resumes and makes nothing
    again = synthesize(prompts, out, "vqgan-clip", vqgan_args(models, snapshots=(2,)),
                       images_per_prompt=2, seed=5, batch_size=1)
    assert (again.total, again.already_done, again.generated) == (4, 4, 0)
    assert {p: p.stat().st_mtime_ns for p in before} == before  # finished images untouched
    # an image whose file was deleted is made again, the same bytes
    gone = records[1].path
    data = gone.read_bytes()
    gone.unlink()
    assert [(r.prompt_id, r.image_index) for r in ImageStore(out).missing_images()] == [("line-0001", 1)]
    repaired = synthesize(prompts, out, "vqgan-clip", vqgan_args(models, snapshots=(2,)),
                          images_per_prompt=2, seed=5, batch_size=1)
    assert (repaired.already_done, repaired.generated) == (3, 1) and gone.read_bytes() == data

    summary = json.loads((out / "summary.json").read_text())
    assert (summary["schema"], summary["kind"], summary["seed"]) == ("spatialprobe.summary/1", "synthesize", 5)
    assert summary["dataset"] == str(tmp_path / "prompts.txt") and summary["task"] is None
    assert summary["model"] == f"vqgan={models[0]};clip={models[1]}"
    assert summary["metrics"] == {} and summary["accuracy"] == {"mean": None, "std": None, "n": 0}
    details = summary["details"]
    assert (details["images_finished"], details["images_total"]) == (4, 4)
    assert (details["already_done"], details["generated_this_invocation"]) == (3, 1)
    assert details["generation"]["settings"]["iterations"] == 4
    assert details["generation"]["vqgan"] == models[0]
    assert summary["provenance"]["toolkit"] == "spatialprobe"
    config = json.loads((out / "config.json").read_text())
    assert config["identity"] == summary["identity"]
    assert config["runtime"] == {"batch_size": 1, "device": "cpu", "precision": "auto", "ray": None,
                                 "workers": None}
    assert config["settings"]["prompt_set"]["count"] == 2
    table = (out / "table.md").read_text()
    assert "| 5 | 4/4 |" in table and '"iterations": 4' in table
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert sorted((p["prompt_id"], p["image_index"]) for p in preds) == [
        (r.prompt_id, r.image_index) for r in records]

    # more images per prompt is another run (its identity covers every image it makes)
    with pytest.raises(ValueError, match=r"already holds another run \(settings that differ: "
                                         r"images_per_prompt: 2 -> 3\)"):
        synthesize(prompts, out, "vqgan-clip", vqgan_args(models, snapshots=(2,)),
                   images_per_prompt=3, seed=5)


def test_a_different_run_in_the_same_directory_is_refused(tmp_path, models):
    prompts = prompt_file(tmp_path, 1)
    synthesize(prompts, tmp_path / "run", "vqgan-clip", vqgan_args(models, iterations=1))
    with pytest.raises(ValueError, match=r"already holds another run \(settings that differ: "
                                         r"generation.settings.iterations: 1 -> 2; "
                                         r"seed: 0 -> 3\)\. Use another --out"):
        synthesize(prompts, tmp_path / "run", "vqgan-clip", vqgan_args(models, iterations=2),
                   seed=3)


def test_a_failed_first_attempt_does_not_lock_the_directory(tmp_path, models):
    prompts = prompt_file(tmp_path, 1)
    out = tmp_path / "run"
    with pytest.raises(ValueError, match="not a multiple"):  # fails after config.json is written
        synthesize(prompts, out, "vqgan-clip", vqgan_args(models, iterations=1, size=33))
    (tmp_path / "prompts.txt").write_text("A girl sits on the chair.\n", encoding="utf-8")
    fixed = synthesize(load_prompts(str(tmp_path / "prompts.txt")), out, "vqgan-clip",
                       vqgan_args(models, iterations=1))
    assert fixed.generated == 1
    assert [(r.prompt_id, r.prompt) for r in ImageStore(out).images()] == [
        ("line-0001", "A girl sits on the chair.")]  # the corrected prompt, not the first one
    assert json.loads((out / "config.json").read_text())["settings"]["generation"]["settings"]["size"] == 32


def _finished_rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:  # table not created yet
        return 0


def test_kill_9_mid_run_then_resume(tmp_path, models):
    count = 12
    prompt_file(tmp_path, count)
    out = tmp_path / "run"
    command = [sys.executable, "-m", "spatialprobe", "synthesize", "--prompts",
               str(tmp_path / "prompts.txt"), "--backend", "vqgan-clip", "--vqgan", models[0],
               "--clip", models[1], "--size", "32", "--cutouts", "4", "--set", "large_cutouts=1",
               "--iterations", "30", "--batch-size", "1", "--device", "cpu", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while _finished_rows(out / "run.sqlite") < 2:
        assert proc.poll() is None, proc.stdout.read().decode()
        assert time.time() < deadline, "no image finished within 120 s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()

    store = ImageStore(out)
    kept = {r.path: r.path.read_bytes() for r in store.images()}
    assert 2 <= len(kept) < count, "the run should have been killed mid-way"
    assert len(store.prompts()) == count  # the prompt list is recorded before any image
    for png in (out / "images").glob("*.png"):  # no half image under a final name
        Image.open(png).load()
    stray = out / "images" / f"line-0012_00.png.{proc.pid}.tmp"  # as a kill mid-write leaves
    stray.write_bytes(b"\x89PNG half")

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{count}/{count} images ({len(kept)} were already there" in done.stdout
    records = list(ImageStore(out).images())
    assert len(records) == count
    assert all(path.read_bytes() == data for path, data in kept.items())
    assert not list((out / "images").glob("*.tmp"))  # the killed writer's strays are gone


def test_resume_with_an_edited_prompt_file_is_refused(tmp_path, models):
    path = tmp_path / "prompts.txt"
    path.write_text("A man washes the car.\nA man drives the car.\n", encoding="utf-8")
    args = vqgan_args(models, iterations=1)
    synthesize(load_prompts(str(path)), tmp_path / "run", "vqgan-clip", args)
    path.write_text("A dog.\nA man washes the car.\nA man drives the car.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"already holds prompt line-0001 as 'A man washes the "
                                         r"car.', but .*prompts.txt now gives 'A dog.'"):
        synthesize(load_prompts(str(path)), tmp_path / "run", "vqgan-clip", args)
    records = list(ImageStore(tmp_path / "run").images())
    assert [(r.prompt_id, r.prompt) for r in records] == [
        ("line-0001", "A man washes the car."), ("line-0002", "A man drives the car.")]
    # appending lines is another run too: the run's identity covers its prompts
    path.write_text("A man washes the car.\nA man drives the car.\nA dog.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"settings that differ: prompt_set.count: 2 -> 3; "
                                         r"prompt_set.version: '[0-9a-f]{16}' -> '[0-9a-f]{16}'\)"):
        synthesize(load_prompts(str(path)), tmp_path / "run", "vqgan-clip", args)
    again = synthesize(load_prompts(str(path)), tmp_path / "run2", "vqgan-clip", args)
    assert (again.already_done, again.generated) == (0, 3)
