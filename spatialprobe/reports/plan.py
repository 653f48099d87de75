"""How big a difference can a benchmark tell apart? ``spatialprobe plan RUN [RUN_B]``.

Two models answer the same n items; a paired comparison of their accuracies sees only the
**discordant** items (one right, the other wrong). With p10 and p01 the shares of items where only
A or only B is right, the discordance ψ = p10 + p01 and the difference δ = p10 − p01, the McNemar
test at two-sided level α reaches power 1 − β with (Connor 1987, *Biometrics* 43: 207-211, eq. 3)

    n = (z_{1−α/2} √ψ + z_{1−β} √(ψ − δ²))² / δ²

independent items. Items that share a cluster (an image, an object) are not independent: the
variance of the paired difference is the cluster-robust variance (:mod:`spatialprobe.metrics.robust`,
the one ``report A B`` uses), larger than the independent-items variance (ψ − δ²)/n by the
**design effect** deff = V_clustered / V_independent (Kish 1965), measured on the pilot. The items
needed are deff × n (the same clusters' sizes assumed); the minimum detectable difference for N
items is the δ at which deff × n(δ) = N.

The pilot is either two runs of the same items (ψ, δ and the design effect of their difference
measured) or one run and an assumed discordance ``--discordance ψ`` (the design effect then that of
the run's own accuracy: clustered variance over p(1 − p)/n). A design effect measured below 1 is
taken as 1. ``n`` counts the rows the pilot's statistic is made of (a probe's rows per fold).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize, stats

from spatialprobe.errors import UsageError

ALPHA = 0.05
POWER = 0.8
CITATION = ("Connor RJ (1987). Sample size for testing differences in proportions for the paired-sample "
            "design. Biometrics 43(1): 207-211; design effect: Kish L (1965), Survey Sampling")


def connor_items(psi: float, delta: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Connor's (1987) independent items for a paired difference ``delta`` at discordance ``psi`` (shares)."""
    za, zb = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    return float((za * math.sqrt(psi) + zb * math.sqrt(max(psi - delta ** 2, 0.0))) ** 2 / delta ** 2)


