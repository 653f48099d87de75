"""The GPU suite's own steps (bench/gpu_suite.py runs each as one stage; docs/gpu-suite.md):

* ``env``: what the machine is and what the suite runs on: torch, CUDA, the GPUs, a matmul peak
  of each dtype the benches use (bench/_limits.py), the installed version of every package the
  project requires (``None``: missing), whether the imports the benches need work, and whether
  the installed ``spatialprobe`` is the checkout's code (a hash of its ``*.py`` files).
* ``cli-probe``: ``spatialprobe probe size`` timed end to end as a user runs it (a fresh process:
  start, imports, model load, the 5-fold search, files), on a random BERT-large-shape model built
  beforehand (``probe_throughput.build_model``; not timed). ``--ray``: the same over Ray with one
  GPU per worker, where more than one GPU is present (else exit status 3: skipped, one sentence).
* ``profile``: one step of each bench's fast (shipped) path under ``torch.profiler``, after a
  warm-up: a table of the busiest operators, a Chrome trace, and a summary (wall time, device
  time, kernels, small kernels, host syncs, copies) per part, each part with its own time budget.

Each step writes a JSON file (``--json`` or ``--dir``) that the suite reads; what it prints is for
the log. Usage: ``python bench/gpu_steps.py env|cli-probe|profile --help``. The profiled workloads
are in ``_profile_parts.py``, the profiling and its summary in ``_profile_summary.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _limits import bench_device, peak_matmul
from _profile_parts import PARTS, bert_dir
from _profile_summary import PartTimeout, budget, profile_one
from gpu_suite import SKIPPED, source_hash

# No sys.path change here: ``env`` reports the spatialprobe that PYTHONPATH gives (the installed
# wheel on the GPU machine), as the CLI stages run it. The bench modules the other steps import
# put this checkout and tests/ first, as when they run on their own.
ROOT = Path(__file__).resolve().parents[1]

#: The extras whose packages the GPU benches import (``ray`` only for the ``ray`` stage).
EXTRAS = ("synthesis", "judge", "vl", "multigpu", "ray")
#: Imports that must work for the benches to run (a package can be installed yet fail to import).
IMPORTS = ("spatialprobe.cli", "spatialprobe.synthesis.vqgan_clip", "spatialprobe.detectors.hf",
           "spatialprobe.models.mllm", "spatialprobe.models.masked_lm", "diffusers", "sacremoses")


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str) + "\n")


# ---- env ---------------------------------------------------------------------------------------
def requirements() -> dict[str, dict[str, str | None]]:
    """Each of spatialprobe's requirements (base, then each extra in ``EXTRAS``): its installed
    version, ``None`` where it is missing."""
    import importlib.metadata as metadata

    groups: dict[str, dict[str, str | None]] = {}
    for line in metadata.requires("spatialprobe") or []:
        name = re.match(r"[A-Za-z0-9._-]+", line)
        extra = re.search(r"""extra\s*==\s*['"]([\w-]+)['"]""", line)
        group = extra.group(1) if extra else "base"
        if name is None or group not in ("base", *EXTRAS):
            continue
        try:
            version: str | None = metadata.version(name.group(0))
        except metadata.PackageNotFoundError:
            version = None
        groups.setdefault(group, {})[name.group(0)] = version
    return groups


def import_checks() -> dict[str, str]:
    """``ok`` or the error of each module in ``IMPORTS``."""
    import importlib

    return {module: imported(importlib.import_module, module) for module in IMPORTS}


def imported(load: Callable[[str], Any], module: str) -> str:
    try:
        load(module)
    except Exception as err:  # the record of what broke is the point
        return f"{type(err).__name__}: {err}"
    return "ok"


def nvidia_smi() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    query = "name,memory.total,driver_version,clocks.max.sm,clocks.max.mem,power.limit"
    done = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv"],
                          capture_output=True, text=True, timeout=30)
    return (done.stdout or done.stderr).strip()


