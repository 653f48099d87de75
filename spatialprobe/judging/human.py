"""Human evaluation (ISM (Human)): scoring the answers saved from the annotation page
(:mod:`spatialprobe.judging.annotation_page`).

:class:`HumanRun` (the ``human`` run kind, run by the run spine) scores one or more answers files
against gold: accuracy and macro-F1 per annotator (whole set, with unanswered or "can't tell"
items given a seeded random guess, and on the answered subset), Cohen's kappa between
annotators, and the mean and population σ over annotators, as the paper reports ISM (Human).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path
from typing import Any

from spatialprobe import tasks
from spatialprobe.errors import UsageError
from spatialprobe.files import DataError, read_json_file, shown
from spatialprobe.imagestore import Completeness
from spatialprobe.judging.annotation_page import CANT_TELL, page_id, read_run
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.runner import Evaluation, Item, RunKind, execute
from spatialprobe.runner.folders import RunOut
from spatialprobe.runner.settings import OPTIONAL, recorded
from spatialprobe.validate import identifier, normal

FORMAT = "spatialprobe-annotations"
MIN_ANSWERED = 0.9
"""Share of a page's items an answers file must answer (an option, "cannot tell" included)."""


def _load(path: Path) -> dict[str, Any]:
    data = read_json_file(path)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DataError(path, None, "format", f"not a {FORMAT} file")
    return data


