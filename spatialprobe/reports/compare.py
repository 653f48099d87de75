"""Many models on the same items, compared honestly: ``spatialprobe compare RUN...``.

Every number here comes from the toolkit's one statistics code, called through its public names:

* each model's score and its interval: the run's own declared resampling
  (:func:`spatialprobe.metrics.paired.resampling_of`), its point estimate
  (:func:`~spatialprobe.metrics.estimates.point_estimates`) and its cluster-robust interval
  (:func:`~spatialprobe.metrics.intervals.metric_intervals`), as the run itself reports them;
* each pair's difference, its interval and p-value: :func:`~spatialprobe.metrics.paired.paired_differences`,
  the function ``spatialprobe report A B`` uses;
and the statistics of many models at once from :mod:`spatialprobe.metrics.multiple`:

* the exact McNemar p on the discordant rows (A right and B wrong: ``b10``; A wrong and B right:
  ``b01``): the two-sided binomial test of ``b10`` of ``b10 + b01`` at 1/2 (``scipy.stats.binomtest``).
  It treats rows as independent, so it is shown beside the clustered p (in the table where the
  discordant count is small, at most :data:`MCNEMAR_SMALL`; always in ``compare.json``);
* the clustered p-values adjusted over the pairs by Holm (family-wise error) and by
  Benjamini-Hochberg (false discovery rate), as ``statsmodels``' ``multipletests`` gives them
  (:func:`~spatialprobe.metrics.multiple.adjusted`);
* rank intervals: the clusters (objects, images) are drawn with replacement **once per resample for
  every model together** (:func:`~spatialprobe.metrics.intervals.row_weights`, the rows of two
  clusters weighted by the product of their counts), each model's statistic computed on that
  draw by the registered function, and the models ranked in it (1 = best, ties share the better
  rank); the interval is the 2.5th and 97.5th percentiles of each model's rank;
* groups of models not told apart: in rank order, the largest runs of consecutive models in which
  no pair differs at Holm-adjusted p < 0.05 (a compact letter display: models sharing a letter
  cannot be told apart).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Encoded, Resampling, encode, metric_intervals
from spatialprobe.metrics.multiple import (
    RANK_RESAMPLES,
    adjusted,
    correct,
    correct_of,
    groups,
    headline,
    joint_scores,
    mcnemar,
    rank_intervals,
)
from spatialprobe.metrics.paired import (
    ALPHA,
    PairedDifference,
    paired_differences,
    paired_many,
    resampling_of,
    row_keys,
    unpaired_reason,
)
from spatialprobe.metrics.statistics import get

MCNEMAR_SMALL = 25
"""The table shows the exact McNemar p where b10 + b01 is at most this (compare.json always)."""


@dataclass(frozen=True)
class Compared:
    """One run of a comparison: its folder, summary, label and primary rows in a common order."""

    path: Path
    summary: Mapping[str, Any]
    label: str
    rows: list[dict[str, Any]]
    backend: str = "–"
    """The model adapter it asked through (:func:`spatialprobe.reports.runs.backend`)."""


def primary_rows(summary: Mapping[str, Any], rows: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """The run's first image condition (None where it asked none) and its rows under it."""
    conditions = list((summary.get("details") or {}).get("conditions") or [])
    if not conditions:
        return None, rows
    return str(conditions[0]), [r for r in rows if r.get("condition", conditions[0]) == conditions[0]]


