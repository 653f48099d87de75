"""Calibration of spatialprobe's intervals and paired tests on simulated runs with a known truth (issue 29).

For each design a run kind reports - questions sharing an image, few images, object pairs whose
errors come from the objects or from the pairs (with folds), judge scores of several images per
prompt, κ between two judges with several images per prompt (``judge compare``), an
all-but-perfect run near the boundary, and the paired comparison of two runs (``report A B``; the
vision gain, real against blind, of an ask run on an incomplete size-task-like design) - it draws
``replications`` data sets from a logit-normal model whose population value is known
(Gauss-Hermite quadrature; κ in closed form), calls the toolkit's own functions
(:func:`spatialprobe.metrics.intervals.metric_intervals`, :func:`spatialprobe.metrics.paired.paired_differences`,
:func:`spatialprobe.metrics.baselines.vision_gain`, :func:`spatialprobe.judging.compare_stats.group_stats`)
with the specs the run kinds build, and counts

* the coverage of the 95 % interval (± one Monte Carlo error) beside the percentile cluster
  (pigeonhole) bootstrap used before, the instance bootstrap most tools use (for κ: the image
  bootstrap used before), and lmms-eval's
  clustered standard error (``lmms_eval/api/metrics.py::clustered_stderr``, EvolvingLMMs-Lab/lmms-eval
  commit 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3; Miller 2024, eq. 4), re-coded here with its
  ±1.96 SE interval;
* the type-I error of the paired test (two models of equal true accuracy that fail on different
  objects/images) and its power at 5 and 10 points, beside an oracle z test that knows the true
  spread of the difference (its SD over the replications at that difference), the permutation
  test that swapped whole units (used before) and lmms-eval's row-level ``paired_ttest``.

At 2000 replications one Monte Carlo error is 0.005 at a rate of 0.95 or 0.05, so the bands
[0.92, 0.98] and ≤ 0.06 are 2–6 errors wide.

Run: ``OMP_NUM_THREADS=1 python bench/calibration.py --replications 2000 --resamples 1000`` (prints the
markdown table the README quotes). ``tests/test_calibration.py`` runs a short deterministic version.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special, stats

from spatialprobe.judging.compare_stats import group_stats
from spatialprobe.metrics.baselines import vision_gain
from spatialprobe.metrics.intervals import Resampling, cluster_bootstrap, encode, grouped, metric_intervals, row_weights
from spatialprobe.metrics.paired import paired_differences

NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)


def population(mu: float, sd: float) -> float:
    """E[expit(mu + sd Z)], Z standard normal: the population accuracy in percent."""
    return float(100 * np.sum(WEIGHTS * special.expit(mu + sd * NODES)) / np.sqrt(2 * np.pi))


def mu_for(accuracy: float, sd: float) -> float:
    return float(optimize.brentq(lambda m: population(m, sd) - accuracy, -15, 15))


@dataclass
class Data:
    """One simulated run (or two, paired): rows, the spec its kind builds, the true value."""

    rows: list[dict]
    spec: Resampling
    truth: float
    rows_b: list[dict] | None = None
    lmms_cluster: str = "image"
    """The single field lmms-eval's clustered SE would be given."""
    judged: dict | None = None
    """Two judges' answers by (prompt id, image index), for κ (``judge compare``)."""


@dataclass
class Design:
    name: str
    make: Callable[[np.random.Generator, float], Data]
    """(rng, difference in points: 0 for the null) -> data."""
    paired: bool = False
    through: str = "paired_differences"
    """The toolkit's function measured: ``paired_differences`` (``report A B``), ``vision_gain``
    (an ask run's real − blind), ``metric_intervals`` (a run's interval) or ``kappa``
    (``judge compare``'s group statistics)."""
    results: dict = field(default_factory=dict)


def _answer(correct: np.ndarray) -> list[str]:
    return ["y" if c else "n" for c in correct]


