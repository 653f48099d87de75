"""The machinery of the fidelity measurements (tests/fidelity.py, tests/fidelity_newest.py): a
benchmark's module reads a small copy, the engine reads random replies by the official reader and
by ``strict`` (:func:`spatialprobe.engine.reading.read_answers`,
:func:`spatialprobe.engine.metrics.official_metrics`), and each run's readings and metrics are
compared with the authors' code as transcribed in tests/official/."""

from __future__ import annotations

import json
import random
import string
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from official.replies import reply  # noqa: E402

ROUNDS = 30
"""Random runs per benchmark (each a fresh reply to every item)."""
WORDS = ["left", "right", "above", "below", "behind", "in front", "near", "far", "inside", "on top"]


@dataclass
class Measured:
    """One benchmark's official reader against its authors' code."""

    benchmark: str
    reader: str
    cases: int = 0
    shapes: set[str] = field(default_factory=set)
    read_differently: int = 0
    strict_differs: int = 0
    """Replies ``strict`` reads otherwise than the official reader (the run's disagreement count)."""
    differences: dict[str, float] = field(default_factory=dict)
    """Metric -> the largest |engine − authors| over the runs, in points."""
    note: str = ""

    def add(self, metric: str, ours: float | None, theirs: float) -> None:
        """One run's metric, the engine's against the authors'."""
        diff = abs((ours if ours is not None else float("nan")) - theirs)
        self.differences[metric] = max(self.differences.get(metric, 0.0), diff if diff == diff else float("inf"))

    @property
    def identical(self) -> bool:
        return self.read_differently == 0 and all(d < 1e-6 for d in self.differences.values())


# -- running the engine's reading on a source ------------------------------------------------------
def engine_metrics(source: Any, answers: Mapping[str, Mapping[str, Any]]) -> tuple[list[dict[str, Any]], dict]:
    """The rows the engine writes for ``answers`` (item key -> one answer) and its official metrics."""
    from spatialprobe.engine.metrics import official_metrics
    from spatialprobe.engine.reading import read_answers
    from spatialprobe.readers.base import get

    official, strict = get(source.reader), get("strict")
    protocol = "generate" if "generate" in next(iter(answers.values())) else "likelihood"
    rows = []
    for item in source.items:
        wording = item.wording("question")
        rows.append({"instance_id": item.key, "gold": item.gold, **item.fields,
                     **read_answers(source, item, wording, [answers[item.key]], protocol, official, strict)})
    metrics, _ = official_metrics(rows, source.spec, source.official, strict=True)
    found = {name: m.mean for name, m in metrics.items()}
    found["__disagree"] = sum(r["pred"] != r["pred_strict"] for r in rows)
    return rows, found


def built(name: str, data: Path, **settings: Any) -> Any:
    from spatialprobe.benchmarks.local_copy import text_only
    from spatialprobe.engine.rebuild import rebuild_source

    with text_only():
        return rebuild_source({"name": name, "data": str(data), **settings}, 0)


def jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def draw_options(rng: random.Random, k: int) -> list[str]:
    return rng.sample(WORDS, k)


def random_replies(source: Any, rng: random.Random, measured: Measured) -> dict[str, Any]:
    """A random reply (of a random shape) to every item, meaning its gold letter about half the time."""
    out = {}
    for item in source.items:
        options = list(item.wording("question").options)
        drawn = reply(rng, options, string.ascii_uppercase[item.labels.index(item.gold)])
        measured.cases += 1
        measured.shapes.add(drawn.shape)
        out[item.key] = drawn.text
    return out


def generated(texts: Mapping[str, str]) -> dict[str, Any]:
    return {key: {"generate": {"reply": text, "rule": None}} for key, text in texts.items()}


Authors = Callable[[Any], tuple[Sequence[Any], dict[str, float]]]
"""What was drawn -> (each item right or wrong, in the source's item order; metric -> the authors' number)."""


def compare(source: Any, measured: Measured, draw: Callable[[], tuple[dict[str, Any], Any]], authors: Authors,
            rounds: int = ROUNDS, digits: int | None = None,
            verdict: Callable[[Mapping[str, Any]], float] | None = None) -> Measured:
    """``rounds`` runs: ``draw()`` gives the engine's answers (item key -> answer) and what the
    authors' code is fed; each run's readings and metrics are compared (the engine's rounded to
    ``digits`` where the authors round theirs). ``verdict``: a row's score as the engine has it
    (default: its reading is the gold, 1 or 0), compared with the authors' per item."""
    for _ in range(rounds):
        answers, fed = draw()
        rows, ours = engine_metrics(source, answers)
        measured.strict_differs += ours.pop("__disagree")
        right, theirs = authors(fed)
        scored = verdict or (lambda row: float(row["pred"] == row["gold"]))
        measured.read_differently += sum(abs(scored(r) - float(x)) > 1e-9 for r, x in zip(rows, right, strict=True))
        for name, value in theirs.items():
            mine = ours[name]
            measured.add(name, mine if digits is None or mine is None else round(mine, digits), value)
    return measured


def replied(source: Any, rng: random.Random, measured: Measured) -> Callable[[], tuple[dict[str, Any], Any]]:
    def draw() -> tuple[dict[str, Any], Any]:
        texts = random_replies(source, rng, measured)
        return generated(texts), texts
    return draw


