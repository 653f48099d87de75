"""The one Ray path of the run spine (spatialprobe.runner.scale), on the shared local cluster:
results equal a local run whatever the number of workers, a lost worker's batch is retried and
counted, retries are bounded, and a driver killed with kill -9 loses nothing it committed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from ray_helpers import CountRun, CountSettings, committed

from spatialprobe import registry
from spatialprobe.errors import SpatialprobeError
from spatialprobe.runner import execute, scale
from spatialprobe.runner.scale import Scale

TESTS = Path(__file__).resolve().parent


def run(out: Path, scale: Scale | None = None, **settings) -> dict:
    kind = CountRun(CountSettings(**settings))
    kind.scale = scale
    return execute(kind, out)


def same_run(a: Path, b: Path) -> None:
    """predictions.jsonl byte for byte, and the summaries' metrics and details."""
    assert (a / "predictions.jsonl").read_bytes() == (b / "predictions.jsonl").read_bytes()
    sa, sb = (json.loads((p / "summary.json").read_text()) for p in (a, b))
    assert (sa["metrics"], sa["details"]) == (sb["metrics"], sb["details"])


def execution(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())["provenance"]["execution"]


def test_any_number_of_workers_gives_the_local_run(ray_cluster, tmp_path):
    local = run(tmp_path / "local", items=18)
    assert local["provenance"]["execution"] == {"where": "local", "workers": 1, "gpus": 0, "batches": 5,
                                                "items": 18, "retried_batches": 0}
    for workers in (3,):  # 2 workers: the tests below
        out = tmp_path / f"ray{workers}"
        summary = run(out, Scale(ray_cluster, workers), items=18)
        same_run(tmp_path / "local", out)
        assert summary["identity"] == local["identity"]  # --ray and --workers are runtime
        assert execution(out) == {"where": "ray", "workers": workers, "gpus": 0, "batches": 5,
                                  "items": 18, "retried_batches": 0}
        assert json.loads((out / "config.json").read_text())["runtime"] == {
            "batch_size": 4, "ray": ray_cluster, "workers": workers}


def test_a_killed_worker_s_batch_is_retried_on_a_fresh_one(ray_cluster, tmp_path):
    run(tmp_path / "whole", items=12)
    marker = tmp_path / "killed"
    run(tmp_path / "lost", Scale(ray_cluster, 2), items=12, kill_marker=str(marker))
    assert (tmp_path / "killed.0").read_text().isdigit()  # the pid the worker killed
    same_run(tmp_path / "whole", tmp_path / "lost")
    assert execution(tmp_path / "lost") == {"where": "ray", "workers": 2, "gpus": 0, "batches": 3,
                                            "items": 12, "retried_batches": 1}


def test_past_the_retries_one_sentence_and_the_committed_work_is_kept(ray_cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(scale, "RETRIES", 1)  # 3 in use: each retry starts a worker (seconds here)
    out = tmp_path / "run"
    with pytest.raises(SpatialprobeError) as caught:
        run(out, Scale(ray_cluster, 1), items=8, kill_marker=str(tmp_path / "k"), kill_item="item004",
            kill_times=9)
    assert str(caught.value) == ("Ray workers died 2 times computing the same batch of 4 items "
                                 "(first 'item004'); what was committed is kept, so run the command "
                                 "again to resume.")
    assert sorted(p.name for p in tmp_path.glob("k.*")) == ["k.0", "k.1"]
    assert committed(out) == 4  # the first batch, done before the bad one
    assert not (out / "summary.json").exists()


def _drive(out: Path, address: str | None, settings: dict) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(TESTS.parent), str(TESTS)))}
    if address is None:
        code = ("import json, sys, ray_helpers as h; from spatialprobe.runner import execute; "
                "execute(h.CountRun(h.CountSettings(**json.loads(sys.argv[2]))), sys.argv[1])")
        args = [str(out), json.dumps(settings)]
    else:
        code = "import sys, ray_helpers as h; h.drive(*sys.argv[1:])"
        args = [str(out), address, json.dumps(settings)]
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env)


