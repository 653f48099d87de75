"""``judge compare`` as a run kind: several judgements of the same images side by side.

It is a run kind on the spine, not a report like ``spatialprobe report``, because what it writes
is a measurement of its own with settings that decide its numbers (the judgements compared, by
identity and content, what is compared, the seed and the number of resamples): the spine gives it
an identity, a ``config.json`` with provenance that ``spatialprobe run`` replays, the one rule
about which folder it may write (``store.require_own_folder``), the default folder under
``runs/`` and a refusal when the same ``--out`` is asked for with other judgements.

Items are the judgements (one per run folder): each is read into one row per image
(:mod:`.compare_read`); the evaluation groups them by the image run they judged, compares them on
the images every judge of that image run judged (:mod:`.judge_compare_stats`) and ranks the image runs'
models under each judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.judging import judge_compare_stats as S
from spatialprobe.judging.judge_compare_read import (
    VISOR_KINDS,
    Judgement,
    names,
    read_judgement,
    read_rows,
    rule_score,
)
from spatialprobe.metrics.intervals import DEFAULT_RESAMPLES
from spatialprobe.metrics.metric import Metric
from spatialprobe.runner import Evaluation, Item, RunKind
from spatialprobe.store import RunDir


@dataclass(frozen=True)
class JudgementRef:
    """One judgement compared, as the comparison's config records it; a command gives its path,
    the comparison reads the rest."""

    path: str
    kind: str | None = None
    identity: str | None = None
    predictions_sha256: str | None = None


@dataclass(frozen=True)
class CompareSettings:
    """What a comparison's ``config.json`` records (every field decides its numbers)."""

    runs: list[JudgementRef] = field(metadata={"nonempty": True})
    on: str = "verdict"
    """``verdict`` or ``label`` (:data:`.judge_compare_stats.ON`)."""
    unrecognized: str = "guess"
    """``guess`` or ``exclude`` (:data:`.judge_compare_stats.UNRECOGNIZED`)."""
    seed: int = 0
    resamples: int = DEFAULT_RESAMPLES


class JudgeCompareRun(RunKind):
    """Several judgements of one or more image runs compared (see the module)."""

    kind = "judge-compare"
    Settings = CompareSettings
    batch_size = 16

    def __init__(self, settings: CompareSettings):
        if len(settings.runs) < 2:
            raise UsageError("give at least two judgement runs to compare.")
        for option, given, allowed in (("--on", settings.on, S.ON),
                                       ("--unrecognized", settings.unrecognized, S.UNRECOGNIZED)):
            if given not in allowed:
                raise UsageError(f"{option} must be one of {', '.join(allowed)}, not {given!r}.")
        if settings.resamples < 100:
            raise UsageError(f"--resamples must be at least 100, not {settings.resamples}.")
        self.judgements = [read_judgement(ref.path) for ref in settings.runs]
        paths = [j.path.resolve() for j in self.judgements]
        twice = next((p for n, p in enumerate(paths) if p in paths[:n]), None)
        if twice is not None:
            raise UsageError(f"{twice} is given twice; give each judgement once.")
        self.settings = replace(settings, runs=[
            JudgementRef(str(j.path.resolve()), j.kind, str(j.run.summary.get("identity")), j.sha256)
            for j in self.judgements])
        if settings.on == "label" and any(j.kind in VISOR_KINDS for j in self.judgements):
            raise UsageError("--on label compares the judges' answers, but a VISOR run gives a verdict per "
                             "image only (relation found or not); compare with --on verdict.")
        self.names = self._unique_names()
        self.groups = list(dict.fromkeys(j.image_run for j in self.judgements))

    def _unique_names(self) -> list[str]:
        """Judge names; two judgements of one image run that would share a name (or two human runs)
        are refused, naming both folders, as their rows could not be told apart."""
        given = names(self.judgements)
        seen: dict[tuple[str, str], Path] = {}
        for name, j in zip(given, self.judgements, strict=True):
            other = seen.setdefault((j.image_run, name), j.path)
            if other != j.path:
                raise UsageError(f"{other} and {j.path} judge the same image run with the same settings "
                                 f"({name}); give one of them.")
        return given

    def items(self) -> list[Item]:
        return [Item(str(j.path.resolve()), j) for j in self.judgements]

    def compute(self, batch: Sequence[Item]) -> list[list[dict[str, Any]]]:
        return [read_rows(item.payload) for item in batch]

    def group_label(self, image_run: str) -> str:
        """A model's name, with its image run's folder where two image runs share a model."""
        first = next(j for j in self.judgements if j.image_run == image_run)
        models = [next(j for j in self.judgements if j.image_run == g).model for g in self.groups]
        return first.model if models.count(first.model) == 1 else f"{first.model} ({Path(first.image_run_path).name})"

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        groups, group_rows, group_keys, predictions = [], [], [], []
        for image_run in self.groups:
            members = [(n, j) for n, j in zip(self.names, self.judgements, strict=True) if j.image_run == image_run]
            rows = {n: by_image(j, results[str(j.path.resolve())]) for n, j in members}
            label = self.group_label(image_run)
            keys = S.compared_images(rows, self.unrecognized, f"{label} (image run {members[0][1].image_run_path})")
            check_gold(rows, keys, dict(members))
            stats = S.group_stats(rows, keys, self.on, self.resamples, self.seed)
            groups.append({"model": label, "image_run": image_run, "image_run_path": members[0][1].image_run_path,
                           "judges": [n for n, _ in members], **stats})
            group_rows.append(rows)
            group_keys.append(keys)
            first = rows[members[0][0]]
            predictions += [{"model": label, "instance_id": k[0], "image_index": k[1], "gold": first[k]["gold"],
                             "answers": {n: rows[n][k]["pred"] for n in rows},
                             "recognized": {n: rows[n][k]["recognized"] for n in rows}} for k in keys]
        ranked = S.ranking(groups, group_rows, group_keys, self.resamples, self.seed) if len(groups) > 1 else None
        details = {"method": "judge compare", "on": self.on, "unrecognized": self.unrecognized,
                   "resampling": self.resampling(), "runs": self.described(), "groups": groups, "ranking": ranked}
        tasks = {str(j.run.summary.get("task")) for j in self.judgements if j.kind not in VISOR_KINDS}
        return Evaluation(predictions, comparison_metrics(groups, ranked), tasks.pop() if len(tasks) == 1 else None,
                          " | ".join(g["model"] for g in groups), "judgements", self.seed,
                          any(bool(j.run.summary.get("untrained")) for j in self.judgements), details)

    def resampling(self) -> dict[str, Any]:
        return {"method": "bootstrap over prompts (each with its images)", "interval": "percentile",
                "level": 0.95, "resamples": self.resamples, "seed": self.seed,
                "estimand": "the statistic over new prompts drawn like these, each with as many images",
                "within an image run": "one set of resamples of the compared prompts for every judge and pair",
                "kendall_tau": "each model's prompts resampled on their own (stratified); scores recomputed"}

    def described(self) -> list[dict[str, Any]]:
        """Each judgement compared; a judge run with its rule's own score (:func:`rule_score`)."""
        return [{"name": n, "path": str(j.path.resolve()), "kind": j.kind, "identity": j.run.summary.get("identity"),
                 "image_run": j.image_run, "model": j.model, "predictions_sha256": j.sha256,
                 **({"rule_score": own} if (own := rule_score(j)) else {})}
                for n, j in zip(self.names, self.judgements, strict=True)]

    def table(self, summary: Mapping[str, Any]) -> str:
        from spatialprobe.judging.judge_compare_table import table_markdown

        return table_markdown(summary)

    def write_extras(self, run: RunDir, summary: Mapping[str, Any], evaluation: Evaluation) -> None:
        """``compare.json`` (everything, with what produced it) and the plots."""
        from spatialprobe.files import write_json
        from spatialprobe.reports.compare_plots import write_plots

        config = run.config() or {}
        write_json(run.file("compare.json"), {"settings": config.get("settings"), "identity": summary["identity"],
                                              "provenance": summary["provenance"], **summary["details"]})
        write_plots(run.path, summary)


