"""bench/gpu_suite.sh, the GPU goals' measurement prepared for one device call
(docs/gpu-suite.md): end to end on the CPU with tiny models (every stage, every output file),
a failing, a timed-out and a skipped stage recorded while the others run, and what it reads out
of each bench's output checked on the benches' own line formats."""

import base64
import gzip
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import gpu_suite
from _limits import Peak
from _suite_parse import parse_judge, parse_mllm, parse_probe, parse_synthesis
from _suite_report import OUTPUTS, goals
from _suite_stages import Stage

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "models"
STAGES = ["install", "env", "synthesis", "synthesis-checkpoint", "judge", "probe", "mllm", "profile",
          "probe-cli", "ray"]
PARTS = ["judge", "mllm-generate", "mllm-score", "probe", "synthesis"]
PEAK = Peak(500e12, 4096, "bfloat16", "NVIDIA H100 80GB HBM3")


# ---- what the suite reads out of each bench, on the benches' line formats ----------------------
def synthesis_line(batch, speed, ms, rate, gib, ratio, seconds, flops):
    """A row as bench/synthesis_throughput.py prints it on CUDA with --compare."""
    memory = f", peak {gib:5.1f} GiB"
    versus = f", fast/plain {ratio:.2f}x" if ratio else ""
    return (f"batch {batch:3d} {speed:5s}: {ms:8.1f} ms/iteration, {rate:9.1f} images/hour{memory}{versus}; "
            f"{PEAK.line(flops, seconds, '3 iterations')}")


def test_synthesis_rows_and_out_of_memory():
    text = "\n".join([
        f"device cuda:0 (NVIDIA H100 80GB HBM3), real-shape random models, paper settings: 512px, 32 cutouts, "
        f"600 iterations per image, timed over 3, decoder checkpointed; {PEAK.describe()}",
        synthesis_line(32, "plain", 2400.0, 80.0, 61.5, None, 7.2, 1.08e15),
        synthesis_line(32, "fast", 800.0, 240.0, 30.2, 3.0, 2.4, 1.08e15),
        "batch  64: out of GPU memory; larger batch sizes skipped",
        "batching speed-up (batch 32 vs batch 32, images/hour ratio):", "1.00x"])
    parsed = parse_synthesis(text)
    assert parsed["rows"] == [
        {"batch": 32, "speed": "plain", "ms_per_iteration": 2400.0, "images_per_hour": 80.0, "peak_gib": 61.5,
         "fast_over_plain": None, "peak_percent": 30.0},
        {"batch": 32, "speed": "fast", "ms_per_iteration": 800.0, "images_per_hour": 240.0, "peak_gib": 30.2,
         "fast_over_plain": 3.0, "peak_percent": 90.0}]
    assert (parsed["out_of_memory_at_batch"], parsed["peak_flops"], parsed["checkpointed"]) == (64, 500e12, True)


def test_judge_rows():
    line = ("batch  16: plain    38.50 images/s  fast   310.25 images/s  (8.00x batch 1)  fast/plain 8.06x; "
            f"fast: {PEAK.line(2e12, 0.2, '64 images')}")
    parsed = parse_judge(f"shape=base (random init) device=cuda threads=16; {PEAK.describe()}\n{line}\n"
                         "batch 16 vs batch 1: 8.00x")
    assert parsed == {"rows": [{"batch": 16, "plain_images_per_s": 38.5, "fast_images_per_s": 310.25,
                                "fast_over_plain": 8.06, "peak_percent": 2.0}], "peak_flops": 500e12}


