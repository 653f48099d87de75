"""The run spine every run kind goes through, its spec/identity and the summary schema."""

from .spec import RUNTIME_KEYS, RunSpec, differences
from .spine import Evaluation, Item, ResultCache, RunKind, execute
from .summary import Metric, build_summary

__all__ = ["RUNTIME_KEYS", "Evaluation", "Item", "Metric", "ResultCache", "RunKind", "RunSpec",
           "build_summary", "differences", "execute"]
