"""The numbers of ``judge compare``: per image run, each judge's score, every pair's agreement and
Cohen's kappa, each judge's accuracy against the people's answers per relation; across image
runs, each judge's ranking of the models and Kendall's tau between judges' rankings.

Intervals resample **prompts**, the unit an image run's images share (GenEval makes 4 images of a
prompt, T2I-CompBench 10): a resample draws the prompts with replacement and keeps every image of
each drawn prompt (:func:`spatialprobe.metrics.intervals.cluster_bootstrap`, seeded). Where every
prompt has one image this is the image bootstrap, draw for draw. The interval is for the
statistic over new prompts drawn like these, each with as many images: when judges' disagreement
depends on the prompt, the images of one prompt are not independent and resampling images
covered κ 0.83 (``bench/calibration.py`` measures it). Within an image run, one set
of resamples serves every statistic, so the judges and pairs are measured on the same draws.
Kendall's tau resamples each model's prompts on their own (a stratified bootstrap, one seeded
generator) and recomputes every judge's scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from spatialprobe.errors import UsageError
from spatialprobe.metrics import agreement as A
from spatialprobe.metrics.intervals import cluster_bootstrap, interval_pair, row_weights

PEOPLE = "people"
ON = ("verdict", "label")
"""What two judges agree on: the verdict (does the image show the relation asked?) or the label."""
UNRECOGNIZED = ("guess", "exclude")
"""An image a judge did not recognize: its seeded guess counts (as in its score), or the image is
left out of the comparison (compared on the images every judge recognized)."""

Key = tuple[str, int]


def value(row: Mapping[str, Any], on: str) -> Any:
    return row["pred"] == row["gold"] if on == "verdict" else row["pred"]


def compared_images(rows: Mapping[str, Mapping[Key, Mapping[str, Any]]], unrecognized: str, where: str
                    ) -> list[Key]:
    """The images every judge of an image run judged (and, with ``exclude``, recognized)."""
    shared = sorted(set.intersection(*(set(r) for r in rows.values())))
    counts = ", ".join(f"{name}: {len(r)}" for name, r in rows.items())
    if not shared:
        raise UsageError(f"the judgements of {where} share no image ({counts}); they judged different images.")
    if unrecognized == "exclude":
        shared = [k for k in shared if all(r[k]["recognized"] for r in rows.values())]
        if not shared:
            raise UsageError(f"no image of {where} is recognized by every judge; compare with --unrecognized guess.")
    return shared


def estimate(point: float | None, low: float, high: float, n: int, enough: bool) -> dict[str, Any]:
    return {"value": point, "ci": interval_pair(low, high) if enough and point is not None else None, "n": n}


def boundary(value: float, units: int) -> tuple[float, float]:
    """The 95 % Wilson interval (statsmodels) of a share at 0 or 100 %, in percent, counting each of
    the ``units`` prompts once: images of one prompt may share their verdict, so the prompts, not
    the images, are the effective sample (the cluster-adjusted boundary interval the run kinds
    give an accuracy of 0 or 100, :func:`spatialprobe.metrics.robust.wilson_interval`)."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(units if value else 0, units, alpha=0.05, method="wilson")
    return 100.0 * float(low), 100.0 * float(high)


def prompts_of(keys: Sequence[Key]) -> np.ndarray:
    """[n]: the index of each image's prompt (its key's prompt id) among the prompts of ``keys``."""
    index = {p: i for i, p in enumerate(dict.fromkeys(k[0] for k in keys))}
    return np.array([index[k[0]] for k in keys], dtype=int)