def test_probe_figures():
    text = "\n".join([
        f"model: random BERT-large shape (24 layers, hidden 1024), cuda fp16, torch threads 16; ...; {PEAK.describe()}",
        "spatialprobe: 9.5 s for the full 5-fold search, 6.0 s of it scoring (10 calls of up to 512 cells, "
        "833 cells/s; accuracy 50.0, random weights)",
        f"{PEAK.line(300e12, 6.0, 'scoring')}",
        "previous scoring code (tests/mlm_reference.py) against the new, same model, chunk by chunk alternating: "
        "12.0 s against 6.0 s; largest score difference over 100,000 scores: 0.0e+00",
        "scoring speed-up over the previous code: 2.00x",
        "speed-up over the naive baseline: 1,234.5x"])
    assert parse_probe(text) == {"run_s": 9.5, "scoring_s": 6.0, "cells_per_s": 833.0, "scoring_peak_percent": 10.0,
                                 "previous_s": 12.0, "new_s": 6.0, "over_previous": 2.0, "over_naive": 1234.5,
                                 "peak_flops": 500e12}


def test_mllm_figures():
    text = "\n".join([
        "generate: batch 8 2.00 s (8.00 items/s) | one at a time 8.00 s (2.00 items/s) | ratio 4.00x; "
        "replies identical",
        f"score: {'batched, shared prompt (shipped)':36s} {1.0:7.2f} s ({16.0:7.2f} items/s), shipped 1.00x faster",
        f"score: {'one at a time, one row per option':36s} {5.0:7.2f} s ({3.2:7.2f} items/s), shipped 5.00x faster",
        "score: largest difference between the four ways 1.91e-06",
        PEAK.describe(), PEAK.line(50e12, 2.0, "batched generate"), PEAK.line(100e12, 1.0, "batched score"),
        "5.00x"])
    parsed = parse_mllm(text)
    assert parsed["generate"] == {"batch": 8, "batched_s": 2.0, "batched_items_per_s": 8.0, "single_s": 8.0,
                                  "single_items_per_s": 2.0, "batched_over_single": 4.0, "replies": "identical"}
    assert parsed["score"] == [
        {"way": "batched, shared prompt (shipped)", "seconds": 1.0, "items_per_s": 16.0, "shipped_faster": 1.0},
        {"way": "one at a time, one row per option", "seconds": 5.0, "items_per_s": 3.2, "shipped_faster": 5.0}]
    assert (parsed["largest_difference"], parsed["generate_peak_percent"], parsed["score_peak_percent"]) == \
        (1.91e-06, 5.0, 20.0)


def test_goals_against_the_issue_targets():
    records = {
        "synthesis": {"figures": parse_synthesis(synthesis_line(16, "fast", 80.0, 1200.0, 20.0, 2.5, 0.24, 1e14))},
        "synthesis-checkpoint": {"figures": parse_synthesis(synthesis_line(64, "fast", 400.0, 960.0, 70.0, 2.0,
                                                                           1.2, 4e14))},
        "judge": {"figures": {"rows": [{"batch": 16, "plain_images_per_s": 40.0, "fast_images_per_s": 250.0,
                                        "fast_over_plain": 6.25, "peak_percent": 3.0}]}},
        "probe": {"figures": {"scoring_s": 0.8, "run_s": 2.0, "scoring_peak_percent": 40.0, "over_previous": 7.5}},
    }
    rows = {g["goal"].split(" ")[0] + " " + g["goal"].split(" ")[1]: g for g in goals(records, "full")}
    assert rows["VQGAN+CLIP images/hour,"] == {
        "goal": "VQGAN+CLIP images/hour, paper preset (best batch, fast path)", "target": ">= 1,000",
        "value": 1200.0, "met": True, "detail": "batch 16", "peak_percent": pytest.approx(83.3, abs=0.05),
        "ratio": 2.5}
    assert (rows["judge images/s"]["value"], rows["judge images/s"]["met"]) == (250.0, False)
    assert (rows["probe scoring"]["value"], rows["probe scoring"]["met"], rows["probe scoring"]["ratio"]) == \
        (0.8, True, 7.5)
    assert rows["probe CLI"]["value"] is None and rows["probe CLI"]["met"] is None  # not measured
    assert [g["met"] for g in goals(records, "tiny")] == [None] * 6  # tiny models are not the goals' workloads