def _kill_when(out: Path, proc: subprocess.Popen, rows: int) -> int:
    """kill -9 the driver once it committed ``rows`` rows; the rows it left."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if (out / "run.sqlite").exists() and committed(out) >= rows:
            break
        assert proc.poll() is None, "the driver ended before it could be killed"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return committed(out)


@pytest.fixture
def count_kind_registered(monkeypatch):
    """A run folder of the test kind is one a run may resume (its kind is registered)."""
    monkeypatch.setitem(registry._REGISTRY["run-kind"], "count-test", ("ray_helpers:CountRun", "test"))


@pytest.mark.usefixtures("count_kind_registered")
@pytest.mark.parametrize(("first", "then"), [("ray", "local"), ("local", "ray")])
def test_a_driver_killed_with_kill_9_resumes_elsewhere_computing_only_the_rest(ray_cluster, tmp_path,
                                                                                first, then):
    settings = {"items": 24, "pause": 0.4}
    out = tmp_path / "run"
    proc = _drive(out, ray_cluster if first == "ray" else None, settings)
    left = _kill_when(out, proc, 8)
    assert 8 <= left < 24 and left % 4 == 0  # whole batches, as committed
    begun = json.loads((out / "config.json").read_text())
    summary = run(out, Scale(ray_cluster, 2) if then == "ray" else None, **settings)
    assert summary["identity"] == begun["identity"]
    assert summary["provenance"]["execution"]["items"] == 24 - left  # nothing committed is redone
    assert summary["provenance"]["execution"]["where"] == then
    run(tmp_path / "whole", **settings)
    same_run(tmp_path / "whole", out)


def test_workers_need_ray():
    with pytest.raises(SpatialprobeError, match=r"^--workers sets the number of Ray workers and needs --ray; "):
        Scale(None, 2)


class TrainsFirst(CountRun):
    scales_out = False


def test_a_kind_whose_batches_need_this_process_refuses_ray_before_writing(tmp_path):
    kind = TrainsFirst(CountSettings(4))
    kind.scale = Scale("local", None)
    with pytest.raises(SpatialprobeError) as caught:
        execute(kind, tmp_path / "run")
    assert str(caught.value) == ("--ray does not apply to a count-test run: its batches need what an "
                                 "earlier one made in this process; run it without --ray.")
    assert not (tmp_path / "run").exists()


# ---- an address that cannot serve fails fast; bare --ray is private ----

CONNECT = ("import sys, time\nfrom spatialprobe.errors import UsageError\n"
           "from spatialprobe.runner.cluster import connect\n"
           "try:\n    connect(sys.argv[1] or None)\nexcept UsageError as err:\n    print('REFUSED', err)\n"
           "    sys.exit(2)\nimport ray\nprint('GCS', ray.get_runtime_context().gcs_address)\n"
           "print('SESSION', ray._private.worker._global_node.get_session_dir_path())\n")


def _connect(address: str, env: dict | None = None, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    """``connect(address)`` in a fresh process (this one may hold the shared cluster): its output, seconds."""
    begun = time.monotonic()
    done = subprocess.run([sys.executable, "-c", CONNECT, address], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(TESTS.parent), **(env or {})})
    return done, time.monotonic() - begun


def test_an_address_where_nothing_listens_is_refused_within_seconds_in_one_sentence():
    done, seconds = _connect("127.0.0.1:1")
    assert done.returncode == 2 and seconds < 20, (done.stdout, done.stderr)
    assert done.stdout.startswith("REFUSED --ray 127.0.0.1:1: nothing answers there (Connection refused); start "
                                  "a cluster with `ray start --head` and give its address, or give --ray alone "
                                  "for a private local cluster.")


def test_sigterm_stops_a_driver_waiting_on_an_address_that_never_answers():
    import socket

    with socket.socket() as silent:  # accepts connections, never speaks Ray
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        proc = subprocess.Popen([sys.executable, "-c", CONNECT, f"127.0.0.1:{silent.getsockname()[1]}"],
                                env={**os.environ, "PYTHONPATH": str(TESTS.parent)},
                                stdout=subprocess.PIPE, text=True)
        time.sleep(4)  # importing Ray and probing: the driver is waiting now
        assert proc.poll() is None
        begun = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        assert time.monotonic() - begun < 5 and proc.returncode == -signal.SIGTERM


def test_a_silent_address_is_refused_after_the_probe_in_one_sentence():
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        done, seconds = _connect(address)
    assert done.returncode == 2 and seconds < 10 + 15, (done.stdout, done.stderr)
    assert done.stdout.startswith(f"REFUSED --ray {address}: something listens there but no Ray cluster answered "
                                  "within 10 s; give the address `ray start --head` printed.")


HEAD = ("import sys, tempfile, time, ray\n"
        "ray.init(address='local', _temp_dir=tempfile.mkdtemp(prefix='sp-ray-test-'), num_cpus=1, "
        "include_dashboard=False)\nprint(ray.get_runtime_context().gcs_address, flush=True)\ntime.sleep(600)\n")


def test_a_cluster_that_needs_rays_token_and_a_bare_ray_that_starts_its_own(tmp_path):
    """A private head started here with token auth (stopped by killing its process group, never
    `ray stop`): joining it without the token is one sentence within seconds; bare --ray with
    RAY_ADDRESS pointing at it starts a cluster of its own in its own temp directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    head = subprocess.Popen([sys.executable, "-c", HEAD], stdout=subprocess.PIPE, text=True, start_new_session=True,
                            env={**env, "RAY_AUTH_MODE": "token", "OMP_NUM_THREADS": "1"})
    try:
        address = head.stdout.readline().strip()
        assert address, "the token head did not start"
        done, seconds = _connect(address, {"RAY_AUTH_MODE": "disabled"})
        assert done.returncode == 2 and seconds < 20, (done.stdout, done.stderr)
        assert done.stdout.startswith(f"REFUSED --ray {address}: the cluster needs Ray's authentication token; set "
                                      "RAY_AUTH_MODE=token and the cluster's token in RAY_AUTH_TOKEN (or a file named "
                                      "by RAY_AUTH_TOKEN_PATH) and rerun.")
        own, _ = _connect("", {"RAY_ADDRESS": address, "RAY_AUTH_MODE": "disabled"}, timeout=180)
        assert own.returncode == 0, (own.stdout, own.stderr)
        lines = dict(line.split(" ", 1) for line in own.stdout.splitlines() if line[:4] in ("GCS ", "SESS"))
        assert lines["GCS"] != address
        session = Path(lines["SESSION"])
        assert session.parent.name.startswith("sp-ray-") and session.parent.parent == Path(tempfile.gettempdir())
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        head.wait(timeout=60)