def load_compared(paths: Sequence[str | Path]) -> tuple[list[Compared], Resampling]:
    """The runs, their rows aligned on the first run's keys, and the resampling they share;
    :class:`UsageError` naming what differs (benchmark, resampling, condition, items, gold)."""
    from spatialprobe.files import read_rows
    from spatialprobe.reports.runs import backend, labels, load_run

    runs = [load_run(p) for p in paths]
    same_run(runs)
    found = []
    for run in runs:
        file = run.path / "predictions.jsonl"
        if not file.is_file():
            raise UsageError(f"{run.path} has no predictions.jsonl: its items cannot be compared")
        found.append(primary_rows(run.summary, read_rows(file)))
    specs = [resampling_of(run.summary, rows) for run, (_, rows) in zip(runs, found, strict=True)]
    if len({(spec.labels, spec.pred) for spec in specs}) > 1:  # e.g. a native run beside an imported one
        pairs = [as_correctness(spec, rows) for spec, (_, rows) in zip(specs, found, strict=True)]
        specs = [spec for spec, _ in pairs]
        found = [(condition, rows) for (condition, _), (_, rows) in zip(found, pairs, strict=True)]
    first = runs[0]
    for run, (condition, rows), spec in zip(runs[1:], found[1:], specs[1:], strict=True):
        reason = _difference(first.summary, found[0], specs[0], run.summary, (condition, rows), spec)
        if reason:
            raise UsageError(f"{run.path} cannot be compared with {first.path}: {reason}.")
    order = {k: n for n, k in enumerate(row_keys(found[0][1], specs[0].key))}
    named = labels(runs)
    out = [Compared(run.path, run.summary, label, aligned(rows, row_keys(rows, specs[0].key), order), backend(run))
           for run, (_, rows), label in zip(runs, found, named, strict=True)]
    return out, specs[0]


def aligned(rows: list[dict[str, Any]], keys: list[tuple[Any, ...]], order: Mapping[tuple[Any, ...], int]
            ) -> list[dict[str, Any]]:
    """``rows`` (whose keys are ``keys``) in the first run's order."""
    placed: list[dict[str, Any]] = [{}] * len(rows)
    for row, k in zip(rows, keys, strict=True):
        placed[order[k]] = row
    return placed


def same_run(runs: Sequence[Any]) -> None:
    """Refuse a run folder given twice: ranked against itself it would be one model counted as two."""
    seen: set[Path] = set()
    for run in runs:
        folder = Path(run.path).resolve()
        if folder in seen:
            raise UsageError(f"{run.path} is given twice: compare ranks different runs on the same items; "
                             "give each run folder once.")
        seen.add(folder)


def as_correctness(spec: Resampling, rows: list[dict[str, Any]]) -> tuple[Resampling, list[dict[str, Any]]]:
    """The run scored by whether each row is right (``correct``), the form an imported run has (the
    harness's own verdict): a run that predicts labels gets ``correct = gold == pred`` (case folded
    where its spec folds case; a row without an answer is wrong) and the share of correct rows as
    its accuracy - the same number - so that native and imported runs on the same items compare."""
    from dataclasses import replace

    if spec.pred == "correct" and not spec.labels:
        return spec, rows

    def right(row: Mapping[str, Any]) -> bool:
        gold, pred = row.get(spec.gold), row.get(spec.pred)
        if pred is None:
            return False
        return str(gold).lower() == str(pred).lower() if spec.fold_case else gold == pred

    scored = [{**row, "correct": right(row)} for row in rows]
    return replace(spec, labels=(), metrics={"accuracy": "share"}, pred="correct", missing=None), scored


def _difference(summary_a: Mapping[str, Any], found_a: tuple[str | None, list[dict[str, Any]]], spec_a: Resampling,
                summary_b: Mapping[str, Any], found_b: tuple[str | None, list[dict[str, Any]]],
                spec_b: Resampling) -> str | None:
    if summary_a.get("dataset") != summary_b.get("dataset"):
        return (f"they were run on different benchmarks or sources ({summary_a.get('dataset')} vs "
                f"{summary_b.get('dataset')})")
    if found_a[0] and found_b[0] and found_a[0] != found_b[0]:  # a kind without conditions declares none
        return f"their image conditions differ ({found_a[0]} vs {found_b[0]})"
    if spec_a.key != spec_b.key or spec_a.clusters != spec_b.clusters or spec_a.labels != spec_b.labels:
        return (f"their rows are keyed or resampled differently (keys {', '.join(spec_a.key)} vs "
                f"{', '.join(spec_b.key)}; clusters {', '.join(spec_a.clusters)} vs {', '.join(spec_b.clusters)})")
    reason = unpaired_reason(summary_a, found_a[1], summary_b, found_b[1], spec_a)
    if reason is None:
        return None
    return (reason.replace("their predictions are not for the same items", "their item keys differ")
            .replace("only in A", "only in the first run").replace("only in B", "only in this one"))