# ---- a stage that fails, runs past its limit or does not apply: recorded, the others run ---------
def test_failures_are_recorded_and_the_suite_goes_on(tmp_path, monkeypatch):
    python = sys.executable
    line = synthesis_line(16, "fast", 80.0, 1200.0, 20.0, 2.5, 0.24, 1e14)
    fake = [
        Stage("fails", "exits 2", {"tiny": [python, "-c", "print('broken here'); raise SystemExit(2)"]}, {"tiny": 30}),
        Stage("hangs", "prints a row, then sleeps", {"tiny": [python, "-u", "-c", f"print({line!r}); "
                                                                              "import time; time.sleep(120)"]},
              {"tiny": 3}, parse_synthesis),
        Stage("not-here", "does not apply", {"tiny": [python, "-c", "print('skipped: no such thing here'); "
                                                                    "raise SystemExit(3)"]}, {"tiny": 30}),
        Stage("works", "prints a row", {"tiny": [python, "-c", f"print({line!r})"]}, {"tiny": 30}, parse_synthesis),
        Stage("gpu-only", "not in the tiny mode", {"full": [python, "-c", "pass"]}, {"full": 30}),
    ]
    monkeypatch.setattr(gpu_suite, "stages", lambda device, work, python: fake)
    out = tmp_path / "out"
    rc = gpu_suite.main(["--tiny", "--device", "cpu", "--out", str(out), "--work", str(tmp_path / "work"),
                         "--wheels", str(tmp_path / "none")])
    records = json.loads((out / "summary.json").read_text())["stages"]
    assert rc == 1
    assert list(records) == ["install", "fails", "hangs", "not-here", "works", "gpu-only"]
    assert (records["install"]["status"], records["install"]["reason"]) == \
        ("skipped", f"no wheels in {tmp_path / 'none'}")
    assert (records["fails"]["status"], records["fails"]["rc"], records["fails"]["reason"]) == \
        ("failed", 2, "exit status 2: broken here")
    hung = records["hangs"]
    assert (hung["status"], hung["reason"], hung["cap_s"]) == ("timeout", "past its 3 s limit", 3)
    assert hung["seconds"] < 60  # stopped, not waited for
    assert hung["figures"]["rows"][0]["images_per_hour"] == 1200.0  # what it printed before is kept
    assert (records["not-here"]["status"], records["not-here"]["reason"]) == ("skipped", "no such thing here")
    assert (records["works"]["status"], records["works"]["figures"]["rows"][0]["fast_over_plain"]) == ("ok", 2.5)
    assert (records["gpu-only"]["status"], records["gpu-only"]["reason"]) == ("skipped", "not in --tiny")
    log = (out / "stages.log").read_text()
    assert "broken here\n\n=== fails: failed (exit status 2: broken here)" in log


def test_the_deadline_skips_what_does_not_fit(tmp_path, monkeypatch):
    fake = [Stage("late", "any", {"tiny": [sys.executable, "-c", "pass"]}, {"tiny": 30})]
    monkeypatch.setattr(gpu_suite, "stages", lambda device, work, python: fake)
    out = tmp_path / "out"
    assert gpu_suite.main(["--tiny", "--device", "cpu", "--out", str(out), "--deadline", "5", "--only", "late",
                           "--wheels", str(tmp_path / "none")]) == 0
    late = json.loads((out / "summary.json").read_text())["stages"]["late"]
    assert (late["status"], late["reason"]) == ("skipped", "5 s left of the 5 s deadline")


def test_cpu_without_tiny_is_refused(capsys):
    with pytest.raises(SystemExit):
        gpu_suite.main(["--device", "cpu"])
    assert "--device cpu runs only with --tiny" in capsys.readouterr().err


