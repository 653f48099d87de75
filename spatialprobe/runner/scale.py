"""Fan a run's batches out over Ray: the one scale-out path of every run kind.

:func:`~spatialprobe.runner.spine.execute` calls :func:`stream_on_ray` when the run's runtime
says ``ray``. Each Ray worker (an actor: one GPU, or one CPU with one torch thread) rebuilds the
run kind ONCE from the run's spec (``from_spec``, runtime cleared), so every setting, scorer
argument and ``--revision`` reaches it exactly as the driver has it, and checks that it rebuilt
the driver's identity (a data file or model that differs on its node is refused, not mixed in).
The driver sends item keys only; a worker runs the kind's :meth:`~.RunKind.work` on its own
items and returns the results, the driver runs :meth:`~.RunKind.collect` on them (synthesis
writes the images there) and the spine commits each batch as it arrives. So only the driver
writes the run folder, a killed driver loses at most the batches in flight, and results do not
depend on how many workers ran or in which order batches finished (the cache is keyed by item).

A worker that dies (its node lost, killed, out of memory) has its batch handed to a fresh
worker, at most :data:`RETRIES` times per batch; each retry is counted in the summary's
``provenance.execution``. An exception the kind raises is not retried (it would raise again):
it is raised in the driver as the one sentence it is.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from spatialprobe.errors import SpatialprobeError, UsageError
from spatialprobe.runner.spec import RunSpec, what_differs

log = logging.getLogger(__name__)

RETRIES = 3
"""How many times one batch is handed to a fresh worker after the worker computing it died."""

SCALE_KEYS = ("ray", "workers")
"""The runtime keys that say how a run fans out."""


class Item(Protocol):
    """A unit of a run's work as this module sees it (:class:`.spine.Item`): its key."""

    @property
    def key(self) -> str: ...


class RunKind(Protocol):
    """What fanning a run out needs of its kind (:class:`.spine.RunKind` is one); a protocol, so
    that the spine imports this module and not the other way round."""

    def spec(self) -> RunSpec: ...

    def items(self) -> Sequence[Item]: ...

    def portable(self) -> Any: ...

    def gpus_per_worker(self) -> int: ...

    def work(self, batch: Any) -> Any: ...

    def collect(self, batch: Any, worked: Any) -> Sequence[Any]: ...

    @classmethod
    def from_spec(cls, spec: RunSpec, source: Any = ...) -> Any: ...


@dataclass(frozen=True)
class Scale:
    """Where a run computes: here (``ray`` None) or on a Ray cluster (``local`` starts one on
    this machine, anything else is a cluster address), with at most ``workers`` workers."""

    ray: str | None = None
    workers: int | None = None

    def __post_init__(self) -> None:
        if self.workers is not None and self.ray is None:
            raise UsageError("--workers sets the number of Ray workers and needs --ray; without "
                             "it the run computes in this process.")

    def runtime(self) -> dict[str, Any]:
        """The runtime keys a run records (none for a run here)."""
        return {} if self.ray is None else {"ray": self.ray, "workers": self.workers}

    @classmethod
    def of_runtime(cls, runtime: dict[str, Any]) -> Scale:
        return cls(runtime.get("ray"), runtime.get("workers"))


_AMBIENT: ContextVar[Scale | None] = ContextVar("spatialprobe_scale", default=None)


@contextmanager
def scaled(ray: str | None, workers: int | None) -> Iterator[Scale]:
    """Every run executed inside computes as ``Scale(ray, workers)`` says, unless it was given
    its own (a replayed config's): how a command's ``--ray``/``--workers`` reach its run kind."""
    token = _AMBIENT.set(Scale(ray, workers))
    try:
        yield ambient()
    finally:
        _AMBIENT.reset(token)


def ambient() -> Scale:
    """The scale a command asked for (:func:`scaled`); here when none did."""
    return _AMBIENT.get() or Scale()


@dataclass
class Execution:
    """How this invocation computed, for ``summary["provenance"]["execution"]``."""

    where: str = "local"
    workers: int = 1
    batches: int = 0
    items: int = 0
    retried_batches: int = 0
    gpus: int = 0
    devices: list[dict[str, str]] = field(default_factory=list)
    """The device and dtype each component resolved on the Ray workers (provenance.devices)."""

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "workers": self.workers, "gpus": self.gpus,
                "batches": self.batches, "items": self.items,
                "retried_batches": self.retried_batches}