def score(rows: Sequence[Mapping[str, Any]], spec: Resampling, encoded: Encoded | None = None
          ) -> tuple[float | None, tuple[float, float] | None]:
    """The run's headline value and its interval, from the functions the run spine uses
    (``encoded``: its rows already encoded with ``spec``)."""
    from spatialprobe.metrics.estimates import point_estimates

    name, _ = headline(spec)
    enc = encoded if encoded is not None else encode(rows, spec)
    value = point_estimates(rows, spec, enc)[name].mean
    return value, metric_intervals(rows, spec, encoded=enc)[name][""]


def pair_entry(a: Compared, b: Compared, spec: Resampling, diff: PairedDifference | None = None,
               rights: tuple[np.ndarray | None, np.ndarray | None] | None = None) -> dict[str, Any]:
    """One pair's entry of compare.json (before adjustment): its paired difference (``diff``, else
    :func:`paired_differences` of the two runs) and its discordant rows (``rights``: each run's
    right rows, else read from the rows)."""
    name = headline(spec)[0]
    if diff is None:
        diff = next(d for d in paired_differences(a.rows, b.rows, spec) if d.metric == name)
    right_a, right_b = rights if rights is not None else (correct(a.rows, spec), correct(b.rows, spec))
    entry: dict[str, Any] = {"a": a.label, "b": b.label, "n": len(a.rows), "diff": diff.difference,
                             "ci": list(diff.ci) if diff.ci else None, "p": None if diff.p != diff.p else diff.p}
    if right_a is not None and right_b is not None:
        b10, b01 = int((right_a & ~right_b).sum()), int((~right_a & right_b).sum())
        entry.update(discordant={"b10": b10, "b01": b01}, p_mcnemar=mcnemar(b10, b01))
    else:
        entry.update(discordant=None, p_mcnemar=None)
    return entry


def compare(paths: Sequence[str | Path], resamples: int = RANK_RESAMPLES, seed: int = 0,
            reported: float | None = None) -> dict[str, Any]:
    """compare.json's content for the runs at ``paths`` (and a reported score checked against each)."""
    from spatialprobe.provenance import provenance

    if len(paths) < 2 and reported is None:
        raise UsageError("compare needs two runs or more (or one run and --reported SCORE).")
    runs, spec = load_compared(paths)
    name, stat = headline(spec)
    encoded = [encode(run.rows, spec) for run in runs]  # once per run: scores, pairs and draws read these
    models = []
    for run, enc in zip(runs, encoded, strict=True):
        value, ci = score(run.rows, spec, enc)
        models.append({"label": run.label, "path": str(run.path), "model": run.summary.get("model"),
                       "backend": run.backend, "score": value, "ci": list(ci) if ci else None})
    out: dict[str, Any] = {"metric": name, "statistic": stat, "header": get(stat).header,
                           "dataset": runs[0].summary.get("dataset"), "n": len(runs[0].rows),
                           "intervals": spec.describe(0, seed), "models": models, "pairs": []}
    if len(runs) >= 2:
        _add_pairs(out, runs, spec, resamples, seed, encoded)
    if reported is not None:
        out["reported"] = {"value": reported, "runs": [reported_check(m, reported) for m in models]}
    out["provenance"] = {"runs": [_identity(run) for run in runs], "toolkit": provenance()}
    return out


