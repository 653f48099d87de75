"""The model a run names, loaded as its registered adapter (on the run's device, spread over
devices where asked, on a Ray cluster under ``--ray``)."""

from __future__ import annotations

from typing import Any

from spatialprobe import registry
from spatialprobe.runner import components
from spatialprobe.runner.settings import Component


def load_model(component: Component, device: str, batch_size: int, device_map: str = "none",
               max_memory: dict[str, str] | None = None, model_runtime: dict[str, Any] | None = None) -> Any:
    """The registered model adapter a run names, on ``device`` (``device_map``: spread over
    devices, at most ``max_memory`` on each), with its runtime options (``model_runtime``: a
    server's concurrency, timeout, ...); adapters without a batch size take none."""
    from spatialprobe.models.options import sharding

    runtime: dict[str, Any] = {"device": device, **sharding(component.name, device, device_map, max_memory),
                               **(model_runtime or {})}
    if _takes(component.name, "batch_size"):
        runtime["batch_size"] = batch_size
    return components.component("model", registry.Spec(component.name, {**component.args, **runtime}))  # --ray: cluster


def _takes(name: str, argument: str) -> bool:
    import inspect

    return argument in inspect.signature(registry.lookup("model", name)).parameters
