"""Old against new scoring code of one scorer, side by side in one run: shared by the scorer benches.

* :func:`arguments`: the options the scorer benches take (device, size, model shape, batch size).
* :func:`size_requests`: the requests ``spatialprobe probe size`` scores, every built-in prompt x
  every instance (or the first ``instances``), each with every answer word of every answer set.
* :func:`alternate`: every path scores every request, in the probe's chunks of ``CELLS_PER_COMMIT``
  requests, ALTERNATING chunk by chunk so that a shared machine's changing load weighs on all alike.
* :func:`report`: the seconds of each path, the newest path's speed-up over each older one, the
  largest score difference and whether any request's best word changed, and the achieved FLOP/s of
  each path (and of any :class:`Meter`-timed part of one, e.g. the causal LM's head and
  normalisation) against a matmul peak measured in the same run with the same clock (before and
  after the timing, the higher of the two). FLOPs of a whole path are counted with
  FlopCounterMode on every k-th request, about 64 of them, and scaled by the number of requests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _limits import bench_clock, count_flops, peak_matmul


def arguments(doc: str, batch_size: int, what: str):
    """The options the scorer benches take."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--instances", type=int, default=0, help="the first N size instances (0: all 500)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--model", help=f"an existing {what} directory instead of the random one")
    return parser


def size_requests(instances: int | None = None, chat: bool = False):
    from spatialprobe.models import chat as chat_format
    from spatialprobe.models.base import ScoreRequest
    from spatialprobe.prompts.templates import builtin, fill
    from spatialprobe.tasks import data as task_data

    ds = task_data.load("size")
    chosen = ds.instances[:instances] if instances else ds.instances
    if chat:
        template = chat_format.question_template("size")
        return chat_format.requests([(template, inst) for inst in chosen], "size", ds.labels)
    cands = builtin("size")
    words = tuple(dict.fromkeys(w for answers in cands.answer_sets(ds.labels) for w in answers))
    return [ScoreRequest(*fill(t, inst), words) for t in cands.templates for inst in chosen]


@dataclass
class Meter:
    """Seconds and FLOPs of one part of a path, summed by the code that wraps that part (:meth:`run`)."""

    what: str
    clock: Callable[[], float] = time.perf_counter
    seconds: float = 0.0
    flops: float = 0.0
    on: bool = True
    """Off while FLOPs of whole paths are counted after the timing."""

    def run(self, flops: float, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``, its seconds and ``flops`` added (when on)."""
        start = self.clock()
        out = fn(*args)
        if self.on:
            self.seconds += self.clock() - start
            self.flops += flops
        return out


def alternate(paths: dict, requests, clock: Callable[[], float] = time.perf_counter
              ) -> tuple[dict[str, float], dict[str, list]]:
    """(seconds, scores) of each named path over ``requests``, chunk by chunk, alternating."""
    from spatialprobe.probing.run import CELLS_PER_COMMIT

    seconds = dict.fromkeys(paths, 0.0)
    scores: dict[str, list] = {name: [] for name in paths}
    for start in range(0, len(requests), CELLS_PER_COMMIT):
        chunk = requests[start:start + CELLS_PER_COMMIT]
        for name, path in paths.items():
            began = clock()
            scores[name].extend(path.score(chunk))
            seconds[name] += clock() - began
    return seconds, scores


def report(paths: dict, requests, device, dtype, unit: str, meters: tuple[Meter, ...] = ()) -> dict[str, float]:
    """Time ``paths`` (oldest first, the newest last) over ``requests`` and print the comparison;
    the newest path's speed-up over each older one, by name. ``meters``: parts of paths that time
    themselves (their clock is set here)."""
    import numpy as np

    clock, clock_name = bench_clock(device)
    for meter in meters:
        meter.clock = clock
    peak = peak_matmul(device, dtype, clock=clock_name)
    print(f"{len(requests)} requests ({unit}); {clock_name} time")
    seconds, scores = alternate(paths, requests, clock)
    for meter in meters:
        meter.on = False
    peak = max(peak, peak_matmul(device, dtype, clock=clock_name), key=lambda p: p.flops_per_s)  # load varies
    print(f"{peak.describe()} (the higher of two, before and after)")
    *older, newest = paths
    new = np.array([s for row in scores[newest] for s in row])
    for name in older:
        old = np.array([s for row in scores[name] for s in row])
        best = [(int(np.argmax(a)), int(np.argmax(b))) for a, b in zip(scores[name], scores[newest], strict=True) if a]
        changed = sum(a != b for a, b in best)
        print(f"{name} against {newest}: largest score difference over {len(old):,} scores: "
              f"{np.abs(old - new).max():.1e}; best word differs in {changed} of {len(best)} requests")
    sample = requests[::-(-len(requests) // 64)]
    for name, path in paths.items():
        flops = count_flops(path.score, sample)[1] * len(requests) / len(sample)
        print(peak.line(flops, seconds[name], f"{name} scoring"))
    for meter in meters:
        print(peak.line(meter.flops, meter.seconds, meter.what))
    ratios = {name: seconds[name] / seconds[newest] for name in older}
    print(" | ".join(f"{name} {seconds[name]:.1f} s" for name in paths) + "; speed-up of " + newest + ": "
          + ", ".join(f"{ratio:.2f}x over {name}" for name, ratio in ratios.items()))
    return ratios
