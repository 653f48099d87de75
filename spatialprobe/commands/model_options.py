"""``--device-map`` and ``--max-memory``, declared once for every command that runs a text or
multimodal LLM (probe, vsr, spatialmqa, qa text, qa image).

A command adds the two options (:data:`DeviceMapOption`, :data:`MaxMemoryOption`) and passes
what :func:`device_map_settings` returns to the run it builds; the adapter the run names checks
them (:func:`spatialprobe.models.options.sharding`: refused, in one sentence, for a model that
cannot be spread, with ``--device``, or ``--max-memory`` alone). Both are runtime: a run keeps
its identity with or without them (docs/device-map.md).
"""

from __future__ import annotations

from typing import Any

import typer

DeviceMapOption = typer.Option(
    None, "--device-map", help="auto: accelerate spreads a model larger than one GPU over every visible GPU, "
    "then the CPU and the disk (text and multimodal LLMs; runtime: the same numbers).")
MaxMemoryOption = typer.Option(
    [], "--max-memory", help="With --device-map auto: DEVICE=SIZE, at most this much of the model on a GPU "
    "index or cpu (0=70GiB, cpu=200GiB); repeatable.")


def device_map_settings(device_map: str | None, max_memory: list[str]) -> tuple[str | None, dict[str, str] | None]:
    """(device map, max memory per device) as the run records them (``None`` when not given);
    a ``--max-memory`` that does not read as DEVICE=SIZE is refused in one sentence."""
    from spatialprobe.sharding import parse_max_memory

    return device_map, (parse_max_memory(max_memory) or None)


def refuse_device_map(adapter: str, device: str, device_map: str | None, max_memory: Any) -> None:
    """For a command path whose model is not one of the shardable adapters (a CLIP model, a VQA
    classifier, T5): the same sentence the adapters' check gives."""
    from spatialprobe.models.options import sharding

    sharding(adapter, device, device_map, max_memory)
