"""Metrics of a question-answering run: both protocols, every image condition, the blind baselines.

A run that asks a model questions (:mod:`spatialprobe.engine.protocols`) writes one prediction
row per (item, image condition[, fold]) with the label each protocol chose. From those rows:

* ``accuracy`` / ``macro_f1`` (and ``strict_accuracy`` / ``strict_macro_f1``: the replies read by
  ``strict`` instead of the source's official reader): the first protocol asked (``likelihood`` under ``both``) in the
  first condition (``real`` when the run has it), pooled, or mean ± σ over the test folds of a task
  split into object-disjoint folds (as the probe is);
* ``accuracy_likelihood`` / ``accuracy_generate`` and the generate protocol's
  ``parse_failure_rate`` (a reply that named no option counts as wrong);
* ``vision_gain_<condition>``: accuracy(real) − accuracy(blind) for each blind condition run
  beside ``real``, with its paired 95 % interval (resampled by the benchmark's unit);
* ``accuracy_<condition>`` of each blind condition (set with its interval by the run kind,
  :mod:`.ask`, as each protocol's accuracy gets its interval there);
* ``answer_prior``: the accuracy of answering every test row with the most frequent gold label of
  the rows the run could learn from (the dev fold, or a training split), beside every accuracy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from spatialprobe.metrics.baselines import answer_prior, vision_gain
from spatialprobe.metrics.classification import accuracy_f1
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.metrics.protocol_comparison import FAILED, protocol_comparison
from spatialprobe.runner.summary import Metric, over_parts, single


def chosen(row: Mapping[str, Any], protocol: str) -> str:
    """The label a protocol chose in a row, ``--`` for a generated reply that named none."""
    value = row.get(f"pred_{protocol}")
    return FAILED if value is None else str(value)


def _score(rows: Sequence[Mapping[str, Any]], protocol: str, labels: Sequence[str],
           folds: bool) -> tuple[Metric, Metric]:
    """Accuracy and macro-F1 of one protocol: pooled, or mean ± σ over the rows' folds."""
    def measured(part: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        return accuracy_f1([str(r["gold"]) for r in part], [chosen(r, protocol) for r in part], labels)

    if not folds:
        m = measured(rows)
        return single(_num(m["accuracy"]), len(rows)), single(_num(m["macro_f1"]), len(rows))
    by_fold: dict[Any, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_fold.setdefault(row["fold"], []).append(row)
    parts = {f"fold {k}": measured(v) for k, v in sorted(by_fold.items())}
    return (over_parts({k: (_num(m["accuracy"]), int(m["n"])) for k, m in parts.items()}),
            over_parts({k: (_num(m["macro_f1"]), int(m["n"])) for k, m in parts.items()}))


def _num(value: float) -> float | None:
    return None if value != value else float(value)  # NaN (no rows) -> None


def asked_metrics(rows: Sequence[Mapping[str, Any]], labels: Sequence[str], protocols: Sequence[str],
                  conditions: Sequence[str], spec: Resampling,
                  prior_labels: Sequence[str] | Mapping[Any, Sequence[str]] | None, folds: bool = False,
                  seed: int = 0) -> tuple[dict[str, Metric], dict[str, Any]]:
    """(metrics, details) of a question-answering run; see the module docstring."""
    first = conditions[0]
    main = [r for r in rows if r["condition"] == first]
    metrics: dict[str, Metric] = {}
    metrics["accuracy"], metrics["macro_f1"] = _score(main, protocols[0], labels, folds)
    metrics["strict_accuracy"], metrics["strict_macro_f1"] = _score(main, f"{protocols[0]}_strict", labels, folds)
    for protocol in protocols:
        if len(protocols) > 1:
            metrics[f"accuracy_{protocol}"] = _score(main, protocol, labels, folds)[0]
        if protocol == "generate":
            failures = sum(r.get("pred_generate") is None for r in main)
            metrics["parse_failure_rate"] = single(100.0 * failures / len(main) if main else None, len(main))
    details: dict[str, Any] = {"protocols": list(protocols), "conditions": list(conditions)}
    primary = replace(spec, pred="pred", rows=None)
    if len(protocols) > 1 and main:
        details["protocol_comparison"] = protocol_comparison(main, primary, seed=seed)
    for blind in conditions[1:]:
        real_rows = [{**r, "pred": chosen(r, protocols[0])} for r in main]
        blind_rows = [{**r, "pred": chosen(r, protocols[0])} for r in rows if r["condition"] == blind]
        gain = vision_gain(real_rows, blind_rows, replace(primary, metrics={"accuracy": "accuracy"}), seed=seed)
        acc = gain["accuracy"]
        details.setdefault("vision_gain", {})[blind] = acc
        metrics[f"vision_gain_{blind}"] = Metric(acc["gain"], None, len(main),
                                                 ci=tuple(acc["ci"]) if acc["ci"] else None, resampled=True)
    if prior_labels is not None and main:
        metrics["answer_prior"], details["answer_prior"] = _prior(main, prior_labels, labels, folds)
    return metrics, details


def _prior(rows: Sequence[Mapping[str, Any]], prior_labels: Sequence[str] | Mapping[Any, Sequence[str]],
           labels: Sequence[str], folds: bool) -> tuple[Metric, Any]:
    """The answer prior: one majority for pooled rows; per fold, its dev labels' majority on its test rows."""
    if not folds:
        assert not isinstance(prior_labels, Mapping)
        prior = answer_prior(prior_labels, [str(r["gold"]) for r in rows], labels)
        return single(prior["accuracy"], len(rows)), prior
    assert isinstance(prior_labels, Mapping)
    parts = {fold: answer_prior(prior_labels[fold], [str(r["gold"]) for r in rows if r["fold"] == fold], labels)
             for fold in sorted({r["fold"] for r in rows})}
    metric = over_parts({f"fold {k}": (p["accuracy"], p["n"]) for k, p in parts.items()})
    return metric, {f"fold {k}": p for k, p in parts.items()}


def twinned(official: Sequence[Any]) -> tuple[Any, ...]:
    """The source's official declarations and the strict twins of those that read the answers."""
    return (*official, *(strict_twin(d) for d in official if getattr(d, "reads", True)))


def strict_twin(declared: Any) -> Any:
    """The declaration measuring ``declared``'s metrics under the ``strict`` reader: each named
    ``strict_<name>``, on the row field ``<pred>_strict``."""
    return replace(declared, metrics={f"strict_{k}": v for k, v in declared.metrics.items()},
                   pred=f"{declared.pred}_strict")


def official_metrics(rows: Sequence[Mapping[str, Any]], spec: Resampling, official: Sequence[Any],
                     strict: bool = False) -> tuple[dict[str, Metric], tuple[Resampling, ...]]:
    """A source's official metrics (:class:`spatialprobe.benchmarks.base.Official`) over ``rows``
    (with ``strict``: each again under the ``strict`` reader, :func:`strict_twin`, for rows read by
    both), broken down by its groups (rows whose group is empty in none), and the resamplings that
    give them intervals: the overall one first, then one per grouping, on the same draws."""
    from spatialprobe.metrics.estimates import point_estimates

    metrics: dict[str, Metric] = {}
    specs: list[Resampling] = []
    for declared in (twinned(official) if strict else tuple(official)):
        base = replace(spec, pred=declared.pred, metrics=dict(declared.metrics), rows=list(rows), group=None,
                       only=declared.only)
        overall = point_estimates(rows, base)
        for name in declared.metrics:
            breakdown: dict[str, Metric] = {}
            for group in declared.groups:  # rows whose group is empty are in no part
                grouped = [row for row in rows if row.get(group) not in (None, "")]
                parts = point_estimates(grouped, replace(base, group=group, part=f"{group} {{}}", pooled=True))
                breakdown.update(sorted(parts[name].breakdown.items()))
            metrics[name] = Metric(overall[name].mean, None, overall[name].n, breakdown)
        specs += [base, *(replace(base, group=g, part=f"{g} {{}}") for g in declared.groups)]  # overall first
    return metrics, tuple(specs)


def disagreements(rows: Sequence[Mapping[str, Any]], examples: int = 3, field: str = "pred") -> dict[str, Any]:
    """Where the official reading (the row field ``field``) and ``strict``'s (``pred_strict``) differ: how many, by kind
    (only the official reader read an option; only strict did; they read different ones), and the
    first ``examples`` replies of each kind."""
    kinds = {"official only": [], "strict only": [], "different": []}  # type: dict[str, list[dict[str, Any]]]
    for row in rows:
        official, strict = str(row.get(field) or FAILED), str(row.get("pred_strict") or FAILED)
        if official == strict:
            continue
        kind = "official only" if strict == FAILED else "strict only" if official == FAILED else "different"
        kinds[kind].append({"instance_id": row["instance_id"], "reply": row.get("reply"), "official": official,
                            "strict": strict, "gold": row.get("gold"), "why": row.get("read")})
    return {"n": sum(len(v) for v in kinds.values()), "of": len(rows),
            "by_kind": {k: len(v) for k, v in kinds.items()},
            "examples": {k: v[:examples] for k, v in kinds.items() if v}}


def resamplings(spec: Resampling, main: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
                protocols: Sequence[str], conditions: Sequence[str], official: Sequence[Resampling],
                prior: Any, folds: bool, prior_rows: Sequence[Mapping[str, Any]] | None = None
                ) -> tuple[Resampling, ...]:
    """Every resampling of an asked-items run's intervals: the source's ``official`` ones first (the
    first of them heads ``intervals`` in the summary: what ``report A B`` and ``compare`` pair by
    default), the headline on ``main`` (the first condition's rows) for the metrics the official
    list does not name, each protocol's accuracy, each blind condition's (of ``rows``) and the
    answer prior's (on ``prior_rows``: ``main`` with the gold the prior is read in,
    :func:`position_prior`'s positions; default ``main``)."""
    named = {name for s in official for name in s.metrics}
    rest = {k: v for k, v in spec.metrics.items() if k not in named}
    headline: tuple[Resampling, ...] = (replace(spec, rows=list(main), metrics=rest),) if rest or not official else ()
    strict = {f"strict_{k}": v for k, v in spec.metrics.items() if f"strict_{k}" not in named}
    if strict:  # the headline under strict, where the official list does not name it
        headline += (replace(spec, rows=list(main), pred="pred_strict", metrics=strict),)
    return (*official, *headline, *_protocol_specs(spec, main, protocols),
            *_condition_specs(spec, rows, conditions),
            *_prior_spec(spec, main if prior_rows is None else prior_rows, prior, folds))


def position_prior(rows: Sequence[Mapping[str, Any]]) -> tuple[Metric, dict[str, Any]]:
    """The answer prior of which-one questions (``Source.prior_by == "position"``): ``rows``' gold
    is the gold's position (``option 1``, ...); every row answered with the most frequent one."""
    golds = [str(r["gold"]) for r in rows]
    prior = answer_prior(golds, golds, sorted(set(golds)))
    return single(prior["accuracy"], len(rows)), {**prior, "by": "position"}


def _protocol_specs(spec: Resampling, rows: Sequence[Mapping[str, Any]], protocols: Sequence[str]
                    ) -> tuple[Resampling, ...]:
    """The resamplings that give ``accuracy_<protocol>`` its interval where a run asked by both
    protocols: the first condition's rows, each protocol's chosen label (``--`` where none)."""
    if len(protocols) < 2:
        return ()
    return tuple(replace(spec, pred="chosen", metrics={f"accuracy_{p}": "accuracy"},
                         rows=[{**r, "chosen": chosen(r, p)} for r in rows]) for p in protocols)


def _condition_specs(spec: Resampling, rows: Sequence[Mapping[str, Any]], conditions: Sequence[str]
                     ) -> tuple[Resampling, ...]:
    """The resamplings that measure ``accuracy_<condition>`` (the first protocol) with its interval
    for each blind condition run beside the first: the vision gains' other component."""
    return tuple(replace(spec, metrics={f"accuracy_{c}": "accuracy"},
                         rows=[r for r in rows if r["condition"] == c]) for c in conditions[1:])


def _prior_spec(spec: Resampling, rows: Sequence[Mapping[str, Any]], prior: Any, folds: bool
                ) -> tuple[Resampling, ...]:
    """The resampling that gives ``answer_prior`` its interval over the source's unit: every row
    answered with the majority label (pooled rows; over folds the prior is a mean ± σ)."""
    if folds or not isinstance(prior, Mapping) or "label" not in prior or not rows:
        return ()
    return (replace(spec, pred="prior", metrics={"answer_prior": "accuracy"},
                    rows=[{**r, "prior": prior["label"]} for r in rows]),)
