"""Repeated sampling of an asked-items run: ``--samples K --temperature T`` asks each item K times.

* **Which runs**: the generate protocol only (likelihood scores each option once; nothing is
  drawn), an adapter that declares it can sample (``samples = True`` on its class: ``hf-mllm``,
  ``openai-api``), and a temperature above 0 where K > 1 (greedy decoding gives K equal replies).
  Every other combination is refused in one sentence (:func:`check_sampling`).
* **Identity and resumption**: K and T are settings of the run (``config.json``); each sample is
  its own cache entry (``CONDITION/KEY@k``), so a killed run resumes per sample. Sample k of item
  KEY is drawn with the seed :func:`sample_seed` (the run's ``--seed``, KEY and k hashed), recorded
  in the row (``seed``) and sent with the request, so a sample is the same whatever batch it is in.
* **Headline**: the benchmark's rule (``Source.sampling``): ``mean`` (the default; OmniSpatial
  averages its runs): one row per item and sample (``sample``: k), every metric over all of them,
  i.e. the mean over samples; ``vote``: one row per item whose answer is the most frequent of its
  samples' labels (:func:`spatialprobe.benchmarks.base.vote`), the samples kept in ``samples``.
* **Intervals**: under ``mean``, accuracy and the numeric official metrics (MRA, the share within
  tolerance) get the two-level bootstrap's interval (:func:`spatialprobe.metrics.sampling.two_level`:
  clusters, then samples within each item); every other metric keeps its cluster-robust interval
  over the (item, sample) rows, which counts both variations too. ``summary.json``'s
  ``details.sampling`` and ``table.md`` give each one's share of variance from sampling.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from spatialprobe.benchmarks.base import Source
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import DEFAULT_RESAMPLES, Resampling, encode
from spatialprobe.metrics.metric import Metric
from spatialprobe.metrics.sampling import two_level, vote_sampling_share

RULES = ("mean", "vote")
"""How a benchmark turns an item's samples into its score (``Source.sampling``)."""
SAMPLED = ("accuracy", "mra", "within_tolerance")
"""The metrics that are means of a per-sample value, given the two-level interval under ``mean``."""