def page_items(path: str | Path, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items of the page an answers file came from: those it lists (pages save their item
    ids, so images added to the run after the export do not orphan the answers), else all."""
    path = Path(path)
    listed = _load(path).get("items")
    if listed is None:
        return list(items)
    if not isinstance(listed, list) or not all(isinstance(i, str) for i in listed):
        raise DataError(path, None, "items", "expected a list of item ids")
    by_id = {i["id"]: i for i in items}
    missing = [i for i in listed if i not in by_id]
    if missing:
        raise DataError(path, None, "items", f"item {shown(missing[0])} is not an image of this run "
                        "(answers exported from another run?)")
    return [by_id[i] for i in listed]


def read_answers(path: str | Path, expected_page: str) -> dict[str, Any]:
    path = Path(path)
    data = _load(path)
    if data.get("page_id") != expected_page:
        raise DataError(path, None, "page_id", f"answers are for page {shown(data.get('page_id'))}, "
                        f"but this run's page is {expected_page!r} (exported from another run?)")
    if not isinstance(data.get("answers"), dict):
        raise DataError(path, None, "answers", "expected an object item id -> answer")
    identifier(data, "annotator", path, None, optional=True)
    return data


def usable_answers(answers: dict[str, Any], items: Sequence[dict[str, Any]], options: Sequence[str]
                   ) -> tuple[dict[str, str], dict[str, Any]]:
    """The answers to this page's items matched to ``options`` after normalising case and spaces
    (" Larger" is ``larger``), and what was left out: counts and the first ids of answers to
    unknown items, of non-string answers and of answers that are none of the options."""
    known = {i["id"] for i in items}
    unknown = [k for k in answers if k not in known]
    not_text = [k for k, v in answers.items() if k in known and not isinstance(v, str)]
    kept = {k: normal(v) for k, v in answers.items() if k in known and isinstance(v, str)}
    unmatched = [k for k, v in kept.items() if v not in options]
    kept = {k: v for k, v in kept.items() if v in options}
    ignored = {"unknown_ids": len(unknown), "first_unknown_ids": unknown[:3],
               "non_string": len(not_text), "first_non_string_ids": not_text[:3],
               "unmatched": len(unmatched), "first_unmatched": [answers[k] for k in unmatched[:3]]}
    return kept, ignored


def check_answered(path: str | Path, answered: int, total: int, min_answered: float) -> None:
    """Refuse an answers file that answers less than ``min_answered`` of the page's items: its
    headline would be mostly guesses."""
    if total and answered / total < min_answered:
        share = math.floor(100 * answered / total) / 100  # rounded down, so passing it is enough
        raise DataError(path, None, "answers", f"answers {answered} of {total} items "
                        f"({100 * answered / total:.1f} %), fewer than the {100 * min_answered:g} % "
                        f"required; pass --min-answered {share:g} to score it anyway")


def score_annotator(items: Sequence[dict[str, Any]], answers: dict[str, str], labels: Sequence[str],
                    seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One annotator's figures (whole set with unanswered items guessed from
    ``random.Random(seed)`` in item order, and the answered subset) and per-item rows."""
    from spatialprobe.judging.box_scores import scores

    rng = random.Random(seed)
    rows = []
    for item in items:
        given = answers.get(item["id"])
        answered = given in labels
        rows.append({"item": item["id"], "obj_a": item["obj_a"], "obj_b": item["obj_b"],
                     "gold": item["gold"], "answer": given, "recognized": answered,
                     "pred": given if answered else rng.choice(list(labels))})
    whole = scores(rows)
    subset = scores([r for r in rows if r["recognized"]])
    return {"whole_set": whole, "answered_subset": subset,
            "answered_ratio": 100.0 * subset["n"] / whole["n"] if whole["n"] else None}, rows


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass(frozen=True)
class AnswerFile:
    """One annotator's answers file as a run records it."""

    position: int
    """Its place among the files given (it seeds the annotator's guesses)."""
    file: str
    sha256: str | None = None
    """Its content's digest (read by the run; a command gives the file alone)."""


@dataclass(frozen=True)
class HumanRunSettings:
    """What a human run's ``config.json`` records (its typed settings, see ``RunKind``)."""

    source: dict[str, Any]
    """The image run annotated: its path and identity (a command gives ``judged_images.image_run``)."""
    answers: dict[str, AnswerFile] = field(metadata={"nonempty": True})
    """Keyed by annotator, so a refusal names whose file changed (a command keys them by position)."""
    task: str | None = None
    """None: the task of the image run's prompts."""
    page_id: str | None = None
    """The annotation page's id (read by the run)."""
    seed: int = 0
    min_answered: float | None = field(default=None, metadata=OPTIONAL)
    """``--min-answered`` where it is not the default (absent otherwise, so runs made before the
    option keep their identity): a replay accepts the files the run accepted."""


class HumanRun(RunKind):
    """ISM (Human) as a run kind (see :class:`spatialprobe.runner.RunKind`): one item per
    annotator (an answers file), scored against gold; kappa and the mean over annotators."""

    kind = "human"
    Settings = HumanRunSettings
    batch_size = 1

    def __init__(self, settings: HumanRunSettings):
        s = settings
        if not s.answers:
            raise UsageError("give at least one answers file saved from the annotation page.")
        run = str(recorded(s.source, "path", "source"))
        answer_files = [a.file for a in sorted(s.answers.values(), key=lambda a: a.position)]
        read = read_run(run, s.task, partial=bool((s.source.get("completeness") or {}).get("partial")),
                        with_files=False)  # scoring reads no image
        self.store, self.completeness, items = read.store, read.completeness, read.items
        self.items_ = page_items(answer_files[0], items)
        self.labels = tasks.labels_of(read.task)
        share = MIN_ANSWERED if s.min_answered is None else s.min_answered
        if not 0 <= share <= 1:
            raise UsageError(f"--min-answered is a share between 0 and 1, not {share:g}.")
        self.page = page_id(run, read.task, self.items_)
        self.annotators: list[dict[str, Any]] = []
        for number, path in enumerate(answer_files):
            data = read_answers(path, self.page)
            name = str(data.get("annotator") or Path(path).stem)
            if name in {a["name"] for a in self.annotators}:
                name = f"{name}-{number}"
            answers, ignored = usable_answers(data["answers"], self.items_, [*self.labels, CANT_TELL])
            check_answered(path, len(answers), len(self.items_), share)
            self.annotators.append({"name": name, "number": number, "file": str(path),
                                    "answers": answers, "ignored": ignored})
        config = self.store.run.config() or {}
        self.settings = replace(
            s, task=read.task, page_id=self.page, min_answered=None if share == MIN_ANSWERED else share,
            source={"path": str(self.store.path.resolve()), "identity": config.get("identity"),
                    "completeness": self.completeness.to_dict()},
            answers={a["name"]: AnswerFile(a["number"], str(Path(a["file"]).resolve()), file_sha256(a["file"]))
                     for a in self.annotators})

    def items(self) -> list[Item]:
        return [Item(a["name"], a) for a in self.annotators]

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        out = []
        for item in batch:
            a = item.payload
            figures, rows = score_annotator(self.items_, a["answers"], self.labels, self.seed + a["number"])
            out.append({"figures": figures, "rows": rows})
        return out

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        from spatialprobe.judging.judged_images import source_dataset

        answers = {name: {r["item"]: r["answer"] for r in res["rows"] if r["answer"] is not None}
                   for name, res in results.items()}
        kappa = pairwise_kappa(answers, [i["id"] for i in self.items_])
        details = {"method": "ISM (Human)", "items": len(self.items_), "kappa": kappa,
                   "image_run": self.completeness.to_dict(),
                   "mean_kappa": sum(k["kappa"] for k in kappa.values()) / len(kappa) if kappa else None,
                   "answer_files": {a["name"]: a["file"] for a in self.annotators},
                   # per annotator: answers to unknown ids and non-string answers, left out
                   "ignored_answers": {a["name"]: {"file": a["file"], **a["ignored"]} for a in self.annotators
                                       if a["ignored"]["unknown_ids"] or a["ignored"]["non_string"]
                                       or a["ignored"]["unmatched"]}}
        rows = [{"annotator": name, **row} for name, res in results.items() for row in res["rows"]]
        models = sorted({f"{r.backend}:{r.model}" for r in self.store.images()})
        # every metric is declared in human_resampling: the spine computes it from the registry
        return Evaluation(rows, {}, self.task, " | ".join(models),
                          source_dataset(self.store) or self.task, self.seed, False, details,
                          human_resampling(self.task, self.labels))

    def table(self, summary: Mapping[str, Any]) -> str:
        return Completeness.line(summary["details"].get("image_run")) + table_markdown(summary)


def human_resampling(task: str, labels: Sequence[str]) -> tuple[Resampling, ...]:
    """How the rows (one per annotator and image) are resampled: by the objects the images show
    (both objects of a size/height pair; the object, not the person, of a posrel scenario), one
    draw for every annotator, each annotator measured apart and the annotators averaged, as the
    point estimate is. Macro-F1 averages over the labels that occur (as :func:`score_annotator`)."""
    whole = Resampling(tuple(labels), tasks.get(task).object_fields, group="annotator", key=("annotator", "item"),
                       metrics={"accuracy": "accuracy", "macro_f1": "macro_f1_seen"})
    return (whole, replace(whole, only="recognized",
                           metrics={"answered_accuracy": "accuracy", "answered_macro_f1": "macro_f1_seen"}),
            replace(whole, labels=(), pred="recognized", metrics={"answered_ratio": "share"}))


def pairwise_kappa(answers: Mapping[str, Mapping[str, str]], order: Sequence[str]) -> dict[str, Any]:
    """Cohen's kappa for each pair of annotators over the items both answered (1.0 where both
    gave one same answer throughout, which leaves kappa undefined)."""
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    kappa = {}
    for x, y in combinations(answers, 2):
        shared = [i for i in order if i in answers[x] and i in answers[y]]
        if shared:
            value = cohen_kappa_score([answers[x][i] for i in shared], [answers[y][i] for i in shared])
            kappa[f"{x} | {y}"] = {"kappa": float(np.nan_to_num(value, nan=1.0)), "items": len(shared)}
    return kappa


def import_answers(run: str | Path, answer_files: Sequence[str | Path], out: RunOut,
                   task: str | None = None, seed: int = 0, partial: bool = False,
                   min_answered: float | None = None) -> dict[str, Any]:
    """Score annotators' answer files; write the run at ``out`` and return its summary."""
    from spatialprobe.judging.judged_images import image_run

    files = {str(n): AnswerFile(n, str(path)) for n, path in enumerate(answer_files)}
    return execute(HumanRun(HumanRunSettings(image_run(run, partial), files, task, seed=seed,
                                             min_answered=min_answered)), out)


def _pm(metric: Mapping[str, Any]) -> str:
    from spatialprobe.reports.tables import pm

    return pm(metric)


def table_markdown(summary: Mapping[str, Any]) -> str:
    from spatialprobe.reports.tables import header_of

    m = summary["metrics"]
    accuracy, f1 = (header_of(summary, name) for name in ("accuracy", "macro_f1"))  # the registry's
    lines = [f"# ISM (Human): {summary['task']}\n",
             f"| annotator | {accuracy} (%) | {f1} (%) | answered (%) | answered-subset {accuracy} (%) |",
             "|---|---:|---:|---:|---:|"]
    for name in m["accuracy"].get("breakdown", {}):
        cells = [m[k]["breakdown"][name] for k in ("accuracy", "macro_f1", "answered_ratio",
                                                    "answered_accuracy")]
        lines.append(f"| {name} | " + " | ".join(_pm(c) for c in cells) + " |")
    lines.append(f"| mean ± σ | {_pm(m['accuracy'])} | {_pm(m['macro_f1'])} | | |")
    kappa = summary["details"]["kappa"]
    if kappa:
        lines.append("\nCohen's kappa: " + ", ".join(f"{k} = {v['kappa']:.3f} ({v['items']} items)"
                                                    for k, v in kappa.items()))
    if summary.get("intervals"):
        from spatialprobe.reports.tables import intervals_line

        lines.append("\n" + intervals_line(summary).rstrip("\n"))
    return "\n".join(lines) + "\n"
