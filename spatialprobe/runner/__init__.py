"""The run spine every run kind goes through, its spec/identity and the summary schema."""

from spatialprobe.runner.spec import RUNTIME_KEYS, RunSpec, differences
from spatialprobe.runner.spine import Evaluation, Item, ResultCache, RunKind, execute
from spatialprobe.runner.summary import Metric, build_summary

__all__ = ["RUNTIME_KEYS", "Evaluation", "Item", "Metric", "ResultCache", "RunKind", "RunSpec",
           "build_summary", "differences", "execute"]