def detectable(psi: float, items: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest difference (share) Connor's test detects with ``items`` independent items;
    None where even δ = ψ (every discordant item one way) needs more."""
    if psi <= 0 or connor_items(psi, psi, alpha, power) > items:
        return None
    return float(optimize.brentq(lambda d: connor_items(psi, d, alpha, power) - items, 1e-9 * psi, psi,
                                 xtol=1e-12))


def _variance(rows: Sequence[Mapping[str, Any]], spec: Any, also: str | None = None) -> float:
    """The cluster-robust variance (points²) of the headline statistic, or of A − B with ``also``."""
    from spatialprobe.metrics.intervals import encode, grouped
    from spatialprobe.metrics.multiple import headline
    from spatialprobe.metrics.robust import estimates

    stat = headline(spec)[1]
    enc = encode(rows, spec, also=also)

    def value(weights: np.ndarray) -> np.ndarray:
        out = grouped(enc, stat, enc.pred, weights)[-1]
        if enc.other is not None:
            out = out - grouped(enc, stat, enc.other, weights)[-1]
        return out[None]

    (est,) = estimates(value, enc.keys, enc.n_clusters, (enc.mask > 0)[None, :])
    return est.variance


def _ratio(clustered: float, independent: float) -> float:
    return clustered / independent if independent > 0 and clustered == clustered else float("nan")


def pair_design(rows_a: Sequence[Mapping[str, Any]], rows_b: Sequence[Mapping[str, Any]], spec: Any
                ) -> tuple[float, float, float]:
    """(ψ, δ, design effect) of two runs' aligned rows (the same items in the same order): the
    discordant share, the difference of shares right and the cluster-robust variance of A − B over
    the independent-items variance (ψ − δ²)/n."""
    from spatialprobe.metrics.multiple import correct

    a, b = correct(rows_a, spec), correct(rows_b, spec)
    if a is None or b is None:
        raise UsageError(f"plan needs a statistic of right and wrong rows, not {dict(spec.metrics)}.")
    p10, p01 = float((a & ~b).mean()), float((~a & b).mean())
    psi, delta = p10 + p01, p10 - p01
    rows = [{**r, "__pred_b": s.get(spec.pred)} for r, s in zip(rows_a, rows_b, strict=True)]
    return psi, delta, _ratio(_variance(rows, spec, "__pred_b"), 1e4 * (psi - delta ** 2) / len(rows))


def pilot(paths: Sequence[str | Path], discordance: float | None = None) -> dict[str, Any]:
    """ψ, δ, n and the design effect from one run (with an assumed ``discordance``) or a pair."""
    from spatialprobe.metrics.multiple import correct
    from spatialprobe.reports.compare import load_compared

    if len(paths) not in (1, 2):
        raise UsageError("plan takes one pilot run (with --discordance) or two runs of the same items.")
    runs, spec = load_compared(paths)
    rights = [correct(r.rows, spec) for r in runs]
    if any(r is None for r in rights):
        raise UsageError(f"plan needs a statistic of right and wrong rows; {runs[0].path} reports {spec.metrics}.")
    n = len(runs[0].rows)
    if len(runs) == 2:
        if discordance is not None:
            raise UsageError("--discordance is for one pilot run; two runs measure it.")
        psi, delta, measured = pair_design(runs[0].rows, runs[1].rows, spec)
        source = "two runs: discordance and design effect of their difference measured"
    else:
        if discordance is None or not 0 < discordance <= 1:
            raise UsageError("with one pilot run, give the discordance to assume: --discordance SHARE "
                             "(0-1, the share of items exactly one of two models gets right).")
        right = rights[0]
        assert right is not None
        p = float(right.mean())
        psi, delta = discordance, None
        measured = _ratio(_variance(runs[0].rows, spec), 1e4 * p * (1 - p) / n)
        source = "one run: discordance assumed; design effect of its accuracy"
    deff = measured if measured == measured and measured > 1 else 1.0
    return {"runs": [str(r.path) for r in runs], "dataset": runs[0].summary.get("dataset"), "n": n,
            "clusters": list(spec.clusters), "discordance": psi, "difference": None if delta is None else 100 * delta,
            "design_effect_measured": measured, "design_effect": deff, "source": source}


def plan(paths: Sequence[str | Path], diff: float | None = None, items: int | None = None,
         discordance: float | None = None, alpha: float = ALPHA, power: float = POWER) -> dict[str, Any]:
    """The minimum detectable difference for ``items`` (default: the pilot's n), or the items a
    difference of ``diff`` points needs."""
    if diff is not None and items is not None:
        raise UsageError("give --diff (items needed for it) or --items (the difference they detect), not both.")
    found = pilot(paths, discordance)
    psi, deff = found["discordance"], found["design_effect"]
    out: dict[str, Any] = {"pilot": found, "alpha": alpha, "power": power, "citation": CITATION,
                           "formula": "n = deff * (z_{1-a/2} sqrt(psi) + z_{1-b} sqrt(psi - d^2))^2 / d^2"}
    if diff is not None:
        delta = abs(diff) / 100
        if not 0 < delta < psi:
            raise UsageError(f"a difference of {diff} points cannot arise where {100 * psi:.1f} % of the items "
                             "are discordant (a paired difference is at most the discordant share).")
        out.update(diff=abs(diff), items=math.ceil(deff * connor_items(psi, delta, alpha, power)))
    else:
        target = items if items is not None else found["n"]
        found_delta = detectable(psi, target / deff, alpha, power)
        out.update(items=target, detectable=None if found_delta is None else 100 * found_delta)
    return out


def plan_text(result: Mapping[str, Any]) -> str:
    """What ``plan`` prints."""
    p = result["pilot"]
    lines = [f"Pilot: {', '.join(p['runs'])} on {p['dataset']} ({p['n']} rows, clusters "
             f"{', '.join(p['clusters'])}); {p['source']}.",
             f"Discordance {100 * p['discordance']:.1f} %"
             + (f", difference {p['difference']:+.1f} points" if p["difference"] is not None else "")
             + f"; design effect {p['design_effect']:.2f}"
             + (f" (measured {p['design_effect_measured']:.2f})" if p["design_effect_measured"] != p["design_effect"]
                else "") + "."]
    setting = f"power {result['power']:.0%}, two-sided alpha {result['alpha']}"
    if "diff" in result:
        lines.append(f"A paired difference of {result['diff']:.1f} points needs {result['items']:,} items ({setting}).")
    elif result["detectable"] is None:
        lines.append(f"{result['items']:,} items detect no difference at {setting}: too few for this discordance.")
    else:
        lines.append(f"{result['items']:,} items detect a paired difference of {result['detectable']:.1f} points "
                     f"({setting}).")
    lines.append(f"Formula: {result['formula']} ({result['citation']}).")
    return "\n".join(lines) + "\n"
