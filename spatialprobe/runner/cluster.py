"""The Ray cluster a run fans out on: joining or starting it, checking an address before Ray's
own minute-long retries, planning how many workers it holds, and the worker's own exception
inside Ray's wrapper. Used by :mod:`spatialprobe.runner.scale` (the run's workers) and
:mod:`spatialprobe.runner.components` (the models the driver has described on the cluster)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from spatialprobe.errors import UsageError


def worker_plan(resources: dict[str, float], workers: int | None, gpus_each: int = 1) -> tuple[dict[str, int], int]:
    """Ray options of one worker and how many to start: ``gpus_each`` GPUs a worker (what the
    model adapter declares, :class:`~spatialprobe.models.base.Declared`), else one CPU a worker
    (no GPU in the cluster, or an adapter that needs none: a server's client), and never more than
    the cluster holds (a worker that cannot be placed would keep its batch forever)."""
    gpus = int(resources.get("GPU", 0))
    if gpus and gpus_each > 0:
        if gpus_each > gpus:
            raise UsageError(f"one worker of this model needs {gpus_each} GPUs; the Ray cluster holds {gpus}.")
        capacity = gpus // gpus_each
        return {"num_gpus": gpus_each}, min(workers or capacity, capacity)
    capacity = max(1, int(resources.get("CPU", 1)))
    return {"num_cpus": 1}, min(workers or capacity, capacity)


def connect(address: str | None) -> bool:
    """Join or start a cluster; True if this call started (and so must stop) it.

    Bare ``--ray`` (``None``, ``""``, ``"local"``) starts this run's OWN cluster in a fresh temp
    directory: never one a ``ray start`` left on the machine (``RAY_ADDRESS`` and Ray's
    current-cluster file are not read). An address is checked first (:func:`check_address`), so
    nothing listening or a cluster that needs Ray's token fails within seconds in one sentence
    instead of Ray's minute-long retries."""
    from spatialprobe.extras import require

    ray = require("ray", "ray", "--ray")
    if ray.is_initialized():
        return False
    if address in (None, "", "local"):  # workers import this very checkout
        import tempfile

        package_root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
        ambient_address = os.environ.pop("RAY_ADDRESS", None)  # the workers must not inherit it
        try:
            ray.init(address="local", _temp_dir=tempfile.mkdtemp(prefix="sp-ray-"), include_dashboard=False,
                     runtime_env={"env_vars": {"PYTHONPATH": path}})
        finally:
            if ambient_address is not None:
                os.environ["RAY_ADDRESS"] = ambient_address
    else:
        check_address(address)
        ray.init(address=address)
    return True


PROBE_SECONDS = 10.0
"""How long an address may take to answer as a Ray cluster before the run is refused."""


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``HOST:PORT`` or ``ray://HOST:PORT`` (None for ``auto`` and the like)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    return (host.strip("[]"), int(port)) if sep and host and port.isdigit() else None


def check_address(address: str) -> None:
    """Refuse, in one sentence and within seconds, an address where nothing listens, where no
    Ray cluster answers, or whose cluster needs Ray's authentication token this process lacks."""
    where = _host_port(address)
    if where is None:
        return
    try:
        socket.create_connection(where, timeout=5).close()
    except OSError as err:
        raise UsageError(f"--ray {address}: nothing answers there ({err.strerror or err}); start a cluster "
                         "with `ray start --head` and give its address, or give --ray alone for a private "
                         "local cluster.") from None
    if address.startswith("ray://"):
        return  # a Ray client server: ray.init reports its own errors
    _probe_gcs(address)


def _probe_gcs(address: str) -> None:
    """Ask the cluster's GCS one cheap question (in a thread, given :data:`PROBE_SECONDS`): Ray's
    own connect retries for 20 to 60 s and turns a missing token into a bare ConnectionError."""
    import threading

    import ray

    try:
        from ray._raylet import GcsClient  # type: ignore[attr-defined]
    except ImportError:  # another Ray: leave it to ray.init
        return
    outcome: list[BaseException | None] = []

    def ask() -> None:
        try:
            GcsClient(address=address).internal_kv_get(b"spatialprobe-probe", None, timeout=PROBE_SECONDS)
            outcome.append(None)
        except BaseException as err:  # reported in the driver
            outcome.append(err)

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(PROBE_SECONDS)
    if not outcome:
        raise UsageError(f"--ray {address}: something listens there but no Ray cluster answered within "
                         f"{PROBE_SECONDS:g} s; give the address `ray start --head` printed.")
    err = outcome[0]
    if isinstance(err, ray.exceptions.AuthenticationError):
        raise UsageError(f"--ray {address}: the cluster needs Ray's authentication token; set RAY_AUTH_MODE=token "
                         "and the cluster's token in RAY_AUTH_TOKEN (or a file named by RAY_AUTH_TOKEN_PATH) and "
                         "rerun.")
    if err is not None:
        raise UsageError(f"--ray {address}: no Ray cluster answered there ({type(err).__name__}: "
                         f"{str(err).splitlines()[0] if str(err) else 'no message'}).")


def original_error(err: BaseException) -> BaseException:
    """The worker's own exception inside Ray's wrapper, where Ray kept it."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, Exception) else err