def images(k: int, sd: float = 1.0, accuracy: float = 75.0) -> Callable[[np.random.Generator, float], Data]:
    """k images with 1-5 questions each; image effects N(0, sd) on the logit scale."""
    mu = mu_for(accuracy, sd)

    def make(rng: np.random.Generator, delta: float) -> Data:
        sizes = rng.integers(1, 6, size=k)
        image = np.repeat(np.arange(k), sizes)
        p = special.expit(mu + sd * rng.normal(size=k)[image])
        rows = [{"instance_id": str(i), "image": f"i{g}", "gold": "y", "pred": a}
                for i, (g, a) in enumerate(zip(image, _answer(rng.random(len(p)) < p), strict=True))]
        mu_b = mu_for(accuracy - delta, sd)
        p_b = special.expit(mu_b + sd * rng.normal(size=k)[image])
        rows_b = [dict(r, pred=a) for r, a in zip(rows, _answer(rng.random(len(p)) < p_b), strict=True)]
        spec = Resampling(("y", "n"), ("image",), key=("instance_id",), unit="images", metrics={"accuracy": "accuracy"})
        return Data(rows, spec, accuracy, rows_b, "image")
    return make


def object_pairs(k: int, sd_object: float, sd_pair: float, accuracy: float = 75.0, folds: int = 3,
                 pairs: int | None = None) -> Callable[[np.random.Generator, float], Data]:
    """Every pair of k objects (or the first ``pairs`` of them in a fixed shuffled order: an
    incomplete design, as the size task's) asked in both orders, split into folds by pair;
    logit = mu + u_a + u_b + v_ab."""
    sd = math.sqrt(2 * sd_object ** 2 + sd_pair ** 2)
    mu = mu_for(accuracy, sd)
    a, b = np.triu_indices(k, 1)
    if pairs is not None:
        keep = np.sort(np.random.default_rng(k).permutation(len(a))[:pairs])
        a, b = a[keep], b[keep]

    def draw(rng: np.random.Generator, m: float) -> np.ndarray:
        u = sd_object * rng.normal(size=k)
        v = sd_pair * rng.normal(size=len(a))
        logit = np.repeat(m + u[a] + u[b] + v, 2)
        return rng.random(len(logit)) < special.expit(logit)

    def make(rng: np.random.Generator, delta: float) -> Data:
        fold = rng.integers(0, folds, size=len(a))
        right = draw(rng, mu)
        rows = []
        for n in range(len(a)):
            for order in (0, 1):
                gold = "larger" if order == 0 else "smaller"
                other = "smaller" if order == 0 else "larger"
                rows.append({"instance_id": f"{n}-{order}", "fold": int(fold[n]), "obj_a": f"o{a[n]}",
                             "obj_b": f"o{b[n]}", "pair": f"{a[n]}-{b[n]}", "gold": gold,
                             "pred": gold if right[2 * n + order] else other})
        right_b = draw(rng, mu_for(accuracy - delta, sd))
        rows_b = [dict(r, pred=r["gold"] if c else ("smaller" if r["gold"] == "larger" else "larger"))
                  for r, c in zip(rows, right_b, strict=True)]
        spec = Resampling(("larger", "smaller"), ("obj_a", "obj_b"), group="fold", metrics={"accuracy": "accuracy"})
        return Data(rows, spec, accuracy, rows_b, "pair")
    return make


def prompts(k: int, per: int = 4, sd: float = 1.5, share: float = 70.0) -> Callable[[np.random.Generator, float], Data]:
    """Judge scores: k prompts with ``per`` images each, a yes/no judgement per image; prompt effects N(0, sd)."""
    mu = mu_for(share, sd)

    def make(rng: np.random.Generator, delta: float) -> Data:
        prompt = np.repeat(np.arange(k), per)
        p = special.expit(mu + sd * rng.normal(size=k)[prompt])
        yes = rng.random(len(p)) < p
        rows = [{"instance_id": str(i), "prompt": f"p{g}", "image_index": i % per, "score": bool(y)}
                for i, (g, y) in enumerate(zip(prompt, yes, strict=True))]
        spec = Resampling((), ("prompt",), key=("instance_id",), pred="score", unit="prompts",
                          metrics={"share": "share"})
        return Data(rows, spec, share, None, "prompt")
    return make


