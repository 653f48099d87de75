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

Joining the cluster and planning its workers is :mod:`spatialprobe.runner.cluster`'s; the
models the driver describes on the cluster without loading them, :mod:`spatialprobe.runner.components`'.
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
from typing import Any, Protocol

from spatialprobe.errors import SpatialprobeError, UsageError
from spatialprobe.runner.cluster import connect, original_error, worker_plan
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
    """``local`` (this process) or ``ray`` (a Ray cluster's workers)."""
    workers: int = 1
    """How many processes computed (Ray's actors; 1 locally)."""
    batches: int = 0
    """Batches computed by this invocation (a resumed run counts only what it computed)."""
    items: int = 0
    """Items computed by this invocation (the cached ones of a resumed run not counted)."""
    retried_batches: int = 0
    """Batches computed again after a Ray worker died (each counted once a retry)."""
    gpus: int = 0
    """GPUs the Ray workers held in all (``num_gpus`` per worker × workers)."""
    devices: list[dict[str, str]] = field(default_factory=list)
    """The device and dtype each component resolved on the Ray workers (provenance.devices)."""

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "workers": self.workers, "gpus": self.gpus,
                "batches": self.batches, "items": self.items,
                "retried_batches": self.retried_batches}


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
            raise original_error(err) from None
        idle.append(actor)
        execution.devices.extend(d for d in devices if d not in execution.devices)
        done_by[actor] += len(work[index])
        busy[actor] += seconds
        log.info("Ray worker %s: %d items in %.2f s (%.1f items/s; %d items in %.1f s so far)",
                 actor._actor_id.hex()[:8], len(work[index]), seconds,
                 len(work[index]) / seconds if seconds else 0.0, done_by[actor], busy[actor])
        yield work[index], kind.collect(work[index], worked)