def sample_seed(seed: int, key: str, sample: int) -> int:
    """The seed of sample ``sample`` of item ``key`` in a run of ``--seed seed`` (31 bits)."""
    digest = hashlib.sha256(f"{seed}\x1f{key}\x1f{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def sample_key(key: str, sample: int, samples: int) -> str:
    """The cache key of one sample (the key itself where each item is asked once)."""
    return key if samples <= 1 else f"{key}@{sample}"


def check_sampling(samples: int, temperature: float | None, protocol: str, adapter: str, can_sample: bool) -> None:
    """Refuse, in one sentence, a ``--samples``/``--temperature`` that does not apply."""
    if samples < 1:
        raise UsageError(f"--samples {samples}: an item is asked at least once.")
    if samples == 1 and temperature is None:
        return
    if protocol != "generate":
        raise UsageError(f"--samples and --temperature apply to --protocol generate; --protocol {protocol} "
                         "scores each option once, and nothing is drawn.")
    if temperature is not None and temperature < 0:
        raise UsageError(f"--temperature {temperature}: it is 0 (greedy) or above.")
    if samples > 1 and not temperature:
        raise UsageError(f"--samples {samples} at temperature 0 asks for {samples} equal greedy replies: give "
                         "--temperature above 0.")
    if temperature and not can_sample:
        raise UsageError(f"the {adapter} model cannot sample replies (it decodes greedily only), so it takes no "
                         f"--temperature {temperature}: use one that samples (hf-mllm, openai-api).")


def vote_rows(rows: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (condition, item[, fold]): the most frequent of its samples' labels (none: ``--``),
    the samples' labels, seeds and replies kept under ``samples``."""
    from spatialprobe.benchmarks.base import vote
    from spatialprobe.engine.metrics import chosen

    grouped: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        grouped.setdefault((row["condition"], row["instance_id"], row.get("fold")), []).append(row)
    out = []
    for group in grouped.values():
        first = dict(group[0])
        picked = [r.get("pred_generate") for r in group]
        first["pred_generate"] = vote(picked, None, labels, labels)
        first["pred"] = chosen(first, "generate")
        first["samples"] = [{"sample": r["sample"], "seed": r.get("seed"), "pred": r.get("pred_generate"),
                             "reply": r.get("reply")} for r in group]
        for name in ("sample", "seed", "reply", "parse_rule"):
            first.pop(name, None)
        out.append(first)
    return out


def sampled_source(source: Source, samples: int, temperature: float | None) -> Source:
    """The source, its rows keyed by sample too where each item has a row per sample (``mean``)."""
    if not (samples > 1 or temperature) or source.sampling == "vote":
        return source
    return replace(source, spec=replace(source.spec, key=(*source.spec.key, "sample")))


def with_samples(metrics: Mapping[str, Metric], rows: Sequence[Mapping[str, Any]], details: dict[str, Any],
                 source: Source, samples: int, temperature: float | None, seed: int, sampler: str | None
                 ) -> dict[str, Metric]:
    """An ask run's metrics with the two-level intervals of those that are means over samples
    (``rows``: its first condition's), ``details["sampling"]`` written; over folds (a mean over
    folds) the cluster-robust intervals over (item, sample) rows stay."""
    if source.folds:
        details["sampling"] = {**sampling_details(samples, temperature, source.sampling, seed, {}, sampler),
                               "interval": "cluster-robust over (item, sample) rows, per fold"}
        return dict(metrics)
    out, found = sampled_metrics(metrics, rows, source.spec, source.official, source.sampling, seed)
    details["sampling"] = sampling_details(samples, temperature, source.sampling, seed, found, sampler)
    return out


def sampled_metrics(metrics: Mapping[str, Metric], rows: Sequence[Mapping[str, Any]], spec: Resampling,
                    official: Sequence[Any], rule: str, seed: int, resamples: int = DEFAULT_RESAMPLES
                    ) -> tuple[dict[str, Metric], dict[str, Any]]:
    """``metrics`` with the two-level interval of each :data:`SAMPLED` one (``mean``), and what
    ``details.sampling`` reports: each metric's variance and its share from sampling."""
    out, found = dict(metrics), {}
    if rule == "vote":
        return out, {"accuracy": _vote_share(rows, spec, metrics.get("accuracy"), seed, resamples)}
    fields = {"accuracy": None, **{name: d.pred for d in official for name, stat in d.metrics.items()
                                   if name in SAMPLED and stat != "accuracy"}}
    for name, field in fields.items():
        matrix = _matrix(rows, spec, field)
        if matrix is None or name not in out:
            continue
        values, keys, n_clusters = matrix
        result = two_level(values, keys, n_clusters, resamples, seed)
        if result.ci is not None and result.ci[0] < result.ci[1]:  # at 0 or 100 the spine's Wilson interval stays
            out[name] = replace(out[name], ci=result.ci, resampled=True)
        ci = out[name].ci
        found[name] = {**result.to_dict(), "ci": None if ci is None else [ci[0], ci[1]],
                       "interval": "two-level bootstrap" if out[name].ci == result.ci else "Wilson (at the boundary)"}
    return out, found


def _matrix(rows: Sequence[Mapping[str, Any]], spec: Resampling, field: str | None
            ) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(values [items, K], cluster keys [items, m], clusters) of the rows' per-sample value:
    right or wrong (``field`` None) or the numeric field; None where no item has one."""
    enc = encode(rows, replace(spec, metrics={"accuracy": "accuracy"}))
    by_item: dict[tuple[Any, ...], list[tuple[int, float]]] = {}
    for n, row in enumerate(rows):
        value = float(enc.pred[n] == enc.gold[n]) if field is None else row.get(field)
        if value is not None:
            by_item.setdefault((row["instance_id"], row.get("fold")), []).append((n, float(value)))
    if not by_item:
        return None
    sizes = {len(v) for v in by_item.values()}
    if len(sizes) > 1:
        raise ValueError(f"items have different numbers of samples ({sorted(sizes)}): the run is incomplete")
    values = np.array([[v for _, v in found] for found in by_item.values()])
    keys = np.array([enc.keys[found[0][0]] for found in by_item.values()])
    used = np.unique(keys)
    return values, np.searchsorted(used, keys), len(used)


def _vote_share(rows: Sequence[Mapping[str, Any]], spec: Resampling, metric: Metric | None, seed: int,
                resamples: int) -> dict[str, Any]:
    """A voted accuracy's variance (its clusters drawn again) and the share of it from sampling
    (items fixed, each item's samples drawn again and voted)."""
    matrix = _matrix(rows, spec, None)
    if matrix is None or metric is None:
        return {"mean": None, "variance": None, "sampling_share": None}
    variance = two_level(*matrix, resamples=resamples, seed=seed).variance
    codes = {label: n for n, label in enumerate(sorted({str(s["pred"]) for r in rows for s in r["samples"]
                                                         if s["pred"] is not None} | {str(r["gold"]) for r in rows}))}
    labels = np.array([[codes[str(s["pred"])] if s["pred"] is not None else -1 for s in r["samples"]]
                       for r in rows])
    gold = np.array([codes[str(r["gold"])] for r in rows])
    return {"mean": metric.mean, "variance": variance,
            "sampling_share": vote_sampling_share(labels, gold, variance, resamples, seed)}


def sampling_lines(details: Mapping[str, Any]) -> list[str]:
    """table.md's rows on repeated sampling: K, T, the rule, and each metric's sampling share."""
    info = details.get("sampling")
    if not info:
        return []
    how = "intervals of means over samples: two-level bootstrap" if info["rule"] == "mean" else "voted"
    lines = [f"| samples per item (temperature {info['temperature']}; {info['rule']} over samples; {how}) | "
             f"{info['samples']} |"]
    for name, found in (info.get("metrics") or {}).items():
        share = found.get("sampling_share")
        lines.append(f"| {name}: share of variance from sampling | "
                     f"{'–' if share is None else f'{100 * share:.0f} %'} |")
    return lines


def sampling_details(samples: int, temperature: float | None, rule: str, seed: int,
                     metrics: Mapping[str, Any], sampler: str | None = None) -> dict[str, Any]:
    """``details.sampling``: how the items were sampled, and each metric's variance shares."""
    return {"samples": samples, "temperature": temperature or 0.0, "rule": rule, "sampler": sampler,
            "seeds": f"sha256('{seed}␟KEY␟k')[:4] & 0x7fffffff per item KEY and sample k (the row's seed)",
            "interval": ("two-level bootstrap: clusters, then each item's samples; the items' deviations "
                         "shrunk so the sampling variance is counted once (Davison & Hinkley 1997, 3.8)"
                         if rule == "mean" else "cluster-robust over the voted answers"),
            "metrics": dict(metrics)}
