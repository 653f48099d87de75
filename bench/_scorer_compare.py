"""Old against new scoring code of one scorer, side by side in one run: shared by the scorer benches.

* :func:`arguments`: the options both benches take (device, size, model shape, batch size).
* :func:`size_requests`: the requests ``spatialprobe probe size`` scores, every built-in prompt x
  every instance (or the first ``instances``), each with every answer word of every answer set.
* :func:`alternate`: both paths score every request, in the probe's chunks of ``CELLS_PER_COMMIT``
  requests, ALTERNATING chunk by chunk so that a shared machine's changing load weighs on both alike.
* :func:`report`: the seconds, their ratio, the largest score difference, whether every request's
  best word is the same, and the achieved FLOP/s of each path against a matmul peak measured in
  the same run (before and after the timing, the higher of the two). FLOPs are counted with
  FlopCounterMode on every k-th request, about 64 of them, and scaled by the number of requests.
"""

from __future__ import annotations

import time

from _limits import count_flops, peak_matmul


def arguments(doc: str, batch_size: int, what: str):
    """The options both scorer benches take."""
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
    from spatialprobe import datasets
    from spatialprobe.models import chat as chat_format
    from spatialprobe.models.base import ScoreRequest
    from spatialprobe.prompts.templates import builtin, fill

    ds = datasets.load("size")
    chosen = ds.instances[:instances] if instances else ds.instances
    if chat:
        template = chat_format.question_template("size")
        return chat_format.requests([(template, inst) for inst in chosen], "size", ds.labels)
    cands = builtin("size")
    words = tuple(dict.fromkeys(w for answers in cands.answer_sets(ds.labels) for w in answers))
    return [ScoreRequest(*fill(t, inst), words) for t in cands.templates for inst in chosen]


def alternate(paths: dict, requests) -> tuple[dict[str, float], dict[str, list]]:
    """(seconds, scores) of each named path over ``requests``, chunk by chunk, alternating."""
    from spatialprobe.probing.run import CELLS_PER_COMMIT

    seconds = dict.fromkeys(paths, 0.0)
    scores: dict[str, list] = {name: [] for name in paths}
    for start in range(0, len(requests), CELLS_PER_COMMIT):
        chunk = requests[start:start + CELLS_PER_COMMIT]
        for name, path in paths.items():
            began = time.perf_counter()
            scores[name].extend(path.score(chunk))
            seconds[name] += time.perf_counter() - began
    return seconds, scores


def report(paths: dict, requests, device, dtype, unit: str) -> float:
    """Time ``paths`` (``{"old": ..., "new": ...}``) over ``requests`` and print the comparison; the ratio."""
    import numpy as np

    peak = peak_matmul(device, dtype)
    print(f"{len(requests)} requests ({unit})")
    seconds, scores = alternate(paths, requests)
    peak = max(peak, peak_matmul(device, dtype), key=lambda p: p.flops_per_s)  # a shared machine's load varies
    print(f"{peak.describe()} (the higher of two, before and after)")
    old, new = (np.array([s for row in scores[name] for s in row]) for name in ("old", "new"))
    best = [(int(np.argmax(a)), int(np.argmax(b))) for a, b in zip(scores["old"], scores["new"], strict=True) if a]
    changed = sum(a != b for a, b in best)
    print(f"largest score difference over {len(old):,} scores: {np.abs(old - new).max():.1e}; "
          f"best word differs in {changed} of {len(best)} requests")
    sample = requests[::-(-len(requests) // 64)]
    for name, path in paths.items():
        flops = count_flops(path.score, sample)[1] * len(requests) / len(sample)
        print(peak.line(flops, seconds[name], f"{name} scoring"))
    ratio = seconds["old"] / seconds["new"]
    print(f"old {seconds['old']:.1f} s, new {seconds['new']:.1f} s, speed-up {ratio:.2f}x")
    return ratio
