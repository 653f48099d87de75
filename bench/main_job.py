"""The main job's wall time: ``spatialprobe probe size --model dummy --out DIR`` (a fresh folder each
time: the whole run, 5,000 cells, its statistics, summary and table) and ``spatialprobe --help``,
beside ``python -c "import torch, transformers"``, measured in the same run, interleaved, so that
whatever else loads the machine loads all three alike.

    python bench/main_job.py               # median of 5 runs each (goal: the main job <= 2 s idle)
    python bench/main_job.py --runs 9 --resumed   # also the same command resuming a finished folder

One untimed run of each first (the file system's and Python's bytecode caches warm). Each line
gives the median wall time, the median CPU time (user + system of the child) and the ratio to
``import torch, transformers``. Every command runs this checkout's package (PYTHONPATH = the
repository root, first), as ``python -m spatialprobe``: what the console script runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run of ``argv`` in ``cwd`` (a folder holding no
    other spatialprobe that ``python -m`` would find first); a failure ends the bench."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def commands(work: Path, resumed: bool) -> dict[str, object]:
    """Each measured command: a name -> a function of the run's number giving its argv."""
    python, spatialprobe = sys.executable, [sys.executable, "-m", "spatialprobe"]
    found = {
        "probe size --model dummy (main job)":
            lambda k: [*spatialprobe, "probe", "size", "--model", "dummy", "--out", str(work / f"run{k}")],
        "spatialprobe --help": lambda k: [*spatialprobe, "--help"],
        'python -c "import torch, transformers"': lambda k: [python, "-c", "import torch, transformers"],
    }
    if resumed:
        found["probe size --model dummy, resumed (all cached)"] = \
            lambda k: [*spatialprobe, "probe", "size", "--model", "dummy", "--out", str(work / "resumed")]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each command (the median is reported)")
    parser.add_argument("--resumed", action="store_true", help="also time the command resuming a finished folder")
    args = parser.parse_args()
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = {**os.environ, "PYTHONPATH": path}
    work = Path(tempfile.mkdtemp(prefix="main-job-"))
    try:
        argvs = commands(work, args.resumed)
        for argv in argvs.values():  # warm-up (and the resumed command's finished folder)
            timed(argv(-1), env, work)  # type: ignore[operator]
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in argvs}
        for k in range(args.runs):
            for name, argv in argvs.items():
                times[name].append(timed(argv(k), env, work))  # type: ignore[operator]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    medians = {name: (statistics.median(w for w, _ in rows), statistics.median(c for _, c in rows))
               for name, rows in times.items()}
    torch_wall = medians['python -c "import torch, transformers"'][0]
    print(f"median of {args.runs} runs each, interleaved; load average before: "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    width = max(map(len, medians))
    for name, (wall, cpu) in medians.items():
        print(f"{name:{width}s}  wall {wall:5.2f} s  cpu {cpu:5.2f} s  "
              f"wall / import torch, transformers {wall / torch_wall:4.2f}x")
    main_wall = medians["probe size --model dummy (main job)"][0]
    print(f"main job: {main_wall:.2f} s median ({'within' if main_wall <= 2.0 else 'above'} the 2 s goal)")


if __name__ == "__main__":
    main()
