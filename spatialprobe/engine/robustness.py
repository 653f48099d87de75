"""The robustness protocols' metrics: for each variant a source declares (or the engine generated,
:mod:`spatialprobe.engine.variants`), its vanilla accuracy, its consistent accuracy and the
consistency gap between them, each with a cluster-robust interval over the source's unit.

* **vanilla** - the accuracy of the group's own items: every row of a declared group (What'sUp's
  individual accuracy), the original items only where the engine generated the others (so a model
  that answers ``A`` scores the share of ``A``-gold items, as without the protocol);
* **consistent** - the share of groups (row field :attr:`Source.variants` names) all of whose rows
  are right (What'sUp's pair and set accuracy, 3DSRBench's circular and flip accuracy: CircularEval's
  "all rotations right");
* **gap** - vanilla − consistent, with its t interval and p-value.

The three are one function of the clusters' weights (:func:`spatialprobe.metrics.robust.estimates`):
a group weighs the mean of its rows' weights, so resampling a cluster moves the vanilla and the
consistent accuracy together, and the gap's interval is paired on the same clusters. Vanilla and
consistent get the cluster-adjusted Wilson interval as every accuracy does.

Runs written before the name ``consistent`` call it ``strict`` (``<protocol>_strict``; it clashed with
the ``strict`` reader): :func:`consistent_part` reads either, so an old summary still renders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from spatialprobe.engine.variants import MARK, generated
from spatialprobe.metrics.intervals import Resampling, encode, interval_pair
from spatialprobe.metrics.robust import estimates, t_interval, t_test, wilson_interval
from spatialprobe.runner.summary import Metric

PARTS = ("vanilla", "consistent", "gap")
LEGACY_PART = {"consistent": "strict"}
"""A part's name in summaries written before it was renamed (``<protocol>_strict``)."""


def variant_metrics(rows: Sequence[Mapping[str, Any]], variants: Mapping[str, str], spec: Resampling,
                    pred: str = "pred") -> tuple[dict[str, Metric], dict[str, Any]]:
    """``{<protocol>_vanilla, <protocol>_consistent, <protocol>_gap: Metric}`` and per protocol its
    details (field, groups, rows, the three values, the gap's interval and p) from ``rows`` (one
    condition's) for each ``protocol -> group field`` of ``variants``."""
    metrics: dict[str, Metric] = {}
    details: dict[str, Any] = {}
    for protocol, group_field in variants.items():
        grouped = [r for r in rows if r.get(group_field) not in (None, "") and own(r, protocol)]
        if not grouped:
            details[protocol] = {"field": group_field, "groups": 0, "note": "no row holds the group field"}
            continue
        found = consistency(grouped, group_field, spec, pred, protocol)
        details[protocol] = found
        for part in PARTS:
            value = found[part]
            metrics[f"{protocol}_{part}"] = Metric(value["value"], None, value["n"],
                                                   ci=None if value["ci"] is None else tuple(value["ci"]),
                                                   resampled=True)
    return metrics, details


def own(row: Mapping[str, Any], protocol: str) -> bool:
    """Whether a row counts in ``protocol``'s groups: the source's own rows, and the rows the engine
    generated for that protocol (a rotation copies its item's declared group fields, but is not a
    member of its What'sUp pair)."""
    return not generated(row) or str(row[MARK]).split()[0] == protocol


def consistency(rows: Sequence[Mapping[str, Any]], group_field: str, spec: Resampling, pred: str = "pred",
                protocol: str = "") -> dict[str, Any]:
    """Vanilla and consistent accuracy and their gap over ``rows`` grouped by ``group_field``, each with
    its interval (the gap's paired, with its p-value)."""
    enc = encode(rows, replace(spec, group=None, only=None, rows=None, metrics={"accuracy": "accuracy"}))
    right = np.array([r.get(pred) is not None and str(r.get(pred)) == str(r.get("gold")) for r in rows], dtype=float)
    vanilla = np.array([not (protocol in ("circular", "swap") and generated(r)) for r in rows], dtype=float)
    names = list(dict.fromkeys(r[group_field] for r in rows))
    index = {name: n for n, name in enumerate(names)}
    member = np.zeros((len(names), len(rows)))
    for n, row in enumerate(rows):
        member[index[row[group_field]], n] = 1.0
    size = member.sum(1)
    ok = np.array([all(right[member[g] > 0]) for g in range(len(names))], dtype=float)

    def values(weights: np.ndarray) -> np.ndarray:
        weights = np.atleast_2d(weights)
        group_w = weights @ member.T / size  # [b, G]: a group weighs the mean of its rows' weights
        with np.errstate(invalid="ignore", divide="ignore"):
            v = 100 * (weights * vanilla) @ right / (weights @ vanilla)
            s = 100 * group_w @ ok / group_w.sum(1)
        return np.stack([v, s, v - s])

    counting = np.stack([vanilla > 0, np.ones(len(rows), bool), np.ones(len(rows), bool)])
    est_v, est_s, est_gap = estimates(values, enc.keys, enc.n_clusters, counting)
    n_v, n_g = int(vanilla.sum()), len(names)
    out: dict[str, Any] = {"field": group_field, "groups": n_g, "rows": len(rows)}
    for part, est, n in (("vanilla", est_v, n_v), ("consistent", est_s, n_g)):
        low, high = wilson_interval(est, n)
        out[part] = {"value": round(est.value, 6), "n": n, "ci": _pair(low, high)}
    low, high = t_interval(est_gap)
    out["gap"] = {"value": round(est_gap.value, 6), "n": n_g, "ci": _pair(low, high),
                  "p": None if np.isnan(t_test(est_gap)) else float(t_test(est_gap)), "clusters": est_gap.clusters}
    return out


def _pair(low: float, high: float) -> list[float] | None:
    found = interval_pair(low, high)
    return None if found is None else list(found)


def consistent_part(metrics: Mapping[str, Any], protocol: str) -> Any:
    """A protocol's consistent accuracy in a summary's metrics, under its name or, in a run written
    before the rename, under ``<protocol>_strict``; None where the run has neither."""
    found = metrics.get(f"{protocol}_consistent")
    return metrics.get(f"{protocol}_{LEGACY_PART['consistent']}") if found is None else found


def variants_lines(summary: Mapping[str, Any]) -> list[str]:
    """The table's rows of each robustness protocol: vanilla, consistent, the gap with interval and p."""
    from spatialprobe.reports.tables import pm

    m = summary["metrics"]
    lines = []
    for protocol, found in (summary["details"].get("variants") or {}).items():
        consistent = consistent_part(m, protocol)
        if consistent is None:
            continue
        gap = found["gap"]
        ci = "[–]" if gap["ci"] is None else f"[{gap['ci'][0]:+.1f}, {gap['ci'][1]:+.1f}]"
        p = "" if gap.get("p") is None else f", p = {gap['p']:.3g}"
        lines += [f"| {protocol}: vanilla accuracy | {pm(m[f'{protocol}_vanilla'])} |",
                  f"| {protocol}: consistent accuracy, every item of a group right ({found['groups']} groups by "
                  f"{found['field']}) | {pm(consistent)} |",
                  f"| {protocol}: consistency gap (vanilla − consistent) | {gap['value']:+.1f} {ci}{p} |"]
    return lines
