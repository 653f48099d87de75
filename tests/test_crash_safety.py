"""Crash safety as a test: ``kill -9`` at a random point, rerun, and compare with a run that was
never interrupted (rows, model calls, output bytes); two processes on one ``--out``; file modes.

The CLI runs in subprocesses through ``call_counter.py``, which logs every model call before it
starts; the counts show what the killed run and the rerun computed between them.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlm_helpers import tiny_wordpiece_bert
from synthesis_helpers import tiny_clip, tiny_vqmodel

from spatialprobe.files import atomic_path, atomic_write_text, write_json
from spatialprobe.store import RunDir, RunInUse

REPO = Path(__file__).resolve().parents[1]
COUNTER = Path(__file__).resolve().with_name("call_counter.py")
CHUNK = 512          # cells per commit of the run's cache (probing/run.py: CELLS_PER_COMMIT)
PAIRS = 500          # every ordered pair of objects of different size levels
TEMPLATES = 8        # x 500 pairs = 4,000 cells, committed in 8 chunks
WORDS = 2            # larger, smaller: scores per cell (one cache row per cell)
PROBE_CELLS = PAIRS * TEMPLATES
BATCH = 64           # sequences per forward pass; one sequence per cell (both words are one piece)
PROMPTS = 10         # synthesis: images, one per prompt, one per call (--batch-size 1)


# ---- running the CLI -----------------------------------------------------------------------

def launch(args: list[str], calls: Path, home: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
           "SPATIALPROBE_HOME": str(home), "SPATIALPROBE_CALLS": str(calls)}
    return subprocess.Popen([sys.executable, str(COUNTER), *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_ctrl_c_as_in_a_terminal)


def _ctrl_c_as_in_a_terminal() -> None:
    """In the child: SIGINT raises KeyboardInterrupt, as in a terminal (a pytest-xdist worker
    ignores SIGINT, and a child inherits an ignored signal)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[int, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out + err


def calls(path: Path, kind: str) -> list[int]:
    """Sizes of the model calls logged in ``path``, in order."""
    if not path.exists():
        return []
    return [int(n) for k, n in (line.split() for line in path.read_text().splitlines()) if k == kind]


def count_rows(db: Path, table: str) -> int:
    """Committed rows; 0 while the database or the table does not exist yet."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def wait_for_rows(proc: subprocess.Popen, db: Path, table: str, rows: int) -> None:
    deadline = time.time() + 120
    while count_rows(db, table) < rows:
        assert proc.poll() is None, finish(proc)[1]
        assert time.time() < deadline, f"fewer than {rows} rows in {table} within 120 s"
        time.sleep(0.02)


def stop_the_holder(procs: list[subprocess.Popen], run: Path, table: str) -> subprocess.Popen:
    """Once one of ``procs`` holds the run's lock and has committed a row, SIGSTOP it: it then
    holds the lock however slowly the other one starts. Returns it."""
    deadline = time.time() + 120
    while count_rows(run / "run.sqlite", table) < 1:
        assert any(p.poll() is None for p in procs), [finish(p)[1] for p in procs]
        assert time.time() < deadline, f"no row in {table} within 120 s"
        time.sleep(0.02)
    holder = next(p for p in procs if p.pid == int((run / "run.lock").read_text()))
    holder.send_signal(signal.SIGSTOP)
    return holder


def kill_9(proc: subprocess.Popen) -> None:
    assert proc.poll() is None, "the run ended before the kill: make it longer"
    proc.send_signal(signal.SIGKILL)
    proc.communicate()


def outputs(run: Path, volatile: tuple[str, ...] = ("provenance",)) -> dict[str, bytes]:
    """Every result file of a run by relative path (run.sqlite and the lock aside); JSON files
    without the keys that describe the invocation rather than the results."""
    found = {}
    for path in sorted(run.rglob("*")):
        name = str(path.relative_to(run))
        if path.is_dir() or name.startswith("run.sqlite") or name == "run.lock":
            continue
        data = path.read_bytes()
        if name == "table.md" and (run / "summary.json").exists():  # its header shows the run's time
            created = json.loads((run / "summary.json").read_text())["provenance"]["created"]
            data = data.replace(created.encode(), b"<created>")
        if path.suffix == ".json":
            parsed = {k: v for k, v in json.loads(data).items() if k not in volatile}
            data = json.dumps(parsed, sort_keys=True).encode()
        found[name] = data
    return found


# ---- masked-LM probing ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def probe_setup(tmp_path_factory):
    """A tiny BERT, 500 size pairs, 8 templates, and an uninterrupted reference run."""
    from spatialprobe import tasks
    from spatialprobe.prompts.templates import builtin

    SIZE_LEVELS = tasks.get("size").levels
    root = tmp_path_factory.mktemp("probe")
    model = tiny_wordpiece_bert(root / "bert")
    levels = {obj: n for n, level in enumerate(SIZE_LEVELS) for obj in level}
    pairs = [(a, b) for a in levels for b in levels if levels[a] != levels[b]]
    assert len(pairs) == PAIRS
    (root / "pairs.csv").write_text("obj_a,obj_b,label\n" + "".join(
        f"{a},{b},{int(levels[a] > levels[b])}\n" for a, b in pairs), encoding="utf-8")
    write_json(root / "candidates.json", {"task": "size", "templates": builtin("size").templates[:TEMPLATES],
                                          "answers": {"larger": ["larger"], "smaller": ["smaller"]}})

    def args(out: Path) -> list[str]:
        return ["probe", "size", "--model", str(model), "--pairs", str(root / "pairs.csv"),
                "--candidates", str(root / "candidates.json"), "--device", "cpu", "--batch-size", str(BATCH),
                "--out", str(out)]

    reference = root / "reference"
    code, log = finish(launch(args(reference), root / "reference.calls", root / "home"))
    assert code == 0, log
    full, rest = divmod(PROBE_CELLS, CHUNK)
    assert calls(root / "reference.calls", "cells") == [CHUNK] * full + [rest]
    passes = [BATCH] * (CHUNK // BATCH)
    assert calls(root / "reference.calls", "forward") == passes * full + [BATCH] * (rest // BATCH) + [
        rest % BATCH]
    assert count_rows(reference / "run.sqlite", "results") == PROBE_CELLS
    return args, reference, root / "reference.calls"


def score_rows(run: Path) -> list[tuple]:
    with sqlite3.connect(run / "run.sqlite") as conn:
        return conn.execute("SELECT key, value FROM results ORDER BY key").fetchall()


@pytest.mark.parametrize("seed", [1])
def test_probe_killed_at_a_random_point_then_rerun_equals_an_uninterrupted_run(
        probe_setup, tmp_path, seed):
    args, reference, reference_calls = probe_setup
    rng = random.Random(seed)
    out, log = tmp_path / "run", tmp_path / "calls"
    proc = launch(args(out), log, tmp_path / "home")
    # after a random one of the first 4 of 8 commits, somewhere inside the next chunk (a chunk
    # takes 0.1 s or more here, so the kill lands well before the last commit)
    wait_for_rows(proc, out / "run.sqlite", "results", rng.randint(1, 4) * CHUNK)
    time.sleep(rng.uniform(0, 0.05))
    kill_9(proc)
    committed = count_rows(out / "run.sqlite", "results")  # cells
    assert committed % CHUNK == 0 and 0 < committed < PROBE_CELLS
    killed, killed_passes = calls(log, "cells"), calls(log, "forward")

    code, output = finish(launch(args(out), log, tmp_path / "home"))
    assert code == 0, output
    # the resume says how much was already done
    assert (f"{out}: resuming: {committed:,} of {PROBE_CELLS:,} items were already computed and are kept; "
            f"{PROBE_CELLS - committed:,} left to compute.") in output
    rerun, rerun_passes = calls(log, "cells")[len(killed):], calls(log, "forward")[len(killed_passes):]
    # (a) the same rows as the uninterrupted run, each once (and the same scores)
    assert score_rows(out) == score_rows(reference)
    assert len({row[0] for row in score_rows(out)}) == PROBE_CELLS
    assert all(len(json.loads(row[1])) == WORDS for row in score_rows(out))
    # (b) nothing committed is scored again; what the kill lost is at most the chunk in flight
    assert sum(rerun) == PROBE_CELLS - committed
    assert 0 <= sum(killed) - committed <= CHUNK
    committed_passes = committed // BATCH  # chunks are whole batches, in every run
    assert len(rerun_passes) == len(calls(reference_calls, "forward")) - committed_passes
    assert 0 <= len(killed_passes) - committed_passes <= CHUNK // BATCH
    # (c) the same bytes (provenance aside: it holds the time of the run)
    assert outputs(out) == outputs(reference)
    assert set(outputs(out)) == {"config.json", "predictions.jsonl", "summary.json", "table.md"}


def test_ctrl_c_exits_130_with_one_line_keeping_what_was_committed(probe_setup, tmp_path):
    # SIGINT (Ctrl-C) in the middle of scoring
    args, _, _ = probe_setup
    out, log = tmp_path / "run", tmp_path / "calls"
    proc = launch(args(out), log, tmp_path / "home")
    wait_for_rows(proc, out / "run.sqlite", "results", CHUNK)
    proc.send_signal(signal.SIGINT)
    code, output = finish(proc)
    assert code == 130, output
    assert output.rstrip().splitlines()[-1] == ("Interrupted (Ctrl-C): what a run had committed is kept; run "
                                                "the same command again to resume it.")
    assert count_rows(out / "run.sqlite", "results") >= CHUNK  # kept: the rerun resumes (the test above)


def test_two_probes_on_one_directory_one_runs_the_other_is_refused(probe_setup, tmp_path):
    args, reference, _ = probe_setup
    out = tmp_path / "run"
    logs = [tmp_path / "calls-0", tmp_path / "calls-1"]
    procs = [launch(args(out), log, tmp_path / "home") for log in logs]
    holder = stop_the_holder(procs, out, "results")
    holder_pid = holder.pid
    other = next(p for p in procs if p is not holder)
    try:
        code, output = finish(other)
    finally:
        holder.send_signal(signal.SIGCONT)
    assert code == 2, output
    assert (f"{out} is in use by another spatialprobe process (pid {holder_pid}); wait for it to "
            "finish or use another --out.") in output
    code, output = finish(holder)
    assert code == 0, output
    cells = {p.pid: sum(calls(log, "cells")) for p, log in zip(procs, logs, strict=True)}
    assert cells == {holder.pid: PROBE_CELLS, other.pid: 0}  # no cell scored twice
    assert score_rows(out) == score_rows(reference)
    assert outputs(out) == outputs(reference)


# ---- image synthesis -----------------------------------------------------------------------

# What describes the invocation rather than the images: differs between a rerun and one run.
SYNTH_VOLATILE = ("provenance",)
INVOCATION = ("already_done", "generated_this_invocation", "seconds_this_invocation", "images_per_hour")
ROW_VOLATILE = ("seconds", "created")  # per image: its batch's wall time and when it was written


def synth_outputs(run: Path) -> dict[str, bytes]:
    found = outputs(run, SYNTH_VOLATILE)
    summary = json.loads(found["summary.json"])
    summary["details"] = {k: v for k, v in summary["details"].items() if k not in INVOCATION}
    found["summary.json"] = json.dumps(summary, sort_keys=True).encode()
    rows = [json.loads(line) for line in found["predictions.jsonl"].decode().splitlines()]
    found["predictions.jsonl"] = json.dumps([{k: v for k, v in r.items() if k not in ROW_VOLATILE}
                                             for r in rows], sort_keys=True).encode()
    table = found.pop("table.md").decode().splitlines()
    rows = [line.rsplit("|", 2)[0] for line in table[:3]]  # the last column is images/hour
    found["table.md"] = "\n".join(rows + table[3:]).encode()
    return found


@pytest.fixture(scope="module")
def synth_setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    vq, clip = str(tiny_vqmodel(root / "vq")), str(tiny_clip(root / "clip"))
    (root / "prompts.txt").write_text("".join(f"A man number {i} washes the car.\n"
                                              for i in range(PROMPTS)), encoding="utf-8")

    def args(out: Path) -> list[str]:
        return ["synthesize", "--prompts", str(root / "prompts.txt"), "--backend", "vqgan-clip",
                "--vqgan", vq, "--clip", clip, "--size", "32", "--cutouts", "4",
                "--set", "large_cutouts=1", "--iterations", "10", "--batch-size", "1",
                "--device", "cpu", "--out", str(out)]

    reference = root / "reference"
    code, log = finish(launch(args(reference), root / "reference.calls", root / "home"))
    assert code == 0, log
    assert calls(root / "reference.calls", "images") == [1] * PROMPTS
    return args, reference


def test_synthesis_killed_at_a_random_point_then_rerun_equals_an_uninterrupted_run(
        synth_setup, tmp_path):
    args, reference = synth_setup
    rng = random.Random(2)
    out, log = tmp_path / "run", tmp_path / "calls"
    proc = launch(args(out), log, tmp_path / "home")
    wait_for_rows(proc, out / "run.sqlite", "results", rng.randint(1, PROMPTS // 2))
    time.sleep(rng.uniform(0, 0.2))
    kill_9(proc)
    committed = count_rows(out / "run.sqlite", "results")
    assert 0 < committed < PROMPTS
    killed = calls(log, "images")

    code, output = finish(launch(args(out), log, tmp_path / "home"))
    assert code == 0, output
    rerun = calls(log, "images")[len(killed):]
    assert count_rows(out / "run.sqlite", "results") == PROMPTS                  # (a)
    with sqlite3.connect(out / "run.sqlite") as conn:
        paths = conn.execute("SELECT COUNT(DISTINCT json_extract(value, '$.path')) FROM results")
        assert paths.fetchone()[0] == PROMPTS
    assert sum(rerun) == PROMPTS - committed                                     # (b)
    assert 0 <= sum(killed) - committed <= 1  # --batch-size 1: one image in flight
    assert synth_outputs(out) == synth_outputs(reference)                        # (c)
    assert len([name for name in synth_outputs(out) if name.startswith("images/")]) == PROMPTS


def test_two_synthesis_runs_on_one_directory_one_runs_the_other_is_refused(synth_setup, tmp_path):
    args, reference = synth_setup
    out = tmp_path / "run"
    logs = [tmp_path / "calls-0", tmp_path / "calls-1"]
    procs = [launch(args(out), log, tmp_path / "home") for log in logs]
    holder = stop_the_holder(procs, out, "results")
    holder_pid = holder.pid
    other = next(p for p in procs if p is not holder)
    try:
        code, output = finish(other)
    finally:
        holder.send_signal(signal.SIGCONT)
    assert code == 2, output
    assert (f"{out} is in use by another spatialprobe process (pid {holder_pid}); wait for it to "
            "finish or use another --out.") in output
    code, output = finish(holder)
    assert code == 0, output
    images = {p.pid: sum(calls(log, "images")) for p, log in zip(procs, logs, strict=True)}
    assert images == {holder.pid: PROMPTS, other.pid: 0}  # no image made twice
    assert synth_outputs(out) == synth_outputs(reference)


# ---- the lock and the writer, in one process -------------------------------------------------

def test_a_second_process_is_refused_and_a_dead_holder_releases_the_lock(tmp_path):
    run = RunDir(tmp_path / "run")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from spatialprobe.store import RunDir; run = RunDir(sys.argv[1]); "
         "run.start({'kind': 'test'}); print('locked', flush=True); time.sleep(60)",
         str(run.path)], env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(RunInUse, match=rf"^{run.path} is in use by another spatialprobe process "
                                           rf"\(pid {holder.pid}\); wait for it to finish or use "
                                           r"another --out\.$"):
            run.start({"kind": "test"})
    finally:
        holder.send_signal(signal.SIGKILL)  # the OS drops a dead process's flock
        holder.communicate()
    run.start({"kind": "test"})
    assert RunDir(run.path).start({"kind": "test"})["kind"] == "test"  # one process may reopen it


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_atomic_writes_get_the_mode_the_umask_gives(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "table.md", "| a |\n")
        write_json(tmp_path / "summary.json", {"a": 1})
        with atomic_path(tmp_path / "plot.png") as tmp:
            tmp.write_bytes(b"\x89PNG")
    finally:
        os.umask(old)
    for name in ("table.md", "summary.json", "plot.png"):
        assert (tmp_path / name).stat().st_mode & 0o777 == mode, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plot.png", "summary.json", "table.md"]


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temporary(tmp_path):
    atomic_write_text(tmp_path / "table.md", "old\n")
    with pytest.raises(RuntimeError, match="half-way"), atomic_path(tmp_path / "table.md") as tmp:
        tmp.write_text("new, half")
        raise RuntimeError("half-way")
    assert (tmp_path / "table.md").read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["table.md"]
