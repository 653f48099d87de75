"""Every GPU bench, plain against fast, in one prepared call: the measurement of issue 33.

Run it through ``bench/gpu_suite.sh`` (docs/gpu-suite.md says which device call to make):

    bash bench/gpu_suite.sh [--device cuda] [--quick | --tiny] [--wheels DIR] [--out DIR]
                            [--only STAGE,...] [--deadline SECONDS]

1. ``install``: the wheels in ``--wheels`` (bench/gpu_wheels.sh builds the folder here: the
   project's own wheel and what the GPU image lacks) into ``--site``, with no package index, put
   first on every stage's PYTHONPATH; the genuine configs in its ``shared/models`` are copied to
   ``../shared/models`` where they are missing (``../shared`` does not travel to that machine).
2. One stage after another, each a fresh process with its own time limit; a stage that fails or
   runs past its limit is recorded, what it printed is parsed as far as it got, and the next
   stage runs. The suite keeps a deadline of its own (8 minutes, ``--quick`` 2): a stage is
   given at most the time left and is skipped, recorded as such, when too little is left.
3. After every stage the files under ``--out`` (default ``$OUT``) are rewritten, so a suite
   stopped from outside still leaves what it measured:

   * ``summary.json``: the suite (mode, device, commit, seconds), the machine (``env``), every
     stage (status, seconds, limit, command, parsed figures, last line) and every profile;
   * ``summary.md``: the goals of issue 33 against what was measured, a table of the stages and
     one of the profiles;
   * ``stages.log``: every stage's command and everything it printed;
   * ``profiles.txt``: the profiler's operator table of one step of each bench;
   * ``traces.tar.gz``: the profiler's Chrome traces (open in https://ui.perfetto.dev).

``--tiny`` runs every stage on tiny models (the CPU test, tests/test_gpu_suite.py; with
``--device cuda``, a smoke test of seconds). ``--device cpu`` is refused without ``--tiny``:
the other workloads are real-shape models meant for a GPU. Exit status 0 when every stage ran or
was skipped for a stated reason, 1 when one failed or ran past its limit.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
SKIPPED = 3
"""The exit status of a stage that cannot apply here (it prints why as its last line)."""
DEADLINES = {"full": 470, "quick": 115, "tiny": 900}
"""Seconds the suite allows itself (the device call's 8 and 2 minutes, less the output)."""
MIN_STAGE_S = 10
"""A stage is not started with less time than this left before the deadline."""
SHARED_MODELS = ("bert-base-uncased", "llava-1.5-7b-hf")
OUTPUTS = ("summary.json", "summary.md", "stages.log", "profiles.txt", "traces.tar.gz")


def source_hash(package: Path) -> str:
    """sha256 over the relative paths and contents of a package's ``*.py`` files: the same for
    an installed wheel and the checkout it was built from."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


# ---- stages --------------------------------------------------------------------------------------
@dataclass
class Stage:
    """One bench run: its command in each mode (absent: not run in that mode) and time limits."""

    name: str
    what: str
    argv: dict[str, list[str]]
    cap: dict[str, int]
    parse: Callable[[str], dict[str, Any]] | None = None


def stages(device: str, work: Path, python: str) -> list[Stage]:
    """The suite, in the order it runs: the goals' benches first, then the profiles, the CLI."""
    bench = [python, "-u"]
    synth = [*bench, str(BENCH / "synthesis_throughput.py"), "--device", device, "--compare"]
    judge = [*bench, str(BENCH / "judge_throughput.py"), "--device", device]
    probe = [*bench, str(BENCH / "probe_throughput.py"), "--device", device]
    mllm = [*bench, str(BENCH / "mllm_throughput.py"), "--device", device, "--family", "llava"]
    steps = [*bench, str(BENCH / "gpu_steps.py")]
    cli = [*steps, "cli-probe", "--device", device, "--work", str(work)]
    profile = [*steps, "profile", "--device", device, "--work", str(work), "--dir", str(work / "profiles")]
    return [
        Stage("env", "the machine, the installation, matmul peaks",
              {m: [*steps, "env", "--device", device, "--json", str(work / "env.json")] for m in DEADLINES},
              {"full": 40, "quick": 25, "tiny": 120}),
        Stage("synthesis", "VQGAN+CLIP at the paper preset, plain vs fast, batch 16",
              {"full": [*synth, "--batch-sizes", "16", "--measure-iterations", "3"],
               "quick": [*synth, "--batch-sizes", "16", "--measure-iterations", "2"],
               "tiny": [*synth, "--batch-sizes", "2", "--measure-iterations", "1"]},
              {"full": 120, "quick": 70, "tiny": 180}, parse_synthesis),
        Stage("synthesis-checkpoint", "VQGAN+CLIP, decoder checkpointed, plain vs fast, batches 32 and 64",
              {"full": [*synth, "--checkpoint", "--batch-sizes", "32,64", "--measure-iterations", "2"],
               "tiny": [*synth, "--checkpoint", "--batch-sizes", "2", "--measure-iterations", "1"]},
              {"full": 150, "tiny": 180}, parse_synthesis),
        Stage("judge", "OWL-ViT B/32 at 768 px + DPT B/16 at 384 px, plain vs fast",
              {"full": [*judge, "--shape", "base", "--batches", "1,16,32", "--images", "64"],
               "quick": [*judge, "--shape", "base", "--batches", "16", "--images", "32"],
               "tiny": [*judge, "--shape", "tiny", "--batches", "1,2", "--images", "2"]},
              {"full": 60, "quick": 30, "tiny": 180}, parse_judge),
        Stage("probe", "probe size, BERT-large shape, 5,000 cells: new vs previous scoring, naive baselines",
              {"full": [*probe, "--compare-reference", "--sample", "20"],
               "quick": [*probe, "--sample", "0"],
               "tiny": [*probe, "--layers", "1", "--hidden", "16", "--sample", "0"]},
              {"full": 90, "quick": 45, "tiny": 180}, parse_probe),
        Stage("mllm", "multimodal-LLM adapter, LLaVA-1.5-7B shape: batched vs one at a time",
              {"full": [*mllm, "--shape", "real", "--items", "16", "--batch-size", "8", "--new-tokens", "8"],
               "quick": [*mllm, "--shape", "real", "--items", "8", "--batch-size", "8", "--new-tokens", "4"],
               "tiny": [*mllm, "--shape", "tiny", "--items", "2", "--batch-size", "2", "--options", "2",
                        "--new-tokens", "2"]},
              {"full": 80, "quick": 45, "tiny": 180}, parse_mllm),
        Stage("profile", "torch.profiler: one step of each bench's fast path",
              {"full": [*profile, "--size", "full", "--budget", "50,20,30,40"],
               "tiny": [*profile, "--size", "tiny", "--budget", "120,120,120,120"]},
              {"full": 150, "tiny": 300}),
        Stage("probe-cli", "spatialprobe probe size end to end (BERT-large shape, 5,000 cells)",
              {"full": [*cli, "--json", str(work / "probe-cli.json")],
               "tiny": [*cli, "--layers", "1", "--hidden", "16", "--candidates", "manual",
                        "--json", str(work / "probe-cli.json")]},
              {"full": 70, "tiny": 180}),
        Stage("ray", "the probe CLI over Ray, one GPU per worker (more than one GPU only)",
              {"full": [*cli, "--ray", "--json", str(work / "probe-cli-ray.json")],
               "tiny": [*cli, "--ray", "--layers", "1", "--hidden", "16", "--candidates", "manual",
                        "--json", str(work / "probe-cli-ray.json")]},
              {"full": 90, "tiny": 180}),
    ]


# ---- parsing what the benches print ------------------------------------------------------------
NUMBER = r"([-+]?\d[\d,]*\.?\d*(?:e[-+]?\d+)?)"
SI = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


def number(text: str | None) -> float | None:
    return None if text is None else float(text.replace(",", ""))


def flops_per_s(line: str) -> float | None:
    """The measured peak of a bench's header line (``measured peak 37.7 GFLOP/s``), in FLOP/s."""
    found = re.search(r"measured peak ([\d.]+) ?([kMGTP]?)FLOP/s", line)
    return float(found.group(1)) * SI[found.group(2)] if found else None


def peak_percent(line: str) -> float | None:
    found = re.search(r"= ([\d.]+) % of the measured peak", line)
    return float(found.group(1)) if found else None


def last_line(text: str) -> str | None:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else None


def parse_synthesis(text: str) -> dict[str, Any]:
    """bench/synthesis_throughput.py: one row per batch size and path."""
    rows, oom = [], None
    pattern = re.compile(rf"^batch\s+(\d+)(?: (plain|fast|auto)\s*)?:\s+{NUMBER} ms/iteration,\s+{NUMBER} "
                         rf"images/hour(?:, peak\s+{NUMBER} GiB)?(?:, fast/plain {NUMBER}x)?")
    for line in text.splitlines():
        if found := pattern.search(line):
            batch, speed, ms, rate, gib, ratio = found.groups()
            rows.append({"batch": int(batch), "speed": speed or "auto", "ms_per_iteration": number(ms),
                         "images_per_hour": number(rate), "peak_gib": number(gib),
                         "fast_over_plain": number(ratio), "peak_percent": peak_percent(line)})
        elif found := re.search(r"^batch\s+(\d+): out of GPU memory", line):
            oom = int(found.group(1))
    header = next((line for line in text.splitlines() if "measured peak" in line), "")
    return {"rows": rows, "out_of_memory_at_batch": oom, "peak_flops": flops_per_s(header),
            "checkpointed": "decoder checkpointed" in header}


def parse_judge(text: str) -> dict[str, Any]:
    """bench/judge_throughput.py: images/s of each path at each batch size."""
    rows = []
    for line in text.splitlines():
        if found := re.search(r"^batch\s+(\d+): (.*?)\(", line):
            rates = dict(re.findall(rf"(plain|fast)\s+{NUMBER} images/s", found.group(2)))
            ratio = re.search(rf"fast/plain {NUMBER}x", line)
            rows.append({"batch": int(found.group(1)), "plain_images_per_s": number(rates.get("plain")),
                         "fast_images_per_s": number(rates.get("fast")),
                         "fast_over_plain": number(ratio.group(1)) if ratio else None,
                         "peak_percent": peak_percent(line)})
    header = next((line for line in text.splitlines() if "measured peak" in line), "")
    return {"rows": rows, "peak_flops": flops_per_s(header)}


def search(pattern: str, text: str, group: int = 1) -> float | None:
    found = re.search(pattern, text, re.MULTILINE)
    return number(found.group(group)) if found else None


def parse_probe(text: str) -> dict[str, Any]:
    """bench/probe_throughput.py: the run, its scoring, the previous code, the baselines."""
    scoring = next((line for line in text.splitlines() if line.startswith("scoring:")), "")
    header = next((line for line in text.splitlines() if "measured peak" in line), "")
    return {
        "run_s": search(rf"^spatialprobe: {NUMBER} s for the full 5-fold search", text),
        "scoring_s": search(rf"s for the full 5-fold search, {NUMBER} s of it scoring", text),
        "cells_per_s": search(rf"{NUMBER} cells/s; accuracy", text),
        "scoring_peak_percent": peak_percent(scoring),
        "previous_s": search(rf"alternating: {NUMBER} s against", text),
        "new_s": search(rf"alternating: {NUMBER} s against {NUMBER} s", text, 2),
        "over_previous": search(rf"^scoring speed-up over the previous code: {NUMBER}x", text),
        "over_naive": search(rf"^speed-up over the naive baseline: {NUMBER}x", text),
        "peak_flops": flops_per_s(header),
    }


def parse_mllm(text: str) -> dict[str, Any]:
    """bench/mllm_throughput.py: generate batched vs one at a time, the four ways of scoring."""
    generate = re.search(rf"^generate: batch (\d+) {NUMBER} s \({NUMBER} items/s\) \| one at a time {NUMBER} s "
                         rf"\({NUMBER} items/s\) \| ratio {NUMBER}x; replies (\w+)", text, re.MULTILINE)
    score = [{"way": way.strip(), "seconds": number(s), "items_per_s": number(rate), "shipped_faster": number(x)}
             for way, s, rate, x in re.findall(rf"^score: (.+?)\s+{NUMBER} s \(\s*{NUMBER} items/s\), shipped "
                                               rf"{NUMBER}x faster", text, re.MULTILINE)]
    lines = text.splitlines()
    return {
        "generate": None if generate is None else {
            "batch": int(generate.group(1)), "batched_s": number(generate.group(2)),
            "batched_items_per_s": number(generate.group(3)), "single_s": number(generate.group(4)),
            "single_items_per_s": number(generate.group(5)), "batched_over_single": number(generate.group(6)),
            "replies": generate.group(7)},
        "score": score,
        "largest_difference": search(rf"largest difference between the four ways {NUMBER}", text),
        "generate_peak_percent": peak_percent(next((x for x in lines if x.startswith("batched generate:")), "")),
        "score_peak_percent": peak_percent(next((x for x in lines if x.startswith("batched score:")), "")),
    }


# ---- running ------------------------------------------------------------------------------------
def readable(output: str) -> str:
    """What a terminal would show: each line's text after its last carriage return (progress bars)."""
    return "\n".join(line.rsplit("\r", 1)[-1] if line.rstrip("\r") else line for line in output.split("\n"))


def run_stage(argv: list[str], limit: float, env: dict[str, str]) -> tuple[str, int | None, str, float]:
    """(status, exit status, output, seconds) of one stage, in a process group of its own that is
    stopped whole (TERM, then KILL) when it runs past ``limit``."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=limit)
        status = {0: "ok", SKIPPED: "skipped"}.get(process.returncode, "failed")
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
                output, _ = process.communicate(timeout=10)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                output = b""
        status = "timeout"
    return status, process.returncode, readable(output.decode(errors="replace")), time.perf_counter() - start


def install(wheels: Path, site: Path, env: dict[str, str]) -> dict[str, Any]:
    """Install every wheel in ``wheels`` into ``site`` (no index, no dependency resolution: the
    folder holds exactly what the machine lacks), and copy the shared model configs it carries
    to ``../shared/models`` where they are missing."""
    record: dict[str, Any] = {"name": "install", "what": f"pip install {wheels}/*.whl --target {site}"}
    found = sorted(wheels.glob("*.whl")) if wheels.is_dir() else []
    if not found:
        return {**record, "status": "skipped", "reason": f"no wheels in {wheels}", "seconds": 0.0}
    argv = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
            "--no-cache-dir", "--upgrade", "--target", str(site), *map(str, found)]
    status, rc, output, seconds = run_stage(argv, 120, env)
    installed = {}
    for info in sorted(site.glob("*.dist-info")):
        name, _, version = info.name.removesuffix(".dist-info").partition("-")
        installed[name] = version
    copied, target = [], REPO.parent / "shared" / "models"
    for model in SHARED_MODELS:
        carried = wheels / "shared" / "models" / model
        if carried.is_dir() and not (target / model).is_dir():
            shutil.copytree(carried, target / model)
            copied.append(model)
    manifest = wheels / "MANIFEST.json"
    return {**record, "status": status, "rc": rc, "seconds": seconds, "command": shlex.join(argv),
            "output": output, "installed": installed, "shared_models_copied": copied,
            "manifest": json.loads(manifest.read_text()) if manifest.is_file() else None}


def child_env(work: Path, site: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [*([str(site)] if site else []), str(REPO), *filter(None, [env.get("PYTHONPATH")])]
    env.update(PYTHONPATH=os.pathsep.join(paths), PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", MPLBACKEND="Agg",
               SPATIALPROBE_HOME=str(work / "home"))
    if site:
        env["PATH"] = f"{site / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def read_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


# ---- the files under --out ----------------------------------------------------------------------
def best_fast(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    fast = [r for r in rows if r["speed"] != "plain" and r["images_per_hour"] is not None]
    return max(fast, key=lambda r: r["images_per_hour"]) if fast else None


def fmt(value: float | None, spec: str = ".1f", unit: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{unit}"


def goals(records: dict[str, dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """The goals of issue 33 against what the stages measured (``None``: not measured; ``met``
    is left out in the tiny mode, whose models are not the goals' workloads)."""
    def figures(name: str) -> dict[str, Any]:
        return records.get(name, {}).get("figures") or {}

    synthesis = [r for name in ("synthesis", "synthesis-checkpoint") for r in figures(name).get("rows", [])]
    best = best_fast(synthesis) or {}
    judge = figures("judge").get("rows", [])
    at16 = next((r for r in judge if r["batch"] == 16), max(judge, key=lambda r: r["batch"], default={}))
    probe, cli, mllm = figures("probe"), figures("probe-cli"), figures("mllm")
    generate = mllm.get("generate") or {}
    shipped = next((s for s in mllm.get("score", []) if "shipped" in s["way"]), {})
    slowest = max((s["shipped_faster"] for s in mllm.get("score", []) if s["shipped_faster"]), default=None)

    def row(goal: str, target: str, value: float | None, met: Callable[[float], bool] | None = None,
            detail: str | None = None, peak: float | None = None, ratio: float | None = None) -> dict[str, Any]:
        return {"goal": goal, "target": target, "value": value,
                "met": None if value is None or met is None else met(value),
                "detail": detail, "peak_percent": peak, "ratio": ratio}

    rows = [
        row("VQGAN+CLIP images/hour, paper preset (best batch, fast path)", ">= 1,000",
            best.get("images_per_hour"), lambda v: v >= 1000, f"batch {best['batch']}" if best else None,
            best.get("peak_percent"), best.get("fast_over_plain")),
        row("judge images/s (batch 16, fast path)", ">= 300", at16.get("fast_images_per_s"), lambda v: v >= 300,
            f"batch {at16['batch']}" if at16 else None, at16.get("peak_percent"), at16.get("fast_over_plain")),
        row("probe scoring seconds (size, 5,000 cells)", "<= 1", probe.get("scoring_s"), lambda v: v <= 1,
            f"whole search {probe['run_s']} s" if probe.get("run_s") else None, probe.get("scoring_peak_percent"),
            probe.get("over_previous")),
        row("probe CLI seconds end to end", "(was 21.5)", cli.get("seconds")),
        row("multimodal LLM generate items/s (batched)", "(measure)", generate.get("batched_items_per_s"),
            detail=f"batch {generate['batch']}, replies {generate['replies']}" if generate else None,
            peak=mllm.get("generate_peak_percent"), ratio=generate.get("batched_over_single")),
        row("multimodal LLM score items/s (shipped)", "(measure)", shipped.get("items_per_s"),
            peak=mllm.get("score_peak_percent"), ratio=slowest),
    ]
    if mode == "tiny":
        for row in rows:
            row["met"] = None
    return rows


def headline(record: dict[str, Any]) -> str:
    """One cell of what a stage measured."""
    f = record.get("figures") or {}
    name = record["name"]
    if name.startswith("synthesis"):
        return "; ".join(f"b{r['batch']} {r['speed']} {fmt(r['images_per_hour'])} img/h"
                         + (f" ({r['fast_over_plain']}x)" if r["fast_over_plain"] else "") for r in f.get("rows", [])) \
            + (f"; OOM at b{f['out_of_memory_at_batch']}" if f.get("out_of_memory_at_batch") else "")
    if name == "judge":
        return "; ".join(f"b{r['batch']} plain {fmt(r['plain_images_per_s'])} fast {fmt(r['fast_images_per_s'])} img/s"
                         for r in f.get("rows", []))
    if name == "probe":
        return (f"scoring {fmt(f.get('scoring_s'))} s, run {fmt(f.get('run_s'))} s, "
                f"vs previous {fmt(f.get('over_previous'), '.2f', 'x')}")
    if name == "mllm":
        g, shipped = f.get("generate") or {}, (f.get("score") or [{}])[0]
        return (f"generate batched {fmt(g.get('batched_items_per_s'), '.2f')} vs one at a time "
                f"{fmt(g.get('single_items_per_s'), '.2f')} items/s; score shipped "
                f"{fmt(shipped.get('items_per_s'), '.2f')} items/s")
    if name.startswith("probe-cli") or name == "ray":
        return f"{fmt(f.get('seconds'))} s end to end" if f else ""
    if name == "env":
        missing = ", ".join(f.get("missing", [])) or "none"
        return f"{f.get('device_name')} x{f.get('gpus')}, missing requirements: {missing}" if f else ""
    if name == "profile":
        return ", ".join(f"{p['part']} {p['status']}" for p in f.get("parts", []))
    if name == "install":
        return ", ".join(f"{k} {v}" for k, v in (record.get("installed") or {}).items())
    return ""


def markdown(summary: dict[str, Any]) -> str:
    suite, records = summary["suite"], summary["stages"]
    env = (records.get("env") or {}).get("figures") or {}
    lines = [f"# GPU suite: {suite['mode']}, {env.get('device_name', suite['device'])}, {suite['started']}", "",
             f"`{suite['command']}` at commit {suite['commit']}; {suite['seconds']:.0f} s of a {suite['deadline_s']} s "
             f"deadline. Installed spatialprobe is the checkout's code: "
             f"{(env.get('spatialprobe') or {}).get('matches_checkout', 'unknown')}.", ""]
    if suite["mode"] == "tiny":
        lines += ["Tiny models: the figures test the suite, they are not the goals' workloads.", ""]
    lines += ["## Goals (issue 33)", "",
              "| goal | target | measured | met | share of measured peak | fast / plain | detail |",
              "|---|---|---|---|---|---|---|"]
    for g in summary["goals"]:
        met = {True: "yes", False: "**no**", None: ""}[g["met"]]
        lines.append(f"| {g['goal']} | {g['target']} | {fmt(g['value'], '.2f')} | {met} | "
                     f"{fmt(g['peak_percent'], '.1f', ' %')} | {fmt(g['ratio'], '.2f', 'x')} | {g['detail'] or ''} |")
    lines += ["", "## Stages", "", "| stage | status | seconds (limit) | measured |", "|---|---|---|---|"]
    for record in records.values():
        reason = f" ({record['reason']})" if record.get("reason") else ""
        lines.append(f"| {record['name']} | {record['status']}{reason} | {fmt(record.get('seconds'), '.0f')} "
                     f"({record.get('cap_s', '—')}) | {headline(record)} |")
    profiles = summary.get("profiles") or []
    if profiles:
        lines += ["", "## Profiles (one step each; tables in profiles.txt, traces in traces.tar.gz)", "",
                  "| part | status | wall ms | device busy | device events (< 10 µs) | host syncs | conversions | "
                  "busiest op (self time on the device; on the host without one) |",
                  "|---|---|---|---|---|---|---|---|"]
        for p in profiles:
            if p["status"] != "ok":
                lines.append(f"| {p['part']} | {p['status']}: {p.get('error', '')} | | | | | | |")
                continue
            top = (p["top_device"] or p["top_host"] or [None])[0]
            busiest = f"{top['op'][:60]} {top['self_ms']:.1f} ms" if top else ""
            busy = fmt(p["device_busy"] and 100 * p["device_busy"], ".0f", " %")
            lines.append(f"| {p['part']} | ok | {1000 * p['wall_s']:.1f} | {busy} | {p['device_events']} "
                         f"({p['device_events_under_10us']}) | {p['host_syncs']} | {p['conversions']} | {busiest} |")
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, summary: dict[str, Any], work: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tables = sorted((work / "profiles").glob("*.txt"))
    if tables:
        (out / "profiles.txt").write_text("\n".join(t.read_text() for t in tables))
    traces = sorted((work / "profiles").glob("*.trace.json.gz"))
    if traces:
        with tarfile.open(out / "traces.tar.gz", "w:gz") as tar:
            budget = 15 * 2**20  # the device tool brings back files of at most 16 MiB
            for trace in sorted(traces, key=lambda t: t.stat().st_size):
                if trace.stat().st_size <= budget:
                    tar.add(trace, arcname=trace.name)
                    budget -= trace.stat().st_size
    summary["goals"] = goals(summary["stages"], summary["suite"]["mode"])
    summary["suite"]["outputs"] = [*OUTPUTS[:2], *(name for name in OUTPUTS[2:] if (out / name).is_file())]
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    (out / "summary.md").write_text(markdown(summary))


def profiles(work: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((work / "profiles").glob("*.json"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu (with --tiny only)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="fewer batch sizes and iterations: 2 minutes")
    size.add_argument("--tiny", action="store_true", help="tiny models: the CPU test of the suite")
    parser.add_argument("--wheels", type=Path, default=REPO / ".gpu-suite", help="bench/gpu_wheels.sh's folder")
    parser.add_argument("--site", type=Path, default=Path(tempfile.gettempdir()) / "gpu-suite-site",
                        help="where the wheels are installed")
    parser.add_argument("--out", type=Path, default=Path(os.environ["OUT"]) if os.environ.get("OUT")
                        else REPO / "runs" / "gpu-suite", help="where the files go (default: $OUT)")
    parser.add_argument("--only", help="comma-separated stages to run after the install (the rest are recorded "
                        "as skipped)")
    parser.add_argument("--deadline", type=float, help="seconds the suite allows itself")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a new temporary one, removed)")
    args = parser.parse_args(argv)
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    if args.device.startswith("cpu") and mode != "tiny":
        parser.error("--device cpu runs only with --tiny: the other workloads are real-shape models meant for a GPU")
    deadline = args.deadline or DEADLINES[mode]
    work = args.work or Path(tempfile.mkdtemp(prefix="gpu-suite-"))
    work.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    table = stages(args.device, work, python)
    only = set(args.only.split(",")) if args.only else None
    if only and (unknown := only - {s.name for s in table}):
        parser.error(f"--only: no stage {', '.join(sorted(unknown))}; the stages: " + ", ".join(s.name for s in table))
    start = time.perf_counter()
    commit = checkout_commit(args.wheels)
    summary: dict[str, Any] = {
        "suite": {"mode": mode, "device": args.device, "deadline_s": deadline, "commit": commit,
                  "command": shlex.join(["bash", "bench/gpu_suite.sh", *(argv if argv is not None else sys.argv[1:])]),
                  "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                  "seconds": 0.0, "outputs": []},
        "stages": {}, "profiles": [],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    log = (args.out / "stages.log").open("w")

    def record(entry: dict[str, Any], output: str = "") -> None:
        summary["stages"][entry["name"]] = entry
        summary["suite"]["seconds"] = time.perf_counter() - start
        summary["profiles"] = profiles(work)
        log.write(f"=== {entry['name']}: {entry.get('command', '')}\n{output}\n=== {entry['name']}: "
                  f"{entry['status']}{' (' + entry['reason'] + ')' if entry.get('reason') else ''}, "
                  f"{entry.get('seconds') or 0:.1f} s, exit status {entry.get('rc')}\n\n")
        log.flush()
        write_outputs(args.out, summary, work)
        print(f"[{summary['suite']['seconds']:5.0f} s] {entry['name']:<21} {entry['status']:<8} "
              f"{entry.get('seconds') or 0:6.1f} s  {entry.get('reason') or headline(entry)}", flush=True)

    entry = install(args.wheels, args.site, child_env(work, None))  # always: every stage needs it
    record(entry, entry.pop("output", ""))
    installed = summary["stages"]["install"]["status"] == "ok"
    env = child_env(work, args.site if installed else None)
    for stage in table:
        left = deadline - (time.perf_counter() - start)
        if reason := why_not(stage, mode, only, left, deadline):
            record({"name": stage.name, "what": stage.what, "status": "skipped", "reason": reason})
        else:
            record(*measure(stage, stage.argv[mode], min(stage.cap[mode], left), env, work))
    log.close()
    bad = [r["name"] for r in summary["stages"].values() if r["status"] in ("failed", "timeout")]
    print(markdown(summary))
    print(f"files in {args.out}: {', '.join(p.name for p in sorted(args.out.iterdir()))}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


def why_not(stage: Stage, mode: str, only: set[str] | None, left: float, deadline: float) -> str | None:
    """Why ``stage`` is skipped in this run, or None when it runs."""
    if mode not in stage.argv:
        return f"not in --{mode}"
    if only is not None and stage.name not in only:
        return "not in --only"
    if left < MIN_STAGE_S:
        return f"{left:.0f} s left of the {deadline:.0f} s deadline"
    return None


def measure(stage: Stage, argv: list[str], limit: float, env: dict[str, str], work: Path) -> tuple[dict[str, Any], str]:
    """(the stage's record, its output): run within ``limit`` seconds, its figures read."""
    status, rc, output, seconds = run_stage(argv, limit, env)
    entry: dict[str, Any] = {"name": stage.name, "what": stage.what, "status": status, "rc": rc, "seconds": seconds,
                             "cap_s": round(limit), "command": shlex.join(argv), "last_line": last_line(output)}
    if status == "skipped":
        entry["reason"] = (entry["last_line"] or "").removeprefix("skipped: ")
    elif status == "timeout":
        entry["reason"] = f"past its {limit:.0f} s limit"
    elif status == "failed":
        entry["reason"] = f"exit status {rc}: {entry['last_line']}"
    entry["figures"] = figures_of(stage, output, work)
    return entry, output


def checkout_commit(wheels: Path) -> str:
    """This checkout's commit; where it has no git history (a copied tree), the one the wheel
    folder's MANIFEST.json names."""
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip()
    manifest = read_json(wheels / "MANIFEST.json")
    return f"{manifest['commit'][:7]} (the wheel folder's)" if manifest else "unknown"


def figures_of(stage: Stage, output: str, work: Path) -> dict[str, Any]:
    """What a stage measured: parsed from its output (as far as it got), or its step's JSON."""
    if stage.name == "env":
        return read_json(work / "env.json") or {}
    if stage.name in ("probe-cli", "ray"):
        return read_json(work / f"{'probe-cli-ray' if stage.name == 'ray' else 'probe-cli'}.json") or {}
    if stage.name == "profile":
        return {"parts": [{"part": p["part"], "status": p["status"]} for p in profiles(work)]}
    if stage.parse is None:
        return {}
    try:
        return stage.parse(output)
    except (ValueError, KeyError, IndexError) as err:  # a bench whose output changed: say so
        return {"parse_error": f"{type(err).__name__}: {err}"}


if __name__ == "__main__":
    sys.exit(main())
