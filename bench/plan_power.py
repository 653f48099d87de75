"""Does ``spatialprobe plan``'s item count give the power it promises? Measured, not assumed.

Two models answer items that come in images of ``size`` items. Per item, A alone is right with
probability p10, B alone with p01 (discordance ψ = p10 + p01, difference δ = p10 − p01), both or
neither with the rest. With probability ``shared`` an image's items all take one draw (errors
driven by the image), else each item its own. For each design the bench

1. draws a pilot of 100 images and measures its design effect as ``plan`` does
   (:func:`spatialprobe.reports.plan.pair_design`: the cluster-robust variance of A − B over the
   independent-items variance);
2. takes the items ``plan`` asks for, deff × Connor (1987), rounded up to whole images;
3. draws ``replications`` benchmarks of that size and counts how often the toolkit's paired test
   (:func:`spatialprobe.metrics.paired.paired_differences`, the one of ``report A B`` and
   ``compare``) gives p < 0.05: the power, ± one Monte Carlo error. The target is 0.80.

Run: ``OMP_NUM_THREADS=1 python bench/plan_power.py [--replications 500] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from spatialprobe.metrics.intervals import Resampling
from spatialprobe.metrics.paired import paired_differences
from spatialprobe.reports.plan import connor_items, pair_design

SPEC = Resampling(("y", "n"), ("image",), key=("instance_id",), pooled=True, unit="images")
PSI, DELTA = 0.3, 0.1
DESIGNS = (("independent items", 1, 0.0), ("images of 4, half the images shared", 4, 0.5),
           ("images of 4, every image shared", 4, 1.0))


def draw(rng: np.random.Generator, images: int, size: int, shared: float) -> tuple[list[dict], list[dict]]:
    """Rows of A and B: each item's outcome (A only, B only, both, neither) drawn per image or per item."""
    p10 = (PSI + DELTA) / 2  # A alone right on [0, p10), B alone on [p10, PSI)
    per_image = rng.random(images) < shared
    u_image, u_item = rng.random(images), rng.random((images, size))
    rows_a, rows_b = [], []
    for i in range(images):
        for j in range(size):
            u = u_image[i] if per_image[i] else u_item[i, j]
            right_a = u < p10 or u >= PSI + (1 - PSI) / 2
            right_b = p10 <= u < PSI or u >= PSI + (1 - PSI) / 2
            key = {"instance_id": f"{i}-{j}", "image": str(i), "gold": "y"}
            rows_a.append({**key, "pred": "y" if right_a else "n"})
            rows_b.append({**key, "pred": "y" if right_b else "n"})
    return rows_a, rows_b


def power(rng: np.random.Generator, images: int, size: int, shared: float, replications: int) -> float:
    hits = 0
    for _ in range(replications):
        a, b = draw(rng, images, size, shared)
        hits += paired_differences(a, b, SPEC)[0].p < 0.05
    return hits / replications


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    lines = [f"ψ = {PSI}, δ = {DELTA} ({100 * DELTA:.0f} points), power 0.80 wanted, {args.replications} "
             "replications\n", "| design | pilot design effect | items planned | power (p < 0.05) |",
             "|---|---|---|---|"]
    for name, size, shared in DESIGNS:
        _, _, deff = pair_design(*draw(rng, 100, size, shared), SPEC)
        deff = max(deff, 1.0)
        images = math.ceil(deff * connor_items(PSI, DELTA) / size)
        found = power(rng, images, size, shared, args.replications)
        error = math.sqrt(found * (1 - found) / args.replications)
        lines.append(f"| {name} | {deff:.2f} | {images * size} ({images} images) | {found:.3f} ± {error:.3f} |")
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main()
