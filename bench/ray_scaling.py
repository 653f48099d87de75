"""Ray scale-out: the same probe here (no Ray) and over 1, 2 and 3 Ray workers, side by side.

Model: a randomly initialized BertForMaskedLM (``--layers``, ``--hidden``; default 4 layers,
hidden 256) with the genuine bert-base-uncased tokenizer from ../shared/models, saved in a
temporary directory and loaded by each worker through the toolkit's loading path. Task: size,
500 instances x the 10 built-in prompts = 5,000 cells, 10 batches of 512 (``CELLS_PER_COMMIT``).

Each configuration is a fresh run folder, timed end to end (``execute``: for Ray, workers start,
load the model and score, and the driver commits and evaluates), as cells per second; the rows
alternate ``--repeat`` times so a shared machine's changing load weighs on all alike, and the
best of each is kept. Every Ray run must write the local run's ``predictions.jsonl`` byte for
byte (checked). Ratios are to 1 Ray worker; the local run is the baseline without Ray.

A Ray worker takes one CPU and one torch thread (``--ray`` without GPUs); the local run uses
``--threads`` torch threads (default 1, for a like-for-like comparison with one worker). On a
machine with N free cores, k workers approach k x one worker for a model whose batches cost far
more than a worker's start (seconds); on a loaded 2-core machine the ratios show the overhead.

Usage: python bench/ray_scaling.py [--layers 4] [--hidden 256] [--workers 1,2,3] [--repeat 1]
The last line is the throughput of the most workers over 1 worker, followed by ``x``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from probe_throughput import ROOT, SHARED_TOKENIZER, build_model  # the same random BERT, any shape


def timed_run(model: Path, out: Path, workers: int | None) -> tuple[float, int]:
    """(seconds, cells) of one probe run into ``out``, here (``workers`` None) or over Ray."""
    from spatialprobe.probing.run import ProbeSettings, run_probe
    from spatialprobe.prompts.templates import builtin
    from spatialprobe.runner.scale import scaled
    from spatialprobe.tasks import data as task_data
    from spatialprobe.tasks.origin import builtin_source

    ds, cands = task_data.load("size"), builtin("size")
    settings = ProbeSettings(model=str(model), device="cpu")
    start = time.perf_counter()
    with scaled("local" if workers else None, workers):
        run_probe(ds, cands, settings, out, source=builtin_source("size"))
    return time.perf_counter() - start, len(cands.templates) * len(ds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--workers", default="1,2,3", help="Ray worker counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every configuration")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the local run")
    args = parser.parse_args()
    if not SHARED_TOKENIZER.is_dir():
        sys.exit(f"needs the genuine tokenizer at {SHARED_TOKENIZER}")
    counts = [int(w) for w in args.workers.split(",")]

    import ray
    import torch

    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="ray-bench-"))
    os.environ["SPATIALPROBE_HOME"] = str(work / "home")
    model = work / "bert"
    build_model(model, args.layers, args.hidden)
    ray.init(num_cpus=max(counts), include_dashboard=False, runtime_env={"env_vars": {
        "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "SPATIALPROBE_HOME": str(work / "home")}})
    print(f"model: random BERT ({args.layers} layers, hidden {args.hidden}), cpu fp32; {os.cpu_count()} "
          f"cores, load {os.getloadavg()[0]:.1f}; Ray cluster of {max(counts)} CPUs; local run with "
          f"{args.threads} torch thread(s)")
    rows: dict[str, float] = {}
    reference: bytes | None = None
    for round_ in range(args.repeat):
        for workers in [None, *counts]:
            name = "local (no Ray)" if workers is None else f"Ray, {workers} worker{'s' * (workers > 1)}"
            out = work / f"run-{round_}-{workers or 'local'}"
            seconds, cells = timed_run(model, out, workers)
            written = (out / "predictions.jsonl").read_bytes()
            if reference is None:
                reference = written
            assert written == reference, f"{name}: predictions differ from the first run's"
            rows[name] = max(rows.get(name, 0.0), cells / seconds)
    ray.shutdown()
    one = rows["Ray, 1 worker"] if 1 in counts else next(iter(rows.values()))
    print(f"{'configuration':<18} {'cells/s':>9} {'vs 1 worker':>12}")
    for name, rate in rows.items():
        print(f"{name:<18} {rate:>9.0f} {rate / one:>11.2f}x")
    print("predictions.jsonl: byte-identical in every configuration")
    most = f"Ray, {max(counts)} worker{'s' * (max(counts) > 1)}"
    print(f"{rows[most] / one:.2f}x")


if __name__ == "__main__":
    main()
