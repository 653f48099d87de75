"""The QA run kind: yes/no questions -> answerer -> per-question answers -> accuracy / macro-F1.

``spatialprobe qa text|image`` go through the run spine (:mod:`spatialprobe.runner`): a run's
items are its (question, image) jobs - one per question for text QA, one per matched image for
image QA - computed a batch at a time by the answerer and cached in the spine's ``results``
table, so an interrupted run resumes. Metrics: accuracy and macro-F1 over yes/no, overall and
by relation (``breakdown``, keys ``relation NAME``); coverage and the share of "yes" answers are
``details``.

Image QA answers each question from the images a synthesis run made for the question's
scenario: images are matched by ``prompt_id`` = the question's ``instance_id``, or else by the
scenario text. With several images per scenario the yes/no margins are averaged (restricted
answers) or the most frequent answer wins (full vocabulary, ties broken alphabetically).
Questions without an image are left out of the metrics and counted in ``coverage``.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spatialprobe.datasets.qa import QAItem, QASet, asked_objects
from spatialprobe.errors import UsageError
from spatialprobe.extras import require
from spatialprobe.fingerprints import file_input, model_input
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.models.qa_models import Answer
from spatialprobe.runner import Evaluation, Item, RunKind, execute
from spatialprobe.runner.folders import RunOut
from spatialprobe.runner.settings import OPTIONAL, Component, recorded
from spatialprobe.runner.summary import Metric, single
from spatialprobe.sources.qa import match_images, questions_from_images

Progress = Callable[[int, int], None]


def scores(gold: Sequence[str], pred: Sequence[str]) -> dict[str, float]:
    """Accuracy and macro-F1 over the yes/no classes, in percent (sklearn)."""
    from sklearn.metrics import accuracy_score, f1_score

    if not gold:
        return {"accuracy": float("nan"), "macro_f1": float("nan")}
    return {"accuracy": 100.0 * accuracy_score(gold, pred),
            "macro_f1": 100.0 * f1_score(gold, pred, labels=["yes", "no"], average="macro",
                                         zero_division=0)}


def _combine(answers: list[Answer], full_vocab: bool) -> Answer:
    yes = sum(a.yes_score for a in answers) / len(answers)
    no = sum(a.no_score for a in answers) / len(answers)
    if full_vocab:
        counts = Counter(a.answer for a in answers)
        word = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    else:
        word = "yes" if yes >= no else "no"
    return Answer(word, yes, no)


def qa_metrics(items: Sequence[QAItem], final: Mapping[str, Answer]) -> tuple[dict[str, Metric], dict]:
    """Accuracy and macro-F1 overall and by relation; coverage and yes share (details)."""
    answered = [item for item in items if item.id in final]
    groups: dict[str, list[QAItem]] = defaultdict(list)
    for item in answered:
        groups[item.relation or "-"].append(item)

    def figures(group: Sequence[QAItem]) -> dict[str, float]:
        return scores([i.answer for i in group], [final[i.id].answer.lower() for i in group])

    overall = figures(answered)
    parts = {relation: (len(group), figures(group)) for relation, group in sorted(groups.items())}
    metrics = {name: Metric(overall[name], None, len(answered),
                            {f"relation {r}": single(f[name], n) for r, (n, f) in parts.items()})
               for name in ("accuracy", "macro_f1")}
    details = {"n_questions": len(items),
               "coverage": len(answered) / len(items) if items else 0.0,
               "yes_share_pred": (sum(final[i.id].answer.lower() == "yes" for i in answered)
                                  / len(answered) if answered else 0.0)}
    return metrics, details


def qa_resampling(task: str, objects_known: bool = True) -> Resampling:
    """How a QA run's rows (one per question) are resampled: by the objects its questions were
    built from (both objects of a size/height pair - its two questions and every pair sharing an
    object go together; the object, not the person, of a posrel scenario); where a question names
    no objects in :func:`~spatialprobe.datasets.qa.build_qa`'s wording, by scenario
    (``instance_id``: a scenario's two questions together). Only answered questions count (image QA
    leaves those without an image out); answers are compared case-insensitively, as the metrics do;
    the relation breakdown is pooled like the point estimate."""
    from spatialprobe import tasks

    if objects_known and task in tasks.names():
        clusters, unit = tasks.get(task).object_fields, None
    else:
        clusters, unit = ("instance_id",), "scenarios"
    return Resampling(("yes", "no"), clusters, group="relation", part="relation {}", missing="-", gold="answer",
                      key=("id",), only="answered", pooled=True, fold_case=True, unit=unit)


def answerer_settings(answerer) -> dict[str, Any]:
    """The answerer's name and the arguments that change its answers (device is runtime)."""
    args = {"model": str(answerer.model_id)}
    for name in ("use_context", "lowercase"):
        if hasattr(answerer, name):
            args[name] = getattr(answerer, name)
    return {"name": getattr(answerer, "name", type(answerer).__name__), "args": args}


