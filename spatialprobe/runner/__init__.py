"""The run spine every run kind goes through, its spec/identity and the summary schema.

The names are imported on first use (PEP 562), so a command that needs only
``spatialprobe.runner.settings`` or ``.folders`` (``--help`` among them) never loads numpy and
the statistics the spine computes with."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spatialprobe.runner.spec import RUNTIME_KEYS, RunSpec, differences
    from spatialprobe.runner.spine import Evaluation, Item, ResultCache, RunKind, execute
    from spatialprobe.runner.summary import Metric, build_summary

_HOMES = {"RUNTIME_KEYS": "spec", "RunSpec": "spec", "differences": "spec", "Evaluation": "spine", "Item": "spine",
          "ResultCache": "spine", "RunKind": "spine", "execute": "spine", "Metric": "summary",
          "build_summary": "summary"}

__all__ = ["RUNTIME_KEYS", "Evaluation", "Item", "Metric", "ResultCache", "RunKind", "RunSpec",
           "build_summary", "differences", "execute"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
