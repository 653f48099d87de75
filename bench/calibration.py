"""Calibration of spatialprobe's intervals and paired tests on simulated runs with a known truth.

For each design a run kind reports - questions sharing an image, few images, object pairs whose
errors come from the objects or from the pairs (with folds), judge scores of several images per
prompt, κ between two judges with several images per prompt (``judge compare``), an
all-but-perfect run near the boundary, and the paired comparison of two runs (``report A B``; the
vision gain, real against blind, of an ask run on an incomplete size-task-like design) - it draws
``replications`` data sets from a logit-normal model whose population value is known
(Gauss-Hermite quadrature; κ in closed form), calls the toolkit's own functions
(:func:`spatialprobe.metrics.intervals.metric_intervals`, :func:`spatialprobe.metrics.paired.paired_differences`,
:func:`spatialprobe.metrics.baselines.vision_gain`, :func:`spatialprobe.judging.judge_compare_stats.group_stats`)
with the specs the run kinds build, and counts

* the coverage of the 95 % interval (± one Monte Carlo error) beside the percentile cluster
  (pigeonhole) bootstrap used before, the instance bootstrap most tools use (for κ: the image
  bootstrap used before), and lmms-eval's
  clustered standard error (``lmms_eval/api/metrics.py::clustered_stderr``, EvolvingLMMs-Lab/lmms-eval
  commit 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3; Miller 2024, eq. 4), re-coded here with its
  ±1.96 SE interval;
* the coverage of a score over items asked K times each (``--samples K``: known item and sampling
  variances) by the two-level bootstrap, beside its naive (unshrunk) version, the cluster-robust
  interval over (item, sample) rows and a bootstrap of the rows as independent draws, and the
  share of variance from sampling it reports beside the true one (``_calibration_sampling.py``);
* the type-I error of the paired test (two models of equal true accuracy that fail on different
  objects/images) and its power at 5 and 10 points, beside an oracle z test that knows the true
  spread of the difference (its SD over the replications at that difference), the permutation
  test that swapped whole units (used before) and lmms-eval's row-level ``paired_ttest``.

At 2000 replications one Monte Carlo error is 0.005 at a rate of 0.95 or 0.05, so the bands
[0.92, 0.98] and ≤ 0.06 are 2–6 errors wide.

Run: ``OMP_NUM_THREADS=1 python bench/calibration.py --replications 2000 --resamples 1000`` (prints the
markdown table the README quotes). ``tests/test_calibration.py`` runs a short deterministic version.
The simulated designs are in ``_calibration_designs.py``, the methods compared in
``_calibration_baselines.py``; this script runs them and prints the table.
"""

from __future__ import annotations

import argparse
import math

import _calibration_sampling as sampling
import numpy as np
from _calibration_baselines import instance_bootstrap, lmms_interval, lmms_paired_p, pigeonhole_bootstrap, swap_units_p
from _calibration_designs import Data, Design, designs
from scipy import stats

from spatialprobe.judging.judge_compare_stats import group_stats
from spatialprobe.metrics.baselines import vision_gain
from spatialprobe.metrics.intervals import Resampling, metric_intervals
from spatialprobe.metrics.paired import paired_differences

# ---- the bench -----------------------------------------------------------------------------------

def rate(hits: list[bool]) -> tuple[float, float]:
    r = float(np.mean(hits))
    return r, math.sqrt(max(r * (1 - r), 1e-12) / len(hits))


def run_design(design: Design, replications: int, seed: int, resamples: int,
               deltas: tuple[float, ...] = (0.0, 5.0, 10.0)) -> dict[str, tuple[float, float]]:
    """Each method's rates on ``replications`` data sets of ``design`` (± one Monte Carlo error);
    a paired design at each true difference of ``deltas`` (0: the null; power on every other
    replication)."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[bool]] = {}
    differences: dict[str, list[float]] = {}

    def count(name: str, hit: bool) -> None:
        out.setdefault(name, []).append(bool(hit))

    for rep in range(replications):
        if design.paired:
            for delta in deltas:
                if delta and rep % 2:  # power on half the replications: it needs less precision
                    continue
                data = design.make(rng, delta)
                assert data.rows_b is not None
                difference, ci, p = paired_test(design, data)
                tag = "type-I" if delta == 0 else f"power {delta:.0f}"
                differences.setdefault(tag, []).append(difference)
                count(f"new {tag}", p < 0.05)
                count(f"new covers {tag}", ci is not None and ci[0] <= delta <= ci[1])
                count(f"swap {tag}", swap_units_p(data, resamples, seed + rep) < 0.05)
                count(f"lmms {tag}", lmms_paired_p(data) < 0.05)
        elif design.through == "kappa":
            data = design.make(rng, 0.0)
            assert data.judged is not None
            ci = kappa_interval(data.judged, resamples, seed + rep)
            count("new", ci is not None and ci[0] <= data.truth <= ci[1])
            each = {j: {(f"{key[0]}#{key[1]}", 0): row for key, row in rows.items()} for j, rows in data.judged.items()}
            ci = kappa_interval(each, resamples, seed + rep)
            count("instance", ci is not None and ci[0] <= data.truth <= ci[1])
        else:
            data = design.make(rng, 0.0)
            name = next(iter(data.spec.metrics))
            ci = metric_intervals(data.rows, data.spec)[name][""]
            count("new", ci is not None and ci[0] <= data.truth <= ci[1])
            low, high = pigeonhole_bootstrap(data, resamples, seed + rep)
            count("pigeonhole", low <= data.truth <= high)
            low, high = instance_bootstrap(data, resamples, seed + rep)
            count("instance", low <= data.truth <= high)
            low, high = lmms_interval(data)
            count("lmms", low <= data.truth <= high)
    results = {name: rate(hits) for name, hits in out.items()}
    for tag, values in differences.items():  # the oracle knows the difference's true spread
        spread = float(np.std(values))
        results[f"oracle {tag}"] = rate([abs(v) > stats.norm.ppf(0.975) * spread for v in values])
    return results


def paired_test(design: Design, data: Data) -> tuple[float, tuple[float, float] | None, float]:
    """(A − B, its 95 % interval, p) as ``report A B`` or an ask run's vision gain computes them."""
    assert data.rows_b is not None
    if design.through == "vision_gain":
        gain = vision_gain(data.rows, data.rows_b, data.spec)["accuracy"]
        return gain["gain"], tuple(gain["ci"]) if gain["ci"] else None, gain["p"]
    (diff,) = paired_differences(data.rows, data.rows_b, data.spec)
    return diff.difference, diff.ci, diff.p