def _add_pairs(out: dict[str, Any], runs: Sequence[Compared], spec: Resampling, resamples: int, seed: int,
               encoded: Sequence[Encoded]) -> None:
    pairs = [(i, j) for i in range(len(runs)) for j in range(i + 1, len(runs))]
    together = paired_many(encoded, headline(spec)[1])  # every pair at once where the statistic allows
    rights = [correct_of(e, spec) for e in encoded]
    entries = [pair_entry(runs[i], runs[j], spec, together[i, j] if together else None, (rights[i], rights[j]))
               for i, j in pairs]
    holm, bh = adjusted([e["p"] if e["p"] is not None else float("nan") for e in entries])
    for entry, h, b in zip(entries, holm, bh, strict=True):
        entry.update(p_holm=h, p_bh=b, significant_holm=h is not None and h < ALPHA)
    out["pairs"] = entries
    higher = get(headline(spec)[1]).higher_is_better
    draws = joint_scores([run.rows for run in runs], spec, resamples, seed, encoded)
    intervals = rank_intervals(draws, higher)
    points = np.array([[m["score"] if m["score"] is not None else np.nan for m in out["models"]]])
    ranks = rank_intervals(points, higher)
    differs = {frozenset(p): e["significant_holm"] for p, e in zip(pairs, entries, strict=True)}
    order = sorted(range(len(runs)), key=lambda m: (ranks[m][0], m))
    letters = groups(order, differs)
    for m, model in enumerate(out["models"]):
        model.update(rank=ranks[m][0], rank_interval=list(intervals[m]), group=letters[m])
    out["models"] = [out["models"][m] for m in order]
    out["ranks"] = {"resamples": resamples, "seed": seed, "method": (
        "joint cluster bootstrap: every model's statistic on the same draws of clusters, ranked per "
        "draw (ties share the better rank); 2.5th-97.5th percentiles")}


def reported_check(model: Mapping[str, Any], reported: float) -> dict[str, Any]:
    """Whether a reported score lies in the run's 95 % interval, and by how many points it misses."""
    ci = model.get("ci")
    entry: dict[str, Any] = {"label": model["label"], "score": model["score"], "ci": ci}
    if not ci:
        return {**entry, "inside": None, "miss": None}
    miss = reported - ci[1] if reported > ci[1] else (reported - ci[0] if reported < ci[0] else 0.0)
    return {**entry, "inside": miss == 0.0, "miss": round(miss, 6)}


def _identity(run: Compared) -> dict[str, Any]:
    prov = run.summary.get("provenance") or {}
    return {"path": str(run.path), "identity": run.summary.get("identity"), "model": run.summary.get("model"),
            "kind": run.summary.get("kind"), "dataset": run.summary.get("dataset"),
            "created": prov.get("created"), "toolkit_version": prov.get("toolkit_version"),
            "git": prov.get("git")}


def write_compare(result: Mapping[str, Any], folder: Path, plot: Path | None = None) -> list[str]:
    """compare.json, table.md and the plot (``ranks.png`` unless ``plot`` names a file); the names written."""
    from spatialprobe.files import atomic_write_text

    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "compare.json", json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(folder / "table.md", compare_table(result))
    written = ["compare.json", "table.md"]
    if result["models"] and any(m.get("ci") for m in result["models"]):
        target = plot or folder / "ranks.png"
        score_plot(result, target)
        written.append(str(target) if plot else "ranks.png")
    return written


def score_plot(result: Mapping[str, Any], out: Path) -> None:
    """Each model's score with its 95 % interval, best first, and its rank interval in its label."""
    from matplotlib.figure import Figure  # no pyplot: nothing shown, a second less to start

    from spatialprobe.files import atomic_path

    models = [m for m in result["models"] if m["score"] is not None]
    y = np.arange(len(models))[::-1]
    fig = Figure(figsize=(7, 1.2 + 0.38 * len(models)))
    ax = fig.subplots()
    for pos, m in zip(y, models, strict=True):
        low, high = m["ci"] or (m["score"], m["score"])
        ax.errorbar(m["score"], pos, xerr=[[m["score"] - low], [high - m["score"]]], fmt="o", color="C0", capsize=3)
    names = [m["label"] + (f"  (rank {m['rank_interval'][0]}-{m['rank_interval'][1]})" if "rank_interval" in m else "")
             for m in models]
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xlabel(f"{result['header']} (95 % interval)")
    ax.set_title(f"{result['dataset']}: {len(models)} runs in rank order", fontsize=10)
    if "reported" in result:
        ax.axvline(result["reported"]["value"], color="grey", linestyle="--", linewidth=0.8, label="reported")
        ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=120)


