"""Small runs written through the real run spine (the ask kind) by models that give planted answers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from spatialprobe.benchmarks.base import Source, SourceItem
from spatialprobe.engine.run import ask_run
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.runner.settings import Component


class Planted:
    """Answers each question (by its prompt) with the planted label; ``yes`` where none is planted."""

    protocols: ClassVar[tuple[str, ...]] = ("score",)

    def __init__(self, name: str, answers: Mapping[str, str]):
        self.name, self.answers = name, dict(answers)

    def score(self, requests, progress=None):
        out = []
        for r in requests:
            wanted = {"yes": "Yes", "no": "No"}.get(self.answers.get(r.prefix, ""), self.answers.get(r.prefix, "Yes"))
            out.append(tuple(0.0 if o == wanted else -1.0 for o in r.options))
        return out

    def describe(self):
        return {"model": self.name}


def yes_no_source(keys: Sequence[str], golds: Sequence[str], clusters: Sequence[str], name: str = "planted",
                  facts: Sequence[tuple[str, str, str] | None] | None = None) -> Source:
    """A yes/no source: item ``keys[i]`` with gold ``golds[i]`` in cluster (image) ``clusters[i]``."""
    items = tuple(SourceItem(k, f"Question {k}?", ("Yes", "No"), ("yes", "no"), g, None, (c,), {"image": c},
                             fact=facts[n] if facts else None)
                  for n, (k, g, c) in enumerate(zip(keys, golds, clusters, strict=True)))
    spec = Resampling(("yes", "no"), ("image",), key=("instance_id",), pooled=True, unit="images")
    return Source(name, name, f"{name}@v1", ("yes", "no"), items, spec, settings={"name": name})


def write_ask(source: Source, out: Path, model: str, right: Sequence[bool], condition: str = "none") -> Path:
    """An ask run of ``source`` whose model is right exactly on the items where ``right`` is true."""
    answers = {item.question: (item.gold if ok else ("no" if item.gold == "yes" else "yes"))
               for item, ok in zip(source.items, right, strict=True)}
    ask_run(source, Planted(model, answers), Component("planted", {"model": model}), source.settings, out,
            condition=condition)
    return out
