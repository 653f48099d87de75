"""A test-only run kind for the Ray path (:mod:`spatialprobe.runner.scale`): cheap items whose
results are known, a pause per batch (to kill a driver mid-run), and a worker that kills itself
by pid in its first batch (to lose a worker mid-run).

Run as ``python -c "import ray_helpers; ray_helpers.drive(OUT, ADDRESS)"`` it is a driver that a
test kills with ``kill -9``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spatialprobe.runner import Evaluation, Item, RunKind, execute
from spatialprobe.runner.summary import single


@dataclass(frozen=True)
class CountSettings:
    items: int
    seed: int = 0
    pause: float = 0.0
    """Seconds each batch takes (a driver can be killed between its commits)."""
    kill_marker: str | None = None
    """A path prefix: a Ray worker computing the batch of ``kill_item`` kills itself (SIGKILL, its
    own pid) mid-batch while it can create ``MARKER.0`` .. ``MARKER.{kill_times - 1}``."""
    kill_item: str = "item000"
    kill_times: int = 1
    batch_size: int = 4


class CountRun(RunKind):
    """Item ``i`` -> ``{"i": i, "square": i*i, "guess": a seeded draw keyed by the item}``;
    accuracy: the share of items whose guess is below 0.5."""

    kind = "count-test"
    Settings = CountSettings

    def __init__(self, settings: CountSettings):
        self.settings, self.batch_size = settings, settings.batch_size

    def resolved(self) -> CountSettings:
        return self.settings

    @classmethod
    def from_settings(cls, settings: CountSettings) -> CountRun:
        return cls(settings)

    def items(self) -> list[Item]:
        return [Item(f"item{i:03d}", i) for i in range(self.settings.items)]

    def work(self, batch: Sequence[Item]) -> Any:
        s = self.settings
        if s.kill_marker is not None and any(item.key == s.kill_item for item in batch):
            for n in range(s.kill_times):
                try:
                    fd = os.open(f"{s.kill_marker}.{n}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    continue
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)  # dies mid-batch, its batch in flight
        return self.compute(batch)

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        time.sleep(self.settings.pause)
        return [{"i": item.payload, "square": item.payload ** 2,
                 "guess": round(random.Random(f"{self.settings.seed}:{item.key}").random(), 6)}
                for item in batch]

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        rows = [{"key": key, **value} for key, value in results.items()]
        low = sum(row["guess"] < 0.5 for row in rows)
        return Evaluation(rows, {"accuracy": single(100.0 * low / len(rows), len(rows))},
                          "count", "none", f"count-{self.settings.items}", self.settings.seed)

    def table(self, summary: Mapping[str, Any]) -> str:
        return f"accuracy {summary['accuracy']['mean']:.1f}\n"


def committed(run: Path) -> int:
    """Rows the run's cache holds (none before it made its table)."""
    with sqlite3.connect(run / "run.sqlite") as conn:
        try:
            return int(conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def drive(out: str, address: str, settings: str) -> None:
    """A driver joining the test cluster (its workers import tests/) that runs CountRun."""
    import ray

    from spatialprobe.runner.scale import Scale

    tests = Path(__file__).resolve().parent
    ray.init(address=address, runtime_env={"env_vars": {
        "PYTHONPATH": os.pathsep.join((str(tests.parent), str(tests))), "OMP_NUM_THREADS": "1"}})
    kind = CountRun(CountSettings(**json.loads(settings)))
    kind.scale = Scale(address, 2)
    execute(kind, out)
    sys.stdout.write("finished\n")