def build_answerer(mode: str, answerer: Mapping[str, Any], runtime: Mapping[str, Any]):
    """The answerer a spec names, on the spec's runtime device."""
    args, device = dict(answerer["args"]), runtime.get("device", "auto")
    if mode == "text":
        from spatialprobe import registry

        return registry.build("model", registry.Spec("t5", {
            **args, "device": device, "batch_size": int(runtime.get("batch_size", 16))}))
    from spatialprobe.models.qa_models import load_vqa

    return load_vqa(args["model"], device=device)


def images_identity(store, records, completeness=None) -> dict[str, Any]:
    """Where a synthesis run is, the identity its config names, a hash of its image files and
    how complete the run was when read (a ``--partial`` read is another identity)."""
    digest = hashlib.sha256()
    for rec in records:
        digest.update(f"{rec.prompt_id}\t{rec.image_index}\t".encode())
        digest.update(hashlib.sha256(rec.path.read_bytes()).digest())
    config = store.run.config() or {}
    identity = {"path": str(Path(store.path).resolve()), "identity": config.get("identity"),
                "content": f"sha256:{digest.hexdigest()}"}
    if completeness is not None:
        identity["completeness"] = completeness.to_dict()
    return identity


@dataclass(frozen=True)
class QuestionsRecord:
    """The questions a QA run asked: ``name@version`` and where they were read from."""

    set: str
    source: dict[str, Any]


@dataclass(frozen=True)
class QARunSettings:
    """What a qa run's ``config.json`` records (its typed settings, see ``RunKind``)."""

    mode: str
    task: str | None
    dataset: str
    questions: QuestionsRecord
    answerer: Component
    full_vocab: bool
    images: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)
    """Image QA: the synthesis run answered from (:func:`images_identity`)."""
    device: str = "auto"
    batch_size: int = 16