def _num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _ci(ci: Sequence[float] | None) -> str:
    return f"[{ci[0]:.1f}, {ci[1]:.1f}]" if ci else "–"


def compare_table(result: Mapping[str, Any]) -> str:
    """The markdown ``compare`` prints and writes to table.md."""
    from spatialprobe.reports.tables import markdown_table, p_text

    header = result["header"]
    count = len(result["models"])
    lines = [f"# {count} run{'s' if count != 1 else ''} on {result['dataset']} ({result['n']} rows): {header}\n"]
    has_ranks = any("rank" in m for m in result["models"])
    rows = [[str(m.get("rank", "–")), m["label"], _num(m["score"]), _ci(m["ci"]),
             (f"[{m['rank_interval'][0]}, {m['rank_interval'][1]}]" if has_ranks else "–"), m.get("group", "–"),
             str(m.get("backend") or "–")] for m in result["models"]]
    lines.append(markdown_table(["rank", "model", header, "95 % interval", "rank interval", "group", "backend"], rows))
    if result["pairs"]:
        def pm(p: float | None) -> str:
            return "–" if p is None else p_text(p)

        prow = []
        for e in result["pairs"]:
            d = e["discordant"]
            small = d is not None and d["b10"] + d["b01"] <= MCNEMAR_SMALL
            prow.append([e["a"], e["b"], str(e["n"]), f"{d['b10']}/{d['b01']}" if d else "–",
                         f"{e['diff']:+.1f}", _ci(e["ci"]), pm(e["p"]), pm(e["p_mcnemar"]) if small else "–",
                         pm(e["p_holm"]), pm(e["p_bh"])])
        lines.append("\n" + markdown_table(["A", "B", "n", "b10/b01", "A − B", "95 % interval", "p",
                                            "p McNemar", "p Holm", "p BH"], prow))
        lines.append(
            f"\np: the paired test of `report A B` ({result['intervals']['method']}); p McNemar: exact, "
            f"on the discordant rows (A right, B wrong / A wrong, B right) as if rows were independent, "
            f"shown where b10 + b01 ≤ {MCNEMAR_SMALL} (always in compare.json); p Holm / p BH: p adjusted "
            f"over the {len(result['pairs'])} pairs. Rank interval: {result['ranks']['method']} "
            f"({result['ranks']['resamples']} resamples, seed {result['ranks']['seed']}). Models sharing a "
            "letter in `group` are not told apart (Holm-adjusted p ≥ 0.05).\n")
    if "reported" in result:
        lines.append(reported_text(result["reported"]))
    return "".join(lines)


def reported_text(reported: Mapping[str, Any]) -> str:
    """One line per run: the reported score inside its interval, or by how much it misses it."""
    out = []
    for r in reported["runs"]:
        if r["inside"] is None:
            out.append(f"- {r['label']}: no interval to check {reported['value']} against.")
        elif r["inside"]:
            out.append(f"- {r['label']}: the reported {reported['value']} lies inside the run's 95 % interval "
                       f"{_ci(r['ci'])} (measured {_num(r['score'])}).")
        else:
            side = "above" if r["miss"] > 0 else "below"
            out.append(f"- {r['label']}: the reported {reported['value']} lies {abs(r['miss']):.1f} points "
                       f"{side} the run's 95 % interval {_ci(r['ci'])} (measured {_num(r['score'])}): not reproduced.")
    return "\nReported score:\n" + "\n".join(out) + "\n"
