"""Every GPU bench, plain against fast, in one prepared call: the GPU goals' measurement.

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
   * ``summary.md``: the GPU goals against what was measured, a table of the stages and
     one of the profiles;
   * ``stages.log``: every stage's command and everything it printed;
   * ``profiles.txt``: the profiler's operator table of one step of each bench;
   * ``traces.tar.gz``: the profiler's Chrome traces (open in https://ui.perfetto.dev).

``--tiny`` runs every stage on tiny models (the CPU test, tests/test_gpu_suite.py; with
``--device cuda``, a smoke test of seconds). ``--device cpu`` is refused without ``--tiny``:
the other workloads are real-shape models meant for a GPU. Exit status 0 when every stage ran or
was skipped for a stated reason, 1 when one failed or ran past its limit.

This script runs the stages that ``_suite_stages.py`` lists; ``_suite_parse.py`` reads what
each bench prints and ``_suite_report.py`` writes the goals and the files under ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _suite_parse import last_line
from _suite_report import headline, markdown, write_outputs
from _suite_stages import Stage, stages

REPO = Path(__file__).resolve().parents[1]
SKIPPED = 3
"""The exit status of a stage that cannot apply here (it prints why as its last line)."""
DEADLINES = {"full": 470, "quick": 115, "tiny": 900}
"""Seconds the suite allows itself (the device call's 8 and 2 minutes, less the output)."""
MIN_STAGE_S = 10
"""A stage is not started with less time than this left before the deadline."""
SHARED_MODELS = ("bert-base-uncased", "llava-1.5-7b-hf")


def source_hash(package: Path) -> str:
    """sha256 over the relative paths and contents of a package's ``*.py`` files: the same for
    an installed wheel and the checkout it was built from."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


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