KAPPA_ACCURACY = 75.0
KAPPA_TRUTH = (2 * KAPPA_ACCURACY / 100 - 1) ** 2
"""Two judges right with probability q = 75 % each, independently given the prompt, on a gold
label that is left or right with probability 1/2: agreement q² + (1−q)², chance agreement 1/2, so
the population κ is (2q − 1)² = 0.25."""


def kappa_prompts(k: int = 30, per: int = 4, sd: float = 3.0) -> Callable[[np.random.Generator, float], Data]:
    """Two judges answer "left of"/"right of" on k prompts' ``per`` images each; whether a judge is
    right depends on the prompt (its own effect per prompt, N(0, sd) on the logit scale), so the
    judges' disagreement is prompt-driven: the images of a prompt are not independent."""
    mu = mu_for(KAPPA_ACCURACY, sd)

    def make(rng: np.random.Generator, delta: float) -> Data:
        gold = rng.choice(["left of", "right of"], size=k)
        judged: dict[str, dict] = {}
        for judge in ("a", "b"):
            p = special.expit(mu + sd * rng.normal(size=k))
            right = rng.random((k, per)) < p[:, None]
            judged[judge] = {(f"p{i:03d}", j): {"gold": str(gold[i]), "recognized": True,
                                                "pred": str(gold[i]) if right[i, j] else
                                                ("right of" if gold[i] == "left of" else "left of")}
                             for i in range(k) for j in range(per)}
        return Data([], Resampling(()), KAPPA_TRUTH, None, "prompt", judged)
    return make


def boundary(n: int = 20, accuracy: float = 95.0) -> Callable[[np.random.Generator, float], Data]:
    """n independent questions at a true accuracy near 100 %."""
    def make(rng: np.random.Generator, delta: float) -> Data:
        rows = [{"instance_id": str(i), "gold": "y", "pred": a}
                for i, a in enumerate(_answer(rng.random(n) < accuracy / 100))]
        return Data(rows, Resampling(("y", "n"), metrics={"accuracy": "accuracy"}), accuracy, None, "instance_id")
    return make


# ---- the other methods ---------------------------------------------------------------------------

def pigeonhole_bootstrap(data: Data, resamples: int, seed: int) -> tuple[float, float]:
    """The percentile cluster bootstrap used before: rows weigh count(a) x count(b)."""
    enc = encode(data.rows, data.spec)
    low, high = cluster_bootstrap(enc.n_clusters, lambda d: grouped(enc, "accuracy" if "accuracy" in data.spec.metrics
                                                                    else "share", enc.pred,
                                                                    row_weights(d, enc.keys, enc.n_clusters))[-1:],
                                  len(data.rows), resamples, seed)
    return float(low[0]), float(high[0])


def instance_bootstrap(data: Data, resamples: int, seed: int) -> tuple[float, float]:
    flat = Resampling(data.spec.labels, ("instance_id",), data.spec.group, pred=data.spec.pred,
                      key=data.spec.key, metrics=data.spec.metrics)
    return pigeonhole_bootstrap(Data(data.rows, flat, data.truth), resamples, seed)


def _scores(rows: list[dict], spec: Resampling) -> np.ndarray:
    if spec.pred == "score":
        return np.array([float(r["score"]) for r in rows])
    return np.array([float(r["pred"] == r["gold"]) for r in rows])