class QARun(RunKind):
    """Text or image QA as a run kind (see :class:`spatialprobe.runner.RunKind`)."""

    kind = "qa"
    Settings = QARunSettings

    def __init__(self, qa: QASet, answerer, *, dataset: str, mode: str = "text", store=None,
                 full_vocab: bool = False, batch_size: int = 16,
                 source: Mapping[str, Any] | None = None, image_run=None):
        if mode not in ("text", "image") or (mode == "image") != (store is not None):
            raise UsageError(f"QA mode {mode!r} takes {'an' if mode == 'image' else 'no'} image run.")
        if store is not None:
            require("PIL.Image", "qa")
        if mode == "text" and full_vocab:
            raise UsageError("--full-vocab applies to image QA only; text QA answers yes or no.")
        self.qa, self.answerer, self.dataset, self.mode = qa, answerer, dataset, mode
        self.store, self.full_vocab, self.batch_size = store, full_vocab, batch_size
        self.source = dict(source or {"given": qa.name})
        self.by_id = {item.id: item for item in qa.items}
        self.image_run = image_run  # the image run's Completeness (imagestore.open_image_run)
        self.records: list = []
        if store is not None:  # a deleted image file is refused, naming it (never answered past)
            from spatialprobe.imagestore import present_images

            self.records = present_images(store.path, store.records(), False, "answer")[0]
        self.matched = match_images(qa.items, self.records) if store is not None else {}
        if store is not None and not any(self.matched.values()):
            raise UsageError(_no_image_message(store, qa))

    def resolved(self) -> QARunSettings:
        return QARunSettings(
            mode=self.mode, task=self.qa.task, dataset=self.dataset,
            questions=QuestionsRecord(f"{self.qa.name}@{self.qa.version}", self.source),
            answerer=Component(**answerer_settings(self.answerer)), full_vocab=self.full_vocab,
            images=(images_identity(self.store, self.records, self.image_run)
                    if self.store is not None else None),
            device=self.answerer.device, batch_size=self.batch_size)

    def inputs(self) -> dict[str, Any]:
        inputs = {"answerer": model_input("the answerer", str(self.answerer.model_id))}
        if self.source.get("data"):
            inputs["data"] = file_input("the QA data file", self.source["data"])
        return inputs

    def items(self) -> list[Item]:
        if self.store is None:
            return [Item(item.id, item) for item in self.qa.items]
        return [Item(f"{item.id}#{rec.image_index}", (item, rec.path))
                for item in self.qa.items for rec in self.matched[item.id]]

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        from spatialprobe.models.base import GenerateRequest, ScoreRequest
        from spatialprobe.models.qa_models import YES_NO, yes_no

        if self.store is None:
            requests = [ScoreRequest(i.question, "", YES_NO, passage=i.context)
                        for i in (item.payload for item in batch)]
        else:
            from spatialprobe.vision import open_image

            requests = [ScoreRequest(item.question, "", YES_NO, open_image(path))
                        for item, path in (b.payload for b in batch)]
        words = (self.answerer.generate([GenerateRequest(r.prefix, r.image) for r in requests])
                 if self.full_vocab else [None] * len(requests))
        answers = [yes_no(row, word) for word, row in zip(words, self.answerer.score(requests), strict=True)]
        return [{"answer": a.answer, "yes_score": a.yes_score, "no_score": a.no_score} for a in answers]

    def final_answers(self, results: Mapping[str, Any]) -> tuple[dict[str, Answer], dict[str, list[int]]]:
        """Each question's answer (over its images, for image QA) and the images it used."""
        if self.store is None:
            return {i.id: Answer(**results[i.id]) for i in self.qa.items if i.id in results}, {}
        final, used = {}, {}
        for item in self.qa.items:
            records = self.matched[item.id]
            if records:
                final[item.id] = _combine([Answer(**results[f"{item.id}#{r.image_index}"])
                                           for r in records], self.full_vocab)
                used[item.id] = [r.image_index for r in records]
        return final, used

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        final, used = self.final_answers(results)
        objects = {item.id: asked_objects(item.question) for item in self.qa.items}
        known = all(objects.values())
        rows = []
        for item in self.qa.items:
            row = item.to_dict()
            pair = objects[item.id]
            if known and pair is not None:
                row["obj_a"], row["obj_b"] = pair
            row["answered"] = item.id in final
            if item.id in final:
                a = final[item.id]
                row.update(pred=a.answer, yes_score=a.yes_score, no_score=a.no_score,
                           correct=a.answer.lower() == item.answer)
                if self.store is not None:
                    row["images"] = used[item.id]
            rows.append(row)
        metrics, details = qa_metrics(self.qa.items, final)
        details = {"mode": self.mode, "questions": f"{self.qa.name}@{self.qa.version}",
                   "full_vocab": self.full_vocab, **details, "answerer": self._described()}
        if self.image_run is not None:
            details["image_run"] = self.image_run.to_dict()
        return Evaluation(rows, metrics, self.qa.task, str(self.answerer.model_id), self.dataset,
                          None, False, details, (qa_resampling(self.qa.task, known),))

    def _described(self) -> dict[str, Any]:
        describe = getattr(self.answerer, "describe", None)  # a stand-in answerer may have none
        return describe() if callable(describe) else answerer_settings(self.answerer)

    def table(self, summary: Mapping[str, Any]) -> str:
        from spatialprobe.imagestore import Completeness
        from spatialprobe.reports.tables import intervals_line, pm

        d = summary["details"]
        return (Completeness.line(d.get("image_run")) +
                "| mode | task | model | dataset | n | coverage | accuracy | macro-F1 |\n"
                "|---|---|---|---|---|---|---|---|\n"
                f"| {d['mode']} | {summary['task']} | {summary['model']} | {summary['dataset']} | "
                f"{summary['accuracy']['n']} | {d['coverage']:.1%} | {pm(summary['accuracy'])} | "
                f"{pm(summary['macro_f1'])} |\n" + (f"\n{intervals_line(summary)}" if summary.get("intervals") else ""))

    @classmethod
    def from_settings(cls, settings: QARunSettings) -> QARun:
        from spatialprobe.datasets.qa import questions_for

        s, source = settings, settings.questions.source
        store = image_run = None
        if s.mode == "image":
            from spatialprobe.imagestore import open_image_run

            images = s.images or {}
            partial = bool((images.get("completeness") or {}).get("partial"))
            store, image_run = open_image_run(recorded(images, "path", "images"), partial=partial)
        if "given" in source:
            raise UsageError(f"this qa run's questions ({s.questions.set}) were given in memory, "
                             "not read from a task or file: it cannot be replayed from its config.")
        if source.get("images"):
            qa, _ = questions_from_images(store)
        else:
            qa, _ = questions_for(source.get("task"), source.get("data"))
        answerer = build_answerer(s.mode, {"args": s.answerer.args},
                                  {"device": s.device, "batch_size": s.batch_size})
        return cls(qa, answerer, dataset=s.dataset, mode=s.mode, store=store,
                   full_vocab=s.full_vocab, batch_size=s.batch_size, source=source,
                   image_run=image_run)