def env_step(args: argparse.Namespace) -> int:
    import torch

    import spatialprobe

    device = bench_device(args.device)
    gpu = device.type == "cuda"
    dtypes = (torch.bfloat16, torch.float16) if gpu else (torch.float32,)
    peaks = {str(d).removeprefix("torch."): peak_matmul(device, d) for d in dtypes}
    installed = Path(spatialprobe.__file__).resolve().parent
    groups = requirements()
    needed = {name: v for group in ("base", *EXTRAS[:-1]) for name, v in groups.get(group, {}).items()}
    info = {
        "python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda,
        "device": str(device), "gpus": torch.cuda.device_count() if gpu else 0,
        "device_name": torch.cuda.get_device_name(device) if gpu else "cpu",
        "gpu_memory_gib": round(torch.cuda.get_device_properties(device).total_memory / 2**30, 1) if gpu else None,
        "capability": ".".join(map(str, torch.cuda.get_device_capability(device))) if gpu else None,
        "torch_threads": torch.get_num_threads(), "nvidia_smi": nvidia_smi() if gpu else None,
        "peak_flops": {name: p.flops_per_s for name, p in peaks.items()},
        "peak_described": {name: p.describe() for name, p in peaks.items()},
        "requirements": groups, "missing": sorted(n for n, v in needed.items() if v is None),
        "imports": import_checks(),
        "spatialprobe": {"version": spatialprobe.__version__, "directory": str(installed),
                         "source_hash": source_hash(installed),
                         "checkout_hash": source_hash(ROOT / "spatialprobe")},
    }
    package = info["spatialprobe"]
    package["matches_checkout"] = package["source_hash"] == package["checkout_hash"]
    write_json(args.json, info)
    print(f"{info['device_name']} x{info['gpus']}, torch {info['torch']} (CUDA {info['cuda']}), "
          f"python {info['python']}")
    for p in peaks.values():
        print(p.describe())
    print(f"missing requirements: {', '.join(info['missing']) or 'none'}; imports: "
          + ", ".join(f"{m} {'ok' if r == 'ok' else 'FAILED (' + r + ')'}" for m, r in info["imports"].items()))
    print(f"spatialprobe {info['spatialprobe']['version']} from {installed}: "
          f"{'the checkout' if info['spatialprobe']['matches_checkout'] else 'NOT the checkout'}'s code")
    return 0


# ---- cli-probe ---------------------------------------------------------------------------------
def ray_skip_reason(device: str) -> str | None:
    """Why ``--ray`` with one GPU per worker cannot run here, or None."""
    import importlib.util

    if not device.startswith("cuda"):
        return "--ray with one GPU per worker needs CUDA; this run is on the CPU"
    import torch

    if torch.cuda.device_count() < 2:
        return f"{torch.cuda.device_count()} GPU here; --ray with one GPU per worker needs more than one"
    if importlib.util.find_spec("ray") is None:
        return "ray is not installed here (its wheel does not fit the 64 MiB the device tool carries)"
    return None


def cli_probe_step(args: argparse.Namespace) -> int:
    if args.ray and (reason := ray_skip_reason(args.device)):
        print(f"skipped: {reason}")
        return SKIPPED
    workers = None
    if args.ray:  # torch only where needed: this process's imports are not the CLI's time
        import torch

        workers = torch.cuda.device_count()
    model, built = bert_dir(args.work, args.layers, args.hidden)
    out = args.work / ("cli-probe-ray" if args.ray else "cli-probe")
    shutil.rmtree(out, ignore_errors=True)
    argv = [sys.executable, "-m", "spatialprobe", "probe", "size", "--model", str(model), "--device",
            args.device, "--candidates", args.candidates, "--out", str(out)]
    argv += ["--ray", "--workers", str(workers)] if args.ray else []
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=args.work, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        print(done.stdout[-4000:] + done.stderr[-4000:])
        print(f"spatialprobe probe exited with status {done.returncode}")
        return 1
    summary = json.loads((out / "summary.json").read_text())
    result = {"seconds": seconds, "model_build_s": built, "command": argv[1:],
              "accuracy": summary["accuracy"]["mean"],
              "execution": summary.get("provenance", {}).get("execution"), "workers": workers}
    alone = args.work / "probe-cli.json"
    if args.ray and alone.is_file():
        result["speedup_over_one_gpu"] = json.loads(alone.read_text())["seconds"] / seconds
    write_json(args.json, result)
    print(f"probe CLI{' --ray' if args.ray else ''}: {seconds:.1f} s end to end (spatialprobe probe size, "
          f"--candidates {args.candidates}, {args.device}{f', {workers} workers' if workers else ''}); "
          f"random BERT {args.layers}x{args.hidden} built beforehand in {built:.1f} s, not counted")
    if "speedup_over_one_gpu" in result:
        print(f"{result['speedup_over_one_gpu']:.2f}x")
    return 0