# ---- the whole suite, tiny, on the CPU ----------------------------------------------------------
def tiny_wheel(folder: Path) -> Path:
    """A one-module wheel, ``suitecheck 1.0``, standing in for the folder gpu_wheels.sh builds."""
    files = {"suitecheck/__init__.py": 'WHERE = "installed from the wheel folder"\n',
             "suitecheck-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: suitecheck\nVersion: 1.0\n",
             "suitecheck-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                               "Tag: py3-none-any\n"}

    def digest(text: str) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()

    record = "".join(f"{p},sha256={digest(t)},{len(t.encode())}\n" for p, t in files.items())
    folder.mkdir(parents=True)
    wheel = folder / "suitecheck-1.0-py3-none-any.whl"
    files["suitecheck-1.0.dist-info/RECORD"] = record + "suitecheck-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return folder


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory):
    """bench/gpu_suite.sh --tiny --device cpu, once: (its exit status, output folder, work folder, site),
    without the dev extra: ``import pytest`` fails in every stage (a module of that name that raises
    comes first on PYTHONPATH), as on a machine with the package's own dependencies only."""
    if not all((SHARED / m).is_dir() for m in ("bert-base-uncased", "llava-1.5-7b-hf")):
        pytest.skip("needs ../shared/models (bert-base-uncased, llava-1.5-7b-hf)")
    root = tmp_path_factory.mktemp("suite")
    out, work, site = root / "out", root / "work", root / "site"
    (root / "no-dev-extra").mkdir()
    (root / "no-dev-extra" / "pytest.py").write_text("raise ModuleNotFoundError(\"No module named 'pytest'\")\n")
    paths = [str(root / "no-dev-extra"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run(["bash", str(REPO / "bench" / "gpu_suite.sh"), "--tiny", "--device", "cpu", "--out", str(out),
                           "--work", str(work), "--site", str(site), "--wheels", str(tiny_wheel(root / "wheels"))],
                          env=env, capture_output=True, text=True, timeout=900)
    return done, out, work, site


def test_tiny_suite_runs_every_stage(tiny_suite):
    done, out, _, _ = tiny_suite
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUTS)
    assert summary["suite"]["outputs"] == list(OUTPUTS)
    assert (summary["suite"]["mode"], summary["suite"]["device"], summary["suite"]["deadline_s"]) == \
        ("tiny", "cpu", 900)
    stages = summary["stages"]
    assert list(stages) == STAGES
    assert {name: r["status"] for name, r in stages.items()} == {**dict.fromkeys(STAGES, "ok"), "ray": "skipped"}
    assert stages["ray"]["reason"] == "--ray with one GPU per worker needs CUDA; this run is on the CPU"
    assert all(stages[name]["seconds"] > 0 and stages[name]["command"] for name in STAGES)


def test_tiny_suite_installs_the_wheel_folder(tiny_suite):
    _, out, _, site = tiny_suite
    install = json.loads((out / "summary.json").read_text())["stages"]["install"]
    assert install["installed"] == {"suitecheck": "1.0"}
    assert install["shared_models_copied"] == []  # ../shared/models is here
    assert (site / "suitecheck" / "__init__.py").read_text() == 'WHERE = "installed from the wheel folder"\n'


def test_tiny_suite_environment(tiny_suite):
    _, out, _, _ = tiny_suite
    env = json.loads((out / "summary.json").read_text())["stages"]["env"]["figures"]
    assert (env["device"], env["gpus"], env["device_name"]) == ("cpu", 0, "cpu")
    assert env["missing"] == [] and set(env["imports"].values()) == {"ok"}
    assert set(env["requirements"]["base"]) >= {"torch", "transformers", "sacremoses", "scikit-learn"}
    assert "diffusers" in env["requirements"]["synthesis"]
    assert env["spatialprobe"]["matches_checkout"] is True
    assert list(env["peak_flops"]) == ["float32"] and env["peak_flops"]["float32"] > 0


def test_tiny_suite_bench_figures(tiny_suite):
    _, out, _, _ = tiny_suite
    stages = json.loads((out / "summary.json").read_text())["stages"]
    for name, checkpointed in (("synthesis", False), ("synthesis-checkpoint", True)):
        figures = stages[name]["figures"]
        plain, fast = figures["rows"]
        assert (plain["batch"], plain["speed"], fast["batch"], fast["speed"]) == (2, "plain", 2, "fast")
        assert figures["checkpointed"] is checkpointed
        for row in (plain, fast):  # 2 images of the tiny preset's 20 iterations at that pace
            assert row["images_per_hour"] == pytest.approx(3600 * 2 / (row["ms_per_iteration"] / 1000 * 20), rel=1e-2)
        assert fast["fast_over_plain"] == pytest.approx(fast["images_per_hour"] / plain["images_per_hour"], abs=0.006)
    judge = stages["judge"]["figures"]["rows"]
    assert [r["batch"] for r in judge] == [1, 2]
    for r in judge:
        assert r["fast_over_plain"] == pytest.approx(r["fast_images_per_s"] / r["plain_images_per_s"], abs=0.006)
    probe = stages["probe"]["figures"]
    seconds = probe["scoring_s"]  # printed to 0.1 s: 5,000 size cells in seconds ± 0.05
    assert 5000 / (seconds + 0.05) <= probe["cells_per_s"] <= 5000 / max(seconds - 0.05, 1e-9)
    assert probe["over_previous"] is None  # --compare-reference is for the GPU
    mllm = stages["mllm"]["figures"]
    assert (mllm["generate"]["batch"], mllm["generate"]["replies"]) == (2, "identical")
    assert [s["way"] for s in mllm["score"]] == ["batched, shared prompt (shipped)", "batched, one row per option",
                                                "one at a time, shared prompt", "one at a time, one row per option"]
    assert mllm["score"][0]["shipped_faster"] == 1.0


def test_tiny_suite_probe_cli(tiny_suite):
    _, out, work, _ = tiny_suite
    cli = json.loads((out / "summary.json").read_text())["stages"]["probe-cli"]["figures"]
    run = json.loads((work / "cli-probe" / "summary.json").read_text())
    assert cli["accuracy"] == run["accuracy"]["mean"]
    assert cli["execution"] == {**run["provenance"]["execution"], "items": 500}  # the manual prompt x 500
    assert cli["command"][:4] == ["-m", "spatialprobe", "probe", "size"]


def test_tiny_suite_profiles(tiny_suite):
    _, out, _, _ = tiny_suite
    summary = json.loads((out / "summary.json").read_text())
    profiles = {p["part"]: p for p in summary["profiles"]}
    assert sorted(profiles) == PARTS and {p["status"] for p in profiles.values()} == {"ok"}
    for p in profiles.values():  # on the CPU: no device events, the busiest host operators
        assert (p["device_events"], p["device_busy"], p["top_device"]) == (0, None, [])
        assert p["wall_s"] > 0 and p["top_host"][0]["self_ms"] >= p["top_host"][-1]["self_ms"]
    assert profiles["synthesis"]["step_s"] > 0  # the labelled optimisation steps
    assert profiles["probe"]["what"].startswith("probe scoring, random BERT 1x16 (fp32), one chunk of 512 size cells")
    tables = (out / "profiles.txt").read_text()
    assert [line.split(":")[0] for line in tables.splitlines() if line.startswith("== ")] == [f"== {p}" for p in PARTS]
    assert "vqgan_clip.step" in tables
    with tarfile.open(out / "traces.tar.gz") as tar:
        assert sorted(tar.getnames()) == sorted(f"{p}.trace.json.gz" for p in PARTS)
        trace = json.loads(gzip.decompress(tar.extractfile("probe.trace.json.gz").read()))
    assert trace["traceEvents"]


def test_tiny_suite_readable_files(tiny_suite):
    done, out, _, _ = tiny_suite
    markdown = (out / "summary.md").read_text()
    assert markdown.startswith("# GPU suite: tiny, cpu, ")
    assert "Tiny models: the figures test the suite, they are not the goals' workloads." in markdown
    for row in ("| VQGAN+CLIP images/hour, paper preset (best batch, fast path) | >= 1,000 |",
                "| ray | skipped (--ray with one GPU per worker needs CUDA; this run is on the CPU) |"):
        assert row in markdown
    assert markdown in done.stdout  # the device call's output tail shows it
    log = (out / "stages.log").read_text()
    assert [line.split(":")[0] for line in log.splitlines() if line.startswith("=== ") and "exit status" in line] == \
        [f"=== {name}" for name in STAGES]
    assert "batching speed-up (batch 2 vs batch 2, images/hour ratio):" in log