def group_stats(rows: Mapping[str, Mapping[Key, Mapping[str, Any]]], keys: Sequence[Key], on: str,
                resamples: int, seed: int) -> dict[str, Any]:
    """Scores, pairwise agreement and kappa, accuracy against people, on one image run's images
    ``keys`` (:func:`compared_images`)."""
    names = list(rows)
    n = len(keys)
    verdict = {j: np.array([value(rows[j][k], "verdict") for k in keys]) for j in names}
    answers = {j: [value(rows[j][k], on) for k in keys] for j in names}
    coded = dict(zip(names, A.codes(*answers.values()), strict=True))
    pairs = list(combinations(names, 2))
    judges = [j for j in names if j != PEOPLE]
    people = PEOPLE in rows
    answered = np.array([rows[PEOPLE][k]["recognized"] for k in keys]) if people else np.zeros(n, bool)
    gold = [str(rows[names[0]][k]["gold"]) for k in keys]
    relations = sorted(set(gold))
    masks = [answered] + [answered & (np.array(gold) == rel) for rel in relations]

    def weighted(w: np.ndarray) -> np.ndarray:
        out = [A.share(verdict[j], w) for j in names]
        out += [A.share(coded[a] == coded[b], w) for a, b in pairs]
        out += [A.weighted_kappa(coded[a], coded[b], w) for a, b in pairs]
        if people:
            out += [A.share(coded[j] == coded[PEOPLE], w * m) for j in judges for m in masks]
        return np.stack(out)

    point = weighted(np.ones((1, n)))[:, 0]
    prompt = prompts_of(keys)
    n_prompts = int(prompt.max()) + 1 if n else 0
    low, high = cluster_bootstrap(n_prompts, lambda draws: weighted(row_weights(draws, prompt[:, None], n_prompts)),
                                  n, resamples, seed)
    at = iter(range(len(point)))

    def take(count: int, enough: bool = n_prompts >= 2, units: int = n_prompts, share: bool = True) -> dict[str, Any]:
        i = next(at)
        value_ = None if np.isnan(point[i]) else round(float(point[i]), 6)
        if share and value_ in (0.0, 100.0) and enough:  # every draw the same: the bootstrap's [100, 100] says nothing
            return estimate(value_, *boundary(value_, units), count, enough)
        return estimate(value_, low[i], high[i], count, enough)

    out: dict[str, Any] = {"images": {j: len(rows[j]) for j in names}, "compared": n, "prompts": n_prompts,
                           "scores": {j: take(n) for j in names}}
    out["agreement"] = {f"{a} | {b}": take(n) for a, b in pairs}
    out["kappa"] = {}
    for a, b in pairs:
        entry = take(n, share=False)
        value_, why = A.kappa(answers[a], answers[b], (a, b))
        entry["value"] = None if value_ is None else round(value_, 6)
        if why:
            entry.update(ci=None, undefined=why)
        note = A.one_answer_note(answers[a], answers[b], (a, b))
        if note:
            entry["note"] = note
        out["kappa"][f"{a} | {b}"] = entry
    if people:
        out["vs_people"] = {}
        for j in judges:
            parts = [take(int(m.sum()), len(set(prompt[m].tolist())) >= 2, len(set(prompt[m].tolist())))
                     for m in masks]
            out["vs_people"][j] = {"all": parts[0], "relations": dict(zip(relations, parts[1:], strict=True))}
        out["people_answered"] = int(answered.sum())
    return out


def ranking(groups: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Mapping[Key, Any]]],
            keys: Sequence[Sequence[Key]], resamples: int, seed: int) -> dict[str, Any]:
    """Each judge's ranking of the models (image runs) it judged, and Kendall's tau between every
    two judges over the models both judged, with a stratified bootstrap interval."""
    judges = list(dict.fromkeys(j for g in groups for j in g["scores"]))
    weights = A.stratified_weights([len(k) for k in keys], resamples, seed, [prompts_of(k) for k in keys])
    scores: dict[str, dict[int, float]] = {j: {} for j in judges}
    resampled: dict[str, dict[int, np.ndarray]] = {j: {} for j in judges}
    for g, (group, group_rows) in enumerate(zip(groups, rows, strict=True)):
        for j, score in group["scores"].items():
            scores[j][g] = score["value"]
            hits = np.array([value(group_rows[j][k], "verdict") for k in keys[g]])
            resampled[j][g] = A.share(hits, weights[g])
    ranks = {j: rank_of(scores[j]) for j in judges}
    pairs = {}
    for a, b in combinations(judges, 2):
        shared = [g for g in scores[a] if g in scores[b]]
        tau, why = A.kendall([scores[a][g] for g in shared], [scores[b][g] for g in shared], (a, b))
        entry: dict[str, Any] = {"value": None if tau is None else round(tau, 6), "models": len(shared), "ci": None}
        if why:
            entry["undefined"] = why
        elif len(shared) >= 2:
            x = np.stack([resampled[a][g] for g in shared], axis=1)
            y = np.stack([resampled[b][g] for g in shared], axis=1)
            entry["ci"] = A.percentile_interval(A.kendall_resampled(x, y))
        pairs[f"{a} | {b}"] = entry
    return {"scores": {j: {str(g): s for g, s in scores[j].items()} for j in judges},
            "ranks": {j: {str(g): r for g, r in ranks[j].items()} for j in judges}, "kendall_tau": pairs}


def rank_of(scores: Mapping[int, float]) -> dict[int, float]:
    """Rank 1 = highest score; tied scores share their mean rank (as Kendall's tau-b treats them)."""
    from scipy.stats import rankdata

    order = list(scores)
    ranks = rankdata([-scores[g] for g in order], method="average")
    return {g: float(r) for g, r in zip(order, ranks, strict=True)}
