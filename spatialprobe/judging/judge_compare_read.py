"""The judgements ``judge compare`` reads: finished run folders of kinds judge, vqa-judge, visor
and human, each as one row per image of one image run.

A row is ``{instance_id, image_index, gold, pred, recognized}``: the prompt id and image index
that name the image in its image run, the relation asked (gold), the judge's answer and whether
the judge recognized the image (else ``pred`` is the judge's seeded guess, as its own score uses).

* ``judge`` and ``vqa-judge``: their ``predictions.jsonl`` rows as they are.
* ``visor``: one row per image (``key`` = SR2D unique id _ image index); VISOR gives a verdict,
  not a label, so ``pred`` is the relation asked where VISOR found it and ``not <relation>``
  otherwise; recognized = both objects detected. The SR2D unique id is the image run's prompt id
  (as ``synthesize`` numbers SR2D prompts).
* ``human`` (``annotate import``): the people's answer to an image is the answer most of its
  annotators gave (``cannot tell`` and unanswered left out); where none did, or two answers tie,
  the image has no people's answer (recognized false) and ``pred`` is the first annotator's
  seeded guess, as the human run's own score uses.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UnknownComponent, UsageError
from spatialprobe.files import read_jsonl
from spatialprobe.reports.runs import Run, flat, load_run

KINDS = ("judge", "vqa-judge", "visor", "vqa-visor", "human")
VISOR_KINDS = ("visor", "vqa-visor")
"""Kinds whose rows are VISOR's (one verdict per image, keyed UID_IMAGEINDEX)."""
"""The run kinds whose judgements can be compared."""
NOT_JUDGE = ("task", "model", "dataset", "source", "prompts", "skip_missing", "page_id", "answers",
             "min_answered")
"""Settings that say what was judged (or by whom), not how: left out of a judge's name."""


@dataclass(frozen=True)
class Judgement:
    """A finished judgement run as ``judge compare`` reads it."""

    run: Run
    kind: str
    image_run: str
    """The image run judged: its identity (its path where it has none)."""
    image_run_path: str
    sha256: str
    """Of its ``predictions.jsonl``: a judgement that changes is another comparison."""

    @property
    def path(self) -> Path:
        return self.run.path

    @property
    def model(self) -> str:
        return str(self.run.summary.get("model"))


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def image_run_of(run: Run, kind: str) -> Mapping[str, Any]:
    """The ``{path, identity}`` of the image run a judgement read (from its config)."""
    source = (run.config.get("settings") or {}).get("source") or {}
    if kind in VISOR_KINDS:
        if "image_run" not in source:
            raise UsageError(f"{run.path} is a VISOR run of a released detection file, which names no "
                             "image run; judge compare compares judgements of an image run's images.")
        source = source["image_run"]
    if not isinstance(source, Mapping) or not source.get("path"):
        raise DataError(run.path / "config.json", None, "settings.source", "names no image run (path)")
    return source


def read_judgement(path: str | Path) -> Judgement:
    """A finished run folder of a kind judge compare reads; anything else refused in one sentence."""
    run = load_run(path)
    kind = str(run.summary.get("kind"))
    if kind not in KINDS:
        raise UsageError(f"{run.path} is a {kind} run; judge compare reads judgements of images: runs of "
                         f"kind {', '.join(KINDS)}.")
    predictions = run.path / "predictions.jsonl"
    if not predictions.is_file():
        raise UsageError(f"{predictions} is missing: not a finished run")
    source = image_run_of(run, kind)
    return Judgement(run, kind, str(source.get("identity") or Path(source["path"]).resolve()),
                     str(source["path"]), file_sha256(predictions))


def rule_score(judgement: Judgement) -> dict[str, Any] | None:
    """A judge run's own benchmark score, as its rule's record names it (GenEval's position
    accuracy, T2I-CompBench's score, ...), read from its summary. judge compare's score is the
    share of true verdicts, which a benchmark's score need not be, so the table shows both. None
    for other kinds, for rules without a score and for a rule no longer registered."""
    from spatialprobe.judging.rulebook.lookup import rule_of

    summary = judgement.run.summary
    rule = (summary.get("details") or {}).get("rule")
    if judgement.kind != "judge" or rule is None:
        return None
    try:
        score = rule_of(str(summary.get("task")), str(rule)).score
    except UnknownComponent:
        return None
    metric = (summary.get("metrics") or {}).get(score.metric) if score is not None else None
    if score is None or not metric or metric.get("mean") is None:
        return None
    return {"rule": str(rule), "metric": score.metric, "mean": metric["mean"], "n": metric.get("n"),
            "digits": score.digits, "unit": score.unit}


