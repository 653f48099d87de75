"""A scripted adapter that takes several images a question (the five new benchmarks' items show
every view or frame together), registered for one test, and the run of ``spatialprobe bench``
through the CLI on its replies: numbers known in advance from the authors' scoring code."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from quality_helpers import Scripted, write_model
from typer.testing import CliRunner

from spatialprobe import registry
from spatialprobe.cli import app


class ScriptedViews(Scripted):
    """:class:`quality_helpers.Scripted` (replies from ``script.json`` by the prompt), several images a question."""

    name = "scripted-views"
    multi_image: ClassVar[bool] = True


@contextmanager
def scripted() -> Iterator[None]:
    registry.register("model", "scripted-views", "five_helpers:ScriptedViews")
    try:
        yield
    finally:
        registry._REGISTRY["model"].pop("scripted-views", None)


def run_scripted(name: str, data: Path, replies: Mapping[str, Sequence[str]], root: Path, *more: str) -> dict:
    """``spatialprobe bench NAME --data DATA`` asked of a model that replies ``replies[prompt]``
    (generate protocol): the run's summary.json (the command must succeed)."""
    model = write_model(root / "model", replies, "scripted-views")
    with scripted():
        said = CliRunner().invoke(app, ["bench", name, "--data", str(data), "--model", str(model), "--protocol",
                                        "generate", "--out", str(root / "run"), *more])
    assert said.exit_code == 0, said.output
    return json.loads((root / "run" / "summary.json").read_text())


def rows(root: Path) -> list[dict]:
    """The run's predictions.jsonl rows."""
    return [json.loads(line) for line in (root / "run" / "predictions.jsonl").read_text().splitlines()]


def scored_rows(source, said: Sequence[str]) -> list[dict]:
    """The rows a generate run writes for ``said`` (one reply per item): each reply read by the
    source's official reader and by ``strict`` (spatialprobe.engine.reading, as the run reads it)."""
    from spatialprobe.engine.reading import read_answers
    from spatialprobe.readers.base import get

    official, strict = get(source.reader), get("strict")
    return [{"instance_id": item.key, "gold": item.gold, **item.fields,
             **read_answers(source, item, item.wording("question"), [{"generate": {"reply": reply}}], "generate",
                            official, strict)}
            for item, reply in zip(source.items, said, strict=True)]


def random_script(source, seed: int) -> dict[str, list[str]]:
    """One random reply per item (tests/official/replies.py: 37 shapes), keyed by the item's prompt."""
    import random

    from official.replies import replies

    rng = random.Random(seed)
    return {item.question: [replies(list(item.options), item.gold, 1, seed=rng.randrange(10**6))[0].text]
            for item in source.items}
