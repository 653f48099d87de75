"""The two answer protocols compared on the same items (``--protocol both``).

Prediction rows carry one prediction per protocol (``pred_likelihood``, ``pred_generate``: a label,
or ``None`` where the reply named no option). :func:`protocol_comparison` reports each protocol's
accuracy (a parse failure is a wrong answer), the generate protocol's parse-failure rate, the share
of items where the two protocols chose the same label, and the paired difference
(likelihood − generate) with its 95 % interval and permutation p-value, resampled by the
benchmark's unit as every interval is (:func:`spatialprobe.metrics.paired.paired_differences`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from spatialprobe.metrics.intervals import DEFAULT_RESAMPLES, Resampling
from spatialprobe.metrics.paired import paired_differences

FAILED = "--"
"""The label a parse failure is given in prediction rows' metrics (never a task label)."""


def parse_failure_rate(rows: Sequence[Mapping[str, Any]], field: str = "pred_generate") -> float | None:
    """Percent of rows whose generated reply named no option (None for no rows)."""
    if not rows:
        return None
    return 100.0 * sum(row.get(field) is None for row in rows) / len(rows)


def agreement(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """Percent of rows where the two protocols chose the same label (a failure agrees with nothing)."""
    if not rows:
        return None
    same = sum(r.get("pred_likelihood") is not None and r.get("pred_likelihood") == r.get("pred_generate")
               for r in rows)
    return 100.0 * same / len(rows)


def protocol_comparison(rows: Sequence[Mapping[str, Any]], spec: Resampling,
                        resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """Both protocols' results on the same rows, their agreement and the paired test between them."""
    def as_pred(field: str) -> list[dict[str, Any]]:
        return [{**r, "pred": FAILED if r.get(field) is None else r[field]} for r in rows]

    paired = replace(spec, pred="pred", rows=None)
    diffs = paired_differences(as_pred("pred_likelihood"), as_pred("pred_generate"), paired,
                               resamples=resamples, seed=seed)
    out: dict[str, Any] = {"agreement": agreement(rows), "parse_failure_rate": parse_failure_rate(rows)}
    for diff in diffs:
        out[diff.metric] = {"likelihood": diff.a, "generate": diff.b, "difference": diff.difference,
                            "ci": list(diff.ci) if diff.ci is not None else None, "p": diff.p,
                            "significant": diff.significant}
    return out
