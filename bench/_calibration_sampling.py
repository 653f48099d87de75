"""The repeated-sampling designs of the calibration bench (bench/calibration.py): items asked K
times each (``--samples K --temperature T``), with a known item variance and a known sampling
variance, and the coverage of the headline's 95 % interval by

* **spatialprobe**: the two-level bootstrap with the items' deviations shrunk so the sampling
  variance is counted once (:func:`spatialprobe.metrics.sampling.two_level`);
* the **naive two-level bootstrap** (clusters, then samples, nothing shrunk): it counts the
  sampling variance twice, and over-covers where sampling dominates;
* the **cluster-robust interval over (item, sample) rows** (what the run gives every other metric);
* the **row bootstrap** that treats every (item, sample) row as an independent draw (no clusters,
  no items): too narrow wherever items differ.

Model: image effects u ~ N(0, sd_image), item effects e ~ N(0, sd_item), an item's chance of being
right p = expit(mu + u + e), each of its K samples right with probability p (binary), or (``beta``)
each sample a value in [0, 1] drawn from Beta(p·φ, (1 − p)·φ) around p, as a per-sample MRA. The
truth is E[p] = population(mu, sqrt(sd_image² + sd_item²)); the item variance is Var(p), the
sampling variance E[p(1 − p)] (binary) or E[p(1 − p)] / (φ + 1) (beta).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from _calibration_designs import mu_for, population
from scipy import special

from spatialprobe.metrics.intervals import Resampling, metric_intervals
from spatialprobe.metrics.sampling import two_level

NODES = np.random.default_rng(12345).standard_normal(400_000)


@dataclass(frozen=True)
class SamplingDesign:
    name: str
    images: int
    per_image: int
    samples: int
    sd_image: float
    sd_item: float
    accuracy: float = 65.0
    phi: float | None = None
    """Beta precision of a per-sample value in [0, 1]; None: binary right/wrong."""

    @property
    def mu(self) -> float:
        return mu_for(self.accuracy, math.hypot(self.sd_image, self.sd_item))

    def variances(self) -> tuple[float, float]:
        """(item variance Var(p), sampling variance of one sample) in squared points, by Monte Carlo."""
        p = special.expit(self.mu + math.hypot(self.sd_image, self.sd_item) * NODES)
        return float(1e4 * p.var()), float(1e4 * self.within(p).mean())

    def within(self, p: np.ndarray) -> np.ndarray:
        """The variance of one sample of items of chance p."""
        return p * (1 - p) / (1 if self.phi is None else self.phi + 1)

    def make(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(values [items, K], image index per item, each item's p)."""
        images = np.repeat(np.arange(self.images), self.per_image)
        logits = self.mu + self.sd_image * rng.standard_normal(self.images)[images] \
            + self.sd_item * rng.standard_normal(images.size)
        p = special.expit(logits)[:, None]
        if self.phi is None:
            values = (rng.random((images.size, self.samples)) < p).astype(float)
        else:
            values = rng.beta(p * self.phi, (1 - p) * self.phi, (images.size, self.samples))
        return values, images, p[:, 0]


def designs() -> list[SamplingDesign]:
    return [
        SamplingDesign("sampling only: 60 items, K = 5, every item alike", 60, 1, 5, 0.0, 0.0),
        SamplingDesign("items and sampling: 20 images × 3 items, K = 5", 20, 3, 5, 0.5, 1.0),
        SamplingDesign("items dominate: 25 images × 4 items, K = 3", 25, 4, 3, 1.0, 2.5),
        SamplingDesign("two samples: 80 items, K = 2", 80, 1, 2, 0.0, 1.0),
        SamplingDesign("MRA-like values in [0, 1]: 15 images × 4 items, K = 5", 15, 4, 5, 0.5, 0.8, 55.0, phi=4.0),
    ]


def run(design: SamplingDesign, replications: int, seed: int, resamples: int) -> dict[str, tuple[float, float]]:
    """Each method's coverage of the truth (± one Monte Carlo error), and the mean sampling share."""
    rng = np.random.default_rng(seed)
    truth = population(design.mu, math.hypot(design.sd_image, design.sd_item))
    hits: dict[str, list[bool]] = {}
    shares, points, conditional = [], [], []
    for rep in range(replications):
        values, images, p = design.make(rng)
        points.append(100 * values.mean())
        conditional.append(1e4 * design.within(p).sum() / design.samples / p.size ** 2)
        keys = images[:, None]
        new = two_level(values, keys, design.images, resamples, seed + rep)
        naive = two_level(values, keys, design.images, resamples, seed + rep, shrink=False)
        shares.append(new.sampling_share or 0.0)
        rows = [{"instance_id": f"{i}@{k}", "image": int(images[i]), "v": float(values[i, k])}
                for i in range(values.shape[0]) for k in range(design.samples)]
        spec = Resampling((), ("image",), metrics={"mra": "mra"}, pred="v", pooled=True)
        robust = metric_intervals(rows, spec)["mra"][""]
        flat = values.ravel()
        boot = flat[rng.integers(0, flat.size, (resamples, flat.size))].mean(1) * 100
        for name, ci in (("new", new.ci), ("naive", naive.ci), ("robust", robust),
                         ("rows", tuple(np.percentile(boot, [2.5, 97.5])))):
            hits.setdefault(name, []).append(ci is not None and ci[0] <= truth <= ci[1])
    out = {name: (float(np.mean(h)), math.sqrt(max(np.mean(h) * (1 - np.mean(h)), 1e-12) / len(h)))
           for name, h in hits.items()}
    out["share"] = (float(np.mean(shares)), float(np.std(shares) / math.sqrt(len(shares))))
    out["true share"] = (float(np.mean(conditional) / np.var(points)), 0.0)  # E[Var(score | items)] / Var(score)
    return out


def table(results: dict[str, dict[str, tuple[float, float]]], found: dict[str, SamplingDesign]) -> str:
    lines = ["| repeated sampling: design | item / sampling variance (pt²) | true sampling share "
             "| reported share | spatialprobe: two-level, shrunk | naive two-level | cluster-robust over rows "
             "| rows as independent |", "|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        d = found[name]
        item, within = d.variances()
        lines.append(f"| {name} | {item:.0f} / {within:.0f} | {r['true share'][0]:.2f} | {r['share'][0]:.2f} | "
                     + " | ".join(f"{r[m][0]:.3f} ± {r[m][1]:.3f}" for m in ("new", "naive", "robust", "rows")) + " |")
    return "\n".join(lines)


def main(replications: int, seed: int, resamples: int) -> str:
    found = {d.name: d for d in designs()}
    return table({name: run(d, replications, seed, resamples) for name, d in found.items()}, found)