def worker_plan(resources: dict[str, float], workers: int | None, gpus_each: int = 1) -> tuple[dict[str, int], int]:
    """Ray options of one worker and how many to start: ``gpus_each`` GPUs a worker (what the
    model adapter declares, :class:`~spatialprobe.models.base.Declared`), else one CPU a worker
    (no GPU in the cluster, or an adapter that needs none: a server's client), and never more than
    the cluster holds (a worker that cannot be placed would keep its batch forever)."""
    from spatialprobe.errors import UsageError

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


class Worker:
    """A Ray actor: one copy of the run kind (and so of its model), built once. A build failure
    (a model path missing on this node, ...) is kept and raised by :meth:`run`, so the driver
    raises it as the one-sentence error it is instead of Ray's actor-death traceback."""

    def __init__(self, cls: type[RunKind], spec: dict[str, Any], portable: RunKind | None = None):
        import ray

        one_thread = not ray.get_gpu_ids()  # one CPU each: more threads would fight the others
        if one_thread:  # read by torch (OpenMP, MKL) when the kind imports it
            os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.spec = RunSpec.from_dict(spec)
        self.error: Exception | None = None
        self.kind: RunKind | None = None
        try:
            with self._hub():
                kind = portable or cls.from_spec(self.spec, "the run's spec (on a Ray worker)")
                rebuilt = kind.spec()
            if rebuilt.identity != self.spec.identity:
                differs = what_differs(self.spec.to_dict(), rebuilt) or "its identity differs"
                raise UsageError(f"a Ray worker on {socket.gethostname()} rebuilt another run than "
                                 f"the driver's ({differs}); every node must see the same models "
                                 "and data files.")
            self.items = {item.key: item for item in kind.items()}
            self.kind = kind
        except Exception as err:
            self.error = err
        if one_thread and "torch" in sys.modules:  # the kind runs torch: one thread, whatever it read
            sys.modules["torch"].set_num_threads(1)

    def _hub(self) -> Any:
        from spatialprobe.fingerprints import hub_settings_of
        from spatialprobe.loading import hub_settings

        return hub_settings(*hub_settings_of(self.spec.inputs))  # the run's --revision

    def run(self, keys: Sequence[str]) -> tuple[Any, float, list[dict[str, str]]]:
        """The kind's worker part of the batch of ``keys``, the seconds it took, and the devices
        its components resolved since the last batch (its model's, at the first)."""
        if self.kind is None:
            assert self.error is not None  # __init__ kept the error where it has no kind
            raise self.error
        from spatialprobe.loading import resolved_devices

        start = time.perf_counter()
        with self._hub():
            worked = self.kind.work([self.items[key] for key in keys])
        return worked, time.perf_counter() - start, resolved_devices()


def component(kind: str, spec: Any) -> Any:
    """``registry.build(kind, spec)`` here; under a command's ``--ray`` (:func:`scaled`) a
    :class:`Deferred` instead, described by a Ray task that loads it on the cluster: the driver,
    which only commits and evaluates, never loads the model (a 70B model stays on the GPUs)."""
    from spatialprobe import registry

    scale = ambient()
    spec = _local_model(spec)  # a relative path means this folder's, not each Ray worker's
    if scale.ray is None:
        return registry.build(kind, spec)
    from spatialprobe.extras import require
    from spatialprobe.loading import hub_defaults

    ray = require("ray", "ray", "--ray")
    connect(scale.ray)  # a cluster it starts stays up for the run's workers (stopped at exit)
    options, _ = worker_plan(ray.cluster_resources(), 1, int(getattr(registry.lookup(kind, spec.name), "gpus", 1)))
    task = ray.remote(_described).options(**options, max_retries=RETRIES)
    try:
        return Deferred(kind, spec, ray.get(task.remote(kind, spec, hub_defaults())))
    except ray.exceptions.RayTaskError as err:  # a model that does not load: its own sentence
        raise _original(err) from None


def _local_model(spec: Any) -> Any:
    """``spec`` with its ``model`` argument, where it is a local path, resolved here in the driver
    (:func:`spatialprobe.fingerprints.local_path`): the same resolution a run's config records."""
    from dataclasses import replace

    from spatialprobe.fingerprints import local_path

    model = (getattr(spec, "args", None) or {}).get("model")
    if not isinstance(model, str) or local_path(model) == model:
        return spec
    return replace(spec, args={**spec.args, "model": local_path(model)})


def _described(kind: str, spec: Any, hub: tuple[str | None, bool]) -> dict[str, Any]:
    """On a Ray worker: what the component describes (its weights' hash, dtype, ...)."""
    from spatialprobe import registry
    from spatialprobe.loading import hub_settings

    with hub_settings(*hub):
        return dict(registry.build(kind, spec).describe())