def lmms_clustered_stderr(scores: np.ndarray, clusters: list[str]) -> float:
    """lmms-eval's ``clustered_stderr`` (commit 75571cfe, lmms_eval/api/metrics.py), re-coded:
    sqrt(var(s)/n + (1/n^2) sum_c [(sum_i d_ic)^2 - sum_i d_ic^2]), d = s - mean."""
    n = len(scores)
    d = scores - scores.mean()
    se2 = d.var(ddof=1) / n
    index = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
    codes = np.array([index[c] for c in clusters])
    sums = np.bincount(codes, weights=d)
    squares = np.bincount(codes, weights=d * d)
    return math.sqrt(max(se2 + float((sums ** 2 - squares).sum()) / n ** 2, 0.0))


def lmms_interval(data: Data) -> tuple[float, float]:
    s = _scores(data.rows, data.spec)
    se = lmms_clustered_stderr(s, [r[data.lmms_cluster] for r in data.rows])
    return 100 * (s.mean() - 1.96 * se), 100 * (s.mean() + 1.96 * se)


def lmms_paired_p(data: Data) -> float:
    """lmms-eval's ``paired_ttest`` (same commit): a t test over rows, t_{n-1}."""
    assert data.rows_b is not None
    d = _scores(data.rows, data.spec) - _scores(data.rows_b, data.spec)
    se = d.std(ddof=1) / math.sqrt(len(d))
    if se == 0:
        return 1.0 if d.mean() == 0 else 0.0
    return float(2 * stats.t.sf(abs(d.mean()) / se, len(d) - 1))


def swap_units_p(data: Data, resamples: int, seed: int) -> float:
    """The permutation test used before: each unit's (an image's, an unordered pair's) two runs'
    predictions swapped with probability 1/2."""
    assert data.rows_b is not None
    unit_field = "pair" if data.lmms_cluster == "pair" else data.lmms_cluster
    units = sorted({r[unit_field] for r in data.rows})
    index = {u: i for i, u in enumerate(units)}
    codes = np.array([index[r[unit_field]] for r in data.rows])
    d = _scores(data.rows, data.spec) - _scores(data.rows_b, data.spec)
    sums = np.bincount(codes, weights=d, minlength=len(units))
    observed = abs(sums.sum())
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(resamples, len(units)))
    extreme = (np.abs(signs @ sums) >= observed - 1e-9).sum()
    return float((extreme + 1) / (resamples + 1))


# ---- the bench -----------------------------------------------------------------------------------

def designs() -> list[Design]:
    return [
        Design("images (40, ICC ~0.2)", images(40)),
        Design("few images (10)", images(10)),
        Design("object pairs, object errors, 3 folds", object_pairs(16, 0.7, 0.0)),
        Design("object pairs, pair errors, 3 folds", object_pairs(16, 0.0, 1.2)),
        Design("judge: 4 images per prompt (30)", prompts(30)),
        Design("κ (judge compare): 4 images per prompt (30), prompt-driven", kappa_prompts(30), through="kappa"),
        Design("boundary: n = 20 at 95 %", boundary()),
        Design("paired: images (40)", images(40), paired=True),
        Design("paired: object pairs, object errors", object_pairs(16, 0.7, 0.0), paired=True),
        Design("paired: object pairs, pair errors", object_pairs(16, 0.0, 1.2), paired=True),
        Design("vision gain (real − blind): 25 objects, 250 of 300 pairs, 5 folds, object errors",
               object_pairs(25, 0.7, 0.0, folds=5, pairs=250), paired=True, through="vision_gain"),
    ]


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
    args = parser.parse_args(argv)
    results = {d.name: run_design(d, args.replications, args.seed, args.resamples) for d in designs()}
    text = table(results) + (f"\n\nboundary: n = 20 at 95 %, exact coverage over the binomial: "
                             f"{exact_boundary_coverage():.4f}")
    print(f"replications {args.replications}, resamples {args.resamples}, seed {args.seed}\n\n{text}")
    return text


if __name__ == "__main__":
    main()