def by_image(judgement: Judgement, rows: Sequence[Mapping[str, Any]]) -> dict[S.Key, Mapping[str, Any]]:
    """A judgement's rows keyed by (prompt id, image index); an image judged twice is refused."""
    out: dict[S.Key, Mapping[str, Any]] = {}
    for line, row in enumerate(rows, 1):
        key = (str(row["instance_id"]), int(row["image_index"]))
        if key in out:
            raise DataError(judgement.path / "predictions.jsonl", line, "instance_id",
                            f"image {key[0]}#{key[1]} is judged twice")
        out[key] = row
    return out


def check_gold(rows: Mapping[str, Mapping[S.Key, Mapping[str, Any]]], keys: Sequence[S.Key],
               judgements: Mapping[str, Judgement]) -> None:
    """Judgements of one image must ask about one relation (else they judged different prompts)."""
    first = next(iter(rows))
    for name, judged in rows.items():
        for key in keys:
            if str(judged[key]["gold"]) != str(rows[first][key]["gold"]):
                raise DataError(judgements[name].path / "predictions.jsonl", None, "gold",
                                f"image {key[0]}#{key[1]} asks {judged[key]['gold']!r} here but "
                                f"{rows[first][key]['gold']!r} in {judgements[first].path}")


def _metric(entry: Mapping[str, Any]) -> Metric:
    return Metric(entry["value"], None, int(entry.get("n", entry.get("models", 0))),
                  ci=entry.get("ci"), resampled=True)


def comparison_metrics(groups: Sequence[Mapping[str, Any]], ranked: Mapping[str, Any] | None) -> dict[str, Metric]:
    """The summary's metrics: each a breakdown (``MODEL · JUDGE``, ``MODEL · A | B``, ...); the
    values, intervals and reasons are also in ``details``."""
    parts: dict[str, dict[str, Metric]] = {"score": {}, "agreement": {}, "kappa": {}, "accuracy_vs_people": {}}
    for g in groups:
        for what in ("score", "agreement", "kappa"):
            for name, entry in g["scores" if what == "score" else what].items():
                parts[what][f"{g['model']} · {name}"] = _metric(entry)
        for name, entry in (g.get("vs_people") or {}).items():
            parts["accuracy_vs_people"][f"{g['model']} · {name}"] = _metric(entry["all"])
            for rel, sub in entry["relations"].items():
                parts["accuracy_vs_people"][f"{g['model']} · {name} · {rel}"] = _metric(sub)
    if ranked:
        parts["kendall_tau"] = {pair: _metric(entry) for pair, entry in ranked["kendall_tau"].items()}
    return {name: Metric(None, None, 0, breakdown) for name, breakdown in parts.items() if breakdown}