def _int(value: Any, path: Path, line: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataError(path, line, field, f"expected an integer, not {value!r}")
    return value


def read_rows(judgement: Judgement) -> list[dict[str, Any]]:
    """One row per image: instance_id, image_index, gold, pred, recognized (see the module)."""
    file = judgement.path / "predictions.jsonl"
    rows = read_jsonl(file)
    if judgement.kind == "human":
        check_answers(judgement, rows, file)
        return people_rows(rows, file)
    out = [image_row(judgement.kind, row, file, line) for line, row in enumerate(rows, 1)]
    if judgement.kind not in VISOR_KINDS:
        check_answers(judgement, out, file)
    return out


def task_labels(judgement: Judgement) -> tuple[str, ...]:
    """The labels of the task a judgement answered (its summary's ``task``); an unknown task refused."""
    from spatialprobe import tasks

    task = str(judgement.run.summary.get("task"))
    if task not in tasks.names():
        raise DataError(judgement.path / "summary.json", None, "task",
                        f"{task!r} is not a task ({', '.join(tasks.names())}), so its answers cannot be read")
    return tasks.labels_of(task)


def check_answers(judgement: Judgement, rows: Sequence[Mapping[str, Any]], file: Path) -> None:
    """Every gold and pred must be an answer of the judgement's task (a VQA judge's verdict
    ``not <label>`` too): a human run answering "banana" would give kappa and vs-people figures
    that mean nothing, so it is refused naming file, line and field."""
    labels = task_labels(judgement)
    task = judgement.run.summary.get("task")
    allowed = set(labels) | ({f"not {label}" for label in labels} if judgement.kind == "vqa-judge" else set())
    for line, row in enumerate(rows, 1):
        for field in ("gold", "pred"):
            if field in row and row[field] not in allowed:
                raise DataError(file, line, field, f"{row[field]!r} is not an answer of task {task} "
                                f"({', '.join(labels)}); its judgements cannot be compared")


def image_row(kind: str, row: Mapping[str, Any], file: Path, line: int) -> dict[str, Any]:
    """A judge, vqa-judge or visor row as ``{instance_id, image_index, gold, pred, recognized}``."""
    try:
        if kind in VISOR_KINDS:
            uid, _, index = str(row["key"]).rpartition("_")
            return {"instance_id": uid, "image_index": int(index), "gold": row["rel"],
                    "pred": row["rel"] if row["correct"] else f"not {row['rel']}", "recognized": bool(row["both"])}
        number = _int(row["image_index"], file, line, "image_index")
        return {"instance_id": str(row["instance_id"]), "image_index": number,
                "gold": row["gold"], "pred": row["pred"], "recognized": bool(row["recognized"])}
    except KeyError as err:
        raise DataError(file, line, str(err.args[0]), "missing") from None
    except ValueError:
        raise DataError(file, line, "key", f"{row.get('key')!r} is not UID_IMAGEINDEX") from None


def majority(answers: Sequence[str]) -> str | None:
    """The answer most annotators gave; None where none answered or the top answers tie."""
    top = Counter(answers).most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def people_rows(rows: Sequence[Mapping[str, Any]], file: Path) -> list[dict[str, Any]]:
    """The human run's rows (one per annotator and image) as one row per image."""
    items: dict[str, list[Mapping[str, Any]]] = {}
    for line, row in enumerate(rows, 1):
        if not {"item", "gold", "pred", "recognized"} <= set(row):
            raise DataError(file, line, "item", "a human run's row needs item, gold, pred and recognized")
        items.setdefault(str(row["item"]), []).append(row)
    out = []
    for item, given in items.items():
        prompt_id, sep, index = item.rpartition("#")
        if not sep or not index.isdigit():
            raise DataError(file, None, "item", f"{item!r} is not PROMPT_ID#IMAGE_INDEX")
        people = majority([str(r["pred"]) for r in given if r["recognized"]])
        out.append({"instance_id": prompt_id, "image_index": int(index), "gold": given[0]["gold"],
                    "pred": given[0]["pred"] if people is None else people, "recognized": people is not None})
    return out


def names(judgements: Sequence[Judgement]) -> list[str]:
    """One name per judgement, the same for the same judge on different image runs: its kind and
    the settings that tell it from the other judgements of its kind (``judge rule=geneval``)."""
    def facets(j: Judgement) -> dict[str, str]:
        return {k: v for k, v in flat(j.run.config.get("settings") or {}).items()
                if k.split(".")[0] not in NOT_JUDGE}

    out = []
    for j in judgements:
        if j.kind == "human":
            out.append("people")
            continue
        same = [facets(o) for o in judgements if o.kind == j.kind]
        mine = facets(j)
        keys = sorted(k for k in {k for f in same for k in f} if len({f.get(k) for f in same}) > 1)
        out.append(" ".join([j.kind, *(f"{k}={mine.get(k, '–')}" for k in keys)]))
    return out
