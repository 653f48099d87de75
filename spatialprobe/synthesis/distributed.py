"""Fan batches out to Ray workers, one per GPU (or per CPU where there is no GPU).

Workers load the synthesizer once and *return* their images; the driver writes them and the
run spine commits their rows as each batch arrives. So the run needs no shared file system,
only one process ever writes it, and a killed driver loses at most the batches in flight.
Batches are handed out as workers become free (``ActorPool.map_unordered``), which balances
uneven GPUs better than fixed shards.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.extras import require
from spatialprobe.synthesis.jobs import Job, JobResult, Synthesizer
from spatialprobe.synthesis.runner import build_synthesizer


class _Worker:
    """Loads the synthesizer once. A load failure (a model path missing on this node, ...) is
    kept and handed back, so the driver can raise it as the one-sentence error it is instead of
    Ray's actor-death traceback."""

    def __init__(self, backend: str, backend_args: dict[str, Any]):
        self.synth: Synthesizer | None = None
        self.error: Exception | None = None  # set exactly when synth is not
        try:
            self.synth = build_synthesizer(backend, backend_args)
        except Exception as err:
            self.error = err

    def describe(self) -> dict[str, Any] | Exception:
        return self.synth.describe() if self.synth is not None else self._load_error()

    def generate(self, jobs: Sequence[Job]):
        if self.synth is None:
            raise self._load_error()
        return self.synth.generate(jobs)

    def _load_error(self) -> Exception:
        assert self.error is not None  # __init__ kept the error where it has no synth
        return self.error


def _original(err: BaseException) -> BaseException:
    """The worker's own exception inside Ray's wrapper, where Ray kept it."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, Exception) else err


def _connect(address: str | None) -> bool:
    """Join or start a cluster; True if this call started (and so must stop) it."""
    ray = require("ray", "synthesis", "--ray")
    if ray.is_initialized():
        return False
    if address in (None, "", "local"):
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
        ray.init(include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    else:
        ray.init(address=address)
    return True


def worker_plan(resources: dict[str, float], workers: int | None) -> tuple[dict[str, int], int]:
    """Ray options of one worker and how many to start: one per GPU, else one per CPU, and never
    more than the cluster holds (a worker that cannot be placed would keep its batch forever)."""
    gpus = int(resources.get("GPU", 0))
    capacity = gpus or max(1, int(resources.get("CPU", 1)))
    return ({"num_gpus": 1} if gpus else {"num_cpus": 1}), min(workers or capacity, capacity)


def stream_on_ray(backend: str, backend_args: dict[str, Any], work: Sequence[Sequence[Job]], *,
                  address: str | None, workers: int | None
                  ) -> Iterator[tuple[dict[str, Any], list[JobResult]]]:
    """(what the synthesizer describes, a batch's results) for each batch of ``work``, as the
    workers return them; the caller writes the images (and the run spine commits them)."""
    ray = require("ray", "synthesis", "--ray")
    from ray.util import ActorPool

    started = _connect(address)
    try:
        options, count = worker_plan(ray.cluster_resources(), workers)
        # Actor handles: their `method.remote()` proxies are dynamic, beyond what Ray's hints describe.
        actors: list[Any] = [ray.remote(_Worker).options(**options).remote(backend, backend_args)
                  for _ in range(min(count, len(work)))]
        described = ray.get(actors[0].describe.remote())
        if isinstance(described, Exception):
            raise described
        pool = ActorPool(actors)
        try:
            for results in pool.map_unordered(lambda actor, jobs: actor.generate.remote(jobs),
                                              list(work)):
                yield described, results
        except ray.exceptions.RayTaskError as err:
            raise _original(err) from None
        for actor in actors:
            ray.kill(actor)
    finally:
        if started:
            ray.shutdown()
