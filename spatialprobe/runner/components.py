"""The components (models, detectors, ...) a run kind builds: here, or, under a command's
``--ray``, a :class:`Deferred` that a Ray task has described on the cluster, so the driver, which
only commits and evaluates, never loads the model (:func:`component`)."""

from __future__ import annotations

from typing import Any

from spatialprobe.runner.cluster import connect, original_error, worker_plan
from spatialprobe.runner.scale import RETRIES, ambient


def component(kind: str, spec: Any) -> Any:
    """``registry.build(kind, spec)`` here; under a command's ``--ray``
    (:func:`~spatialprobe.runner.scale.scaled`) a :class:`Deferred` instead, described by a Ray
    task that loads it on the cluster: the driver, which only commits and evaluates, never loads
    the model (a 70B model stays on the GPUs)."""
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
        raise original_error(err) from None


def _local_model(spec: Any) -> Any:
    """``spec`` with its ``model`` argument, where it is a local path, resolved here in the driver
    (:func:`spatialprobe.fingerprints.local_path`): the same resolution a run's config records."""
    from dataclasses import replace

    from spatialprobe.fingerprints import local_path
    from spatialprobe.runner.settings import names_checkpoint

    model = (getattr(spec, "args", None) or {}).get("model")
    if not isinstance(model, str) or local_path(model) == model or not names_checkpoint(spec.name):
        return spec
    return replace(spec, args={**spec.args, "model": local_path(model)})


def _described(kind: str, spec: Any, hub: tuple[str | None, bool]) -> dict[str, Any]:
    """On a Ray worker: what the component describes (its weights' hash, dtype, ...)."""
    from spatialprobe import registry
    from spatialprobe.loading import hub_settings

    with hub_settings(*hub):
        built = registry.build(kind, spec)
        fingerprint = getattr(built, "fingerprint", None)
        return {**built.describe(), IDENTITY: fingerprint() if callable(fingerprint) else None}


IDENTITY = "_fingerprint"
"""The key under which a cluster's description carries the component's own ``fingerprint()``."""


class Deferred:
    """A component the driver has described but not loaded: ``describe()`` is the cluster's
    answer; any other attribute loads it here (not on the Ray path, which computes on workers)."""

    def __init__(self, kind: str, spec: Any, described: dict[str, Any]):
        described = dict(described)
        identity = described.pop(IDENTITY, None)
        self.__dict__.update(_kind=kind, _spec=spec, _described=described, _built=None, _identity=identity)

    def describe(self) -> dict[str, Any]:
        return dict(self._described)

    def fingerprint(self) -> dict[str, Any]:
        """The component's own ``fingerprint()``, as the cluster answered it (what names the run)."""
        if self._identity is not None:
            return dict(self._identity)
        from spatialprobe.fingerprints import model_input  # a description without one: by its name

        model = (getattr(self._spec, "args", None) or {}).get("model")
        return {k: v for k, v in model_input("the model", str(model)).items() if k != "what"} if model else {}

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