# ---- profile -----------------------------------------------------------------------------------
def profile_step(args: argparse.Namespace) -> int:
    import torch

    device = bench_device(args.device)
    parts = args.parts.split(",")
    budgets = [int(b) for b in args.budget.split(",")]
    if unknown := [p for p in parts if p not in PARTS]:
        sys.exit(f"--parts: unknown {', '.join(unknown)}; choose among {', '.join(PARTS)}")
    if len(budgets) != len(parts):
        sys.exit(f"--budget gives {len(budgets)} budgets for {len(parts)} parts")
    args.dir.mkdir(parents=True, exist_ok=True)
    failed = 0
    for part, seconds in zip(parts, budgets, strict=True):
        started = time.perf_counter()
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        try:
            with budget(seconds), tempfile.TemporaryDirectory() as tmp:
                for name, what, fn in PARTS[part](args.size, device, Path(tmp), args.work):
                    summary = profile_one(name, what, fn, device, args.dir)
                    write_json(args.dir / f"{name}.json", summary)
                    busy = f", device busy {100 * summary['device_busy']:.0f} %" if summary["device_busy"] else ""
                    print(f"profile {name}: {1000 * summary['wall_s']:.1f} ms{busy}, {summary['device_events']} "
                          f"device events ({summary['device_events_under_10us']} under 10 us), "
                          f"{summary['host_syncs']} host syncs, {summary['conversions']} conversions")
        except (Exception, PartTimeout) as err:  # one part's failure is recorded, the others run
            failed += 1
            write_json(args.dir / f"{part}.json", {"part": part, "status": "timeout" if isinstance(err, PartTimeout)
                                                   else "failed", "error": f"{type(err).__name__}: {err}",
                                                   "seconds": time.perf_counter() - started})
            print(f"profile {part}: {type(err).__name__}: {err}")
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    env = steps.add_parser("env", help="the machine and the installation")
    env.add_argument("--device", default="cuda")
    env.add_argument("--json", type=Path, required=True)
    cli = steps.add_parser("cli-probe", help="spatialprobe probe size, timed end to end")
    cli.add_argument("--device", default="cuda")
    cli.add_argument("--layers", type=int, default=24)
    cli.add_argument("--hidden", type=int, default=1024)
    cli.add_argument("--candidates", default="builtin", help="builtin (10 prompts) or manual (1)")
    cli.add_argument("--work", type=Path, required=True, help="where the model and the run go")
    cli.add_argument("--json", type=Path, required=True)
    cli.add_argument("--ray", action="store_true", help="over Ray, one GPU per worker")
    prof = steps.add_parser("profile", help="torch.profiler of one step of each bench")
    prof.add_argument("--device", default="cuda")
    prof.add_argument("--size", choices=("full", "tiny"), default="full", help="the workloads' shapes")
    prof.add_argument("--parts", default=",".join(PARTS))
    prof.add_argument("--budget", default="60,20,30,40", help="seconds per part, comma-separated")
    prof.add_argument("--work", type=Path, required=True, help="where shared models go")
    prof.add_argument("--dir", type=Path, required=True, help="where tables, traces and summaries go")
    args = parser.parse_args()
    if hasattr(args, "work"):
        args.work.mkdir(parents=True, exist_ok=True)
    step = {"env": env_step, "cli-probe": cli_probe_step, "profile": profile_step}[args.step]
    sys.exit(step(args))


if __name__ == "__main__":
    main()