def run_text_qa(qa: QASet, answerer, out: RunOut, *, dataset: str, batch_size: int = 16,
                progress: Progress | None = None, source: Mapping[str, Any] | None = None
                ) -> dict[str, Any]:
    """Answer every question of ``qa`` with a text answerer (``answer(questions, contexts)``)."""
    return execute(QARun(qa, answerer, dataset=dataset, batch_size=batch_size, source=source),
                   out, progress)


def run_image_qa(qa: QASet, store, answerer, out: RunOut, *, dataset: str, full_vocab: bool = False,
                 batch_size: int = 8, progress: Progress | None = None,
                 source: Mapping[str, Any] | None = None, image_run=None) -> dict[str, Any]:
    """Answer every question from the images ``store`` (an ImageStore, read with
    :func:`~spatialprobe.imagestore.open_image_run`, whose Completeness is ``image_run``) holds
    for its scenario."""
    run = QARun(qa, answerer, dataset=dataset, mode="image", store=store, full_vocab=full_vocab,
                batch_size=batch_size, source=source, image_run=image_run)
    return execute(run, out, progress)


def _no_image_message(store, qa: QASet) -> str:
    records = list(store.images())
    example = f"{records[0].prompt_id}: {records[0].prompt!r}" if records else "none"
    return (f"No image in {store.path} belongs to these questions: its {len(records)} image(s) show "
            f"other scenarios (e.g. {example}) than the questions ask about (e.g. "
            f"{qa.items[0].instance_id}: {qa.items[0].context!r}). Leave out --task/--data to ask "
            f"about the run's own prompts, or pass the dataset its images were synthesized from.")