class Deferred:
    """A component the driver has described but not loaded: ``describe()`` is the cluster's
    answer; any other attribute loads it here (not on the Ray path, which computes on workers)."""

    def __init__(self, kind: str, spec: Any, described: dict[str, Any]):
        self.__dict__.update(_kind=kind, _spec=spec, _described=described, _built=None)

    def describe(self) -> dict[str, Any]:
        return dict(self._described)

    @property
    def device(self) -> Any:
        """Where the cluster placed it, as it describes it (else where it would be placed here)."""
        return self._described["device"] if "device" in self._described else self.__getattr__("device")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if self._built is None:
            from spatialprobe import registry

            self.__dict__["_built"] = registry.build(self._kind, self._spec)
        return getattr(self._built, name)


def _original(err: BaseException) -> BaseException:
    """The worker's own exception inside Ray's wrapper, where Ray kept it."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, Exception) else err


def stream_on_ray(kind: RunKind, spec: RunSpec, work: Sequence[Sequence[Item]], scale: Scale,
                  execution: Execution) -> Iterator[tuple[Sequence[Item], Sequence[Any]]]:
    """(batch, results) for each batch of ``work``, as the workers return them; batches go to
    workers as they become free, a dead worker's batch to a fresh one."""
    from spatialprobe.extras import require

    ray = require("ray", "ray", "--ray")
    started = connect(scale.ray)
    actors: list[Any] = []  # handles: their `method.remote()` proxies are beyond Ray's hints
    try:
        options, count = worker_plan(ray.cluster_resources(), scale.workers, kind.gpus_per_worker())
        execution.where, execution.workers = "ray", min(count, len(work))
        execution.gpus = execution.workers * options.get("num_gpus", 0)
        local = RunSpec(spec.kind, spec.settings, {k: v for k, v in spec.runtime.items()
                                                  if k not in SCALE_KEYS}, spec.inputs).to_dict()
        shipped = ray.put(kind.portable())  # once, not once per worker
        actor_class = ray.remote(Worker).options(**options, max_restarts=0)

        def fresh() -> Any:
            actors.append(actor_class.remote(type(kind), local, shipped))
            return actors[-1]

        idle = [fresh() for _ in range(execution.workers)]
        yield from _dispatch(ray, kind, work, idle, fresh, execution)
    finally:
        for actor in actors:
            ray.kill(actor)
        if started:
            ray.shutdown()


def _dispatch(ray: Any, kind: RunKind, work: Sequence[Sequence[Item]], idle: list[Any],
              fresh: Any, execution: Execution) -> Iterator[tuple[Sequence[Item], Sequence[Any]]]:
    queue, tries = deque(range(len(work))), Counter[int]()
    pending: dict[Any, tuple[Any, int]] = {}  # the ref of a batch in flight -> (actor, batch)
    done_by: Counter[Any] = Counter()
    busy: Counter[Any] = Counter()
    while queue or pending:
        while queue and idle:
            actor, index = idle.pop(), queue.popleft()
            pending[actor.run.remote([item.key for item in work[index]])] = (actor, index)
        ref = ray.wait(list(pending), num_returns=1)[0][0]
        actor, index = pending.pop(ref)
        try:
            worked, seconds, devices = ray.get(ref)
        except ray.exceptions.RayActorError:
            tries[index] += 1
            execution.retried_batches += 1
            if tries[index] > RETRIES:
                raise SpatialprobeError(
                    f"Ray workers died {tries[index]} times computing the same batch of "
                    f"{len(work[index])} items (first {work[index][0].key!r}); what was committed is "
                    "kept, so run the command again to resume.") from None
            log.warning("a Ray worker died; its batch of %d items goes to a fresh worker (retry %d of %d)",
                        len(work[index]), tries[index], RETRIES)
            queue.appendleft(index)
            idle.append(fresh())
            continue
        except ray.exceptions.RayTaskError as err:
            raise _original(err) from None
        idle.append(actor)
        execution.devices.extend(d for d in devices if d not in execution.devices)
        done_by[actor] += len(work[index])
        busy[actor] += seconds
        log.info("Ray worker %s: %d items in %.2f s (%.1f items/s; %d items in %.1f s so far)",
                 actor._actor_id.hex()[:8], len(work[index]), seconds,
                 len(work[index]) / seconds if seconds else 0.0, done_by[actor], busy[actor])
        yield work[index], kind.collect(work[index], worked)