def kappa_interval(judged: dict, resamples: int, seed: int) -> tuple[float, float] | None:
    """``judge compare``'s κ interval of judges a and b (its group statistics, on labels)."""
    keys = sorted(judged["a"])
    entry = group_stats(judged, keys, "label", resamples, seed)["kappa"]["a | b"]
    return None if entry["ci"] is None else tuple(entry["ci"])


def table(results: dict[str, dict[str, tuple[float, float]]]) -> str:
    def cell(r: dict[str, tuple[float, float]], key: str) -> str:
        return f"{r[key][0]:.3f} ± {r[key][1]:.3f}" if key in r else "–"

    lines = ["| design | spatialprobe (new) | pigeonhole bootstrap (before) | instance bootstrap "
             "| lmms-eval clustered SE |",
             "|---|---|---|---|---|"]
    for name, r in results.items():
        if "new" in r:
            lines.append(f"| {name}: coverage of 95 % | {cell(r, 'new')} | {cell(r, 'pigeonhole')} | "
                         f"{cell(r, 'instance')} | {cell(r, 'lmms')} |")
    lines += ["", "| paired design | spatialprobe: type-I | power 5 / 10 pts | oracle z test (true SD): power 5 / 10 "
              "| CI covers the difference (null) | swap units (before): type-I | lmms-eval paired t: type-I |",
              "|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        if "new type-I" in r:
            lines.append(f"| {name} | {cell(r, 'new type-I')} | {cell(r, 'new power 5')} / {cell(r, 'new power 10')} | "
                         f"{cell(r, 'oracle power 5')} / {cell(r, 'oracle power 10')} | "
                         f"{cell(r, 'new covers type-I')} | {cell(r, 'swap type-I')} | {cell(r, 'lmms type-I')} |")
    return "\n".join(lines)


def exact_boundary_coverage(n: int = 20, accuracy: float = 95.0) -> float:
    """The boundary design's coverage without Monte Carlo error: its interval is a function of the
    number right alone, so the coverage is the binomial probability of the counts whose interval
    holds the truth (at n = 20, 95 %: 18-20 right, 0.9245; 17 too would make it 0.9841)."""
    spec = Resampling(("y", "n"), metrics={"accuracy": "accuracy"})
    covered = 0.0
    for right in range(n + 1):
        rows = [{"instance_id": str(i), "gold": "y", "pred": "y" if i < right else "n"} for i in range(n)]
        ci = metric_intervals(rows, spec)["accuracy"][""]
        if ci is not None and ci[0] <= accuracy <= ci[1]:
            covered += float(stats.binom.pmf(right, n, accuracy / 100))
    return covered


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000, help="of the bootstraps and the swap test compared")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part", choices=("all", "sampling"), default="all",
                        help="sampling: only the repeated-sampling designs")
    args = parser.parse_args(argv)
    if args.part == "sampling":
        text = sampling.main(args.replications, args.seed, args.resamples)
        print(f"replications {args.replications}, resamples {args.resamples}, seed {args.seed}\n\n{text}")
        return text
    results = {d.name: run_design(d, args.replications, args.seed, args.resamples) for d in designs()}
    text = table(results) + (f"\n\nboundary: n = 20 at 95 %, exact coverage over the binomial: "
                             f"{exact_boundary_coverage():.4f}")
    text += "\n\n" + sampling.main(args.replications, args.seed, args.resamples)
    print(f"replications {args.replications}, resamples {args.resamples}, seed {args.seed}\n\n{text}")
    return text


if __name__ == "__main__":
    main()
