"""A stand-in benchmark module with numeric and multiple-choice items, and a scripted model that
replies from a file (greedily: its first reply; sampled: one drawn with the request's seed), both
registered for a test, so ``spatialprobe bench`` runs them through the CLI exactly as a user
runs a benchmark module and an adapter: numbers and sampling shares known in advance."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from string import ascii_uppercase
from typing import Any, ClassVar

from spatialprobe import registry
from spatialprobe.benchmarks.base import Official, Source, SourceItem, given, recorded
from spatialprobe.benchmarks.numeric_answers import NUMERIC_OFFICIAL, numeric_matching
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.models.base import Declared, GenerateRequest, Option

OPTIONS = {"rule": "mean or vote: how an item's samples are scored"}


def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """Items of a JSONL file: ``id``, ``question``, ``options`` (absent: a numeric item), ``answer``
    (a letter, or a number), ``scene`` (the cluster), ``type``."""
    found = given(settings)
    path = Path(str(found["data"]))
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    items = []
    for record in records:
        options = tuple(record.get("options") or ())
        labels = tuple(ascii_uppercase[:len(options)])
        prompt = record["question"] + "".join(f"\n{label}. {text}" for label, text in zip(labels, options, strict=True))
        items.append(SourceItem(str(record["id"]), prompt, options, labels, str(record["answer"]),
                                None, (), {"scene": record["scene"], "type": record.get("type", ""),
                                                   "image": record.get("image")}))
    version = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    labels = tuple(ascii_uppercase[:max([len(i.options) for i in items] + [1])])
    spec = Resampling(labels, ("scene",), key=("instance_id",), pooled=True, unit="scenes")
    rule = found["options"].get("rule", "mean")
    return Source("quality-demo", "quality-demo", f"quality-demo@{version}", labels, tuple(items), spec,
                  official=(Official({"accuracy": "accuracy"}, ("type",)), *NUMERIC_OFFICIAL),
                  matching=numeric_matching(), sampling=rule,
                  settings=recorded("quality-demo", found, str(path), version))


class Scripted(Declared):
    """Replies from ``script.json`` in its folder: question -> replies; greedy: the first, sampled:
    ``random.Random(seed).choice``."""

    name = "scripted"
    gpus: ClassVar[int] = 0
    protocols: ClassVar[tuple[str, ...]] = ("score", "generate")
    wordings: ClassVar[tuple[str, ...]] = ("question",)
    options: ClassVar[dict[str, Option]] = {}
    samples: ClassVar[bool] = True
    sampler: ClassVar[str] = "random.Random(seed).choice over the script's replies"

    @classmethod
    def accepts(cls, config: Mapping[str, Any]) -> bool:
        return config.get("model_type") == cls.name

    def __init__(self, model: str, device: str = "auto", **_: Any):
        self.model_name = str(model)
        self.script = json.loads((Path(model) / "script.json").read_text(encoding="utf-8"))
        self.calls: list[GenerateRequest] = []

    def describe(self) -> dict[str, Any]:
        return {"scorer": self.name, "model": self.model_name, "weights_sha256": None}

    def fingerprint(self) -> dict[str, Any]:
        digest = hashlib.sha256((Path(self.model_name) / "script.json").read_bytes()).hexdigest()
        return {"model": self.model_name, "fingerprint": f"sha256:{digest}"}

    def generate(self, requests: Sequence[GenerateRequest], progress: Any = None) -> list[str]:
        out = []
        for request in requests:
            replies = next(v for k, v in self.script.items() if request.prompt.startswith(k))
            out.append(random.Random(request.seed).choice(replies) if request.temperature else replies[0])
        if progress:
            progress(len(requests))
        return out


    def score(self, requests: Sequence[Any], progress: Any = None) -> list[tuple[float, ...]]:
        """Every option scored 0 (the first wins): a stand-in that also answers by likelihood."""
        return [tuple(0.0 for _ in r.options) for r in requests]


class Greedy(Scripted):
    """The same replies, from an adapter that cannot sample."""

    name = "greedy-scripted"
    samples: ClassVar[bool] = False


def write_model(folder: Path, script: Mapping[str, Sequence[str]], kind: str = "scripted") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": kind}), encoding="utf-8")
    (folder / "script.json").write_text(json.dumps(script), encoding="utf-8")
    return folder


def write_items(path: Path, records: Sequence[Mapping[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@contextmanager
def registered() -> Iterator[None]:
    """The stand-in benchmark and the two scripted adapters registered, for one test."""
    entries = [("source", "quality-demo", "quality_helpers:from_settings"),
               ("model", "scripted", "quality_helpers:Scripted"),
               ("model", "greedy-scripted", "quality_helpers:Greedy")]
    for kind, name, target in entries:
        registry.register(kind, name, target)
    try:
        yield
    finally:
        for kind, name, _ in entries:
            registry._REGISTRY[kind].pop(name, None)
