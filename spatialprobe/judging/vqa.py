"""The VQA judge as a run kind (``vqa-judge``): a multimodal LLM asked whether each image shows its
prompt's relation, read as Soft-TIFA reads it.

``spatialprobe judge TASK RUN --rule vqa --judge-model M`` routes here. Items are the image run's
finished images of the task (key ``prompt_id#image_index``, as the box judge keys them). Each
image's prompt makes one claim (A is ``label`` B); the judge asks it (``Is the man above the bus?
Answer yes or no.``, :mod:`.vqa_questions`) through the ``hf-mllm`` adapter and reads the next
token's distribution:

* **soft** (Soft-TIFA, GenEval 2): the probability mass on yes, normalised over yes and no
  (``yes_probability``; ``soft_score`` = 100 x it), and GenEval 2's unnormalised mass on yes
  (``yes_mass``);
* **hard** (TIFA, as GenEval 2's ``tifa`` reads it): the most probable token; ``yes`` or ``no``
  where it is one of their tokens, else no answer (``recognized`` false, the claim not affirmed).

The judge is asked the claim only, so a judge that answers yes to everything scores 100: the
table shows the judge's yes-rate (``details.yes_rate``) beside the scores.

Metrics (percent): ``accuracy`` = images whose claim the judge affirms (hard), ``soft_tifa`` =
mean soft score, ``geneval2_soft_tifa`` = mean unnormalised mass, ``answered_ratio``; each with a
95 % interval resampled by the prompts' objects as the box judge's, and per relation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from spatialprobe import tasks
from spatialprobe.errors import UsageError
from spatialprobe.extras import require
from spatialprobe.imagestore import Completeness, missing_record
from spatialprobe.judging import vqa_floor as floor
from spatialprobe.judging import vqa_questions as Q
from spatialprobe.judging.box import TASK_LABELS
from spatialprobe.judging.judged_images import image_key, image_run, image_run_source, judged_task_images, source_info
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import Spec
from spatialprobe.runner import Evaluation, Item, RunKind, execute
from spatialprobe.runner.components import component
from spatialprobe.runner.settings import OPTIONAL, Component, model

METRICS = {"accuracy": "correct", "soft_tifa": "soft_score", "geneval2_soft_tifa": "yes_mass_score",
           "answered_ratio": "recognized"}
"""Each metric and the row field it averages (percent)."""


@dataclass(frozen=True)
class VqaJudgeSettings:
    """What a VQA judge run's ``config.json`` records (see ``RunKind``)."""

    task: str
    source: dict[str, Any]
    """The image run judged (:func:`judged_images.image_run_source`)."""
    judge: Component = field(metadata=model("the judge model", "judge_model"))
    """The multimodal LLM (``hf-mllm`` and its arguments: ``model``, ``precision``, ...)."""
    questions: dict[str, str] | None = None
    """The question template of each of the task's labels (None: the built-in ones)."""
    suffix: str | None = None
    answers: dict[str, list[str]] | None = None
    """The answer words' variants whose tokens count (``yes``, ``no``)."""
    skip_missing: bool = False
    device: str = "auto"
    batch_size: int = 8
    floor: bool | None = field(default=None, metadata=OPTIONAL)
    """Also ask every claim with a blank image and with none: the judge's blind floor (:mod:`.vqa_floor`)."""
    contrast: bool | None = field(default=None, metadata=OPTIONAL)
    """Also ask every image the opposite claim, so a yes-sayer scores 50 (:mod:`.vqa_floor`)."""


def vqa_settings(task: str) -> dict[str, Any]:
    """The built-in questions of ``task``'s labels, suffix and answer variants."""
    if task not in TASK_LABELS:
        raise UsageError(f"Unknown task {task!r}; choose from {sorted(TASK_LABELS)}.")
    data = Q.builtin()
    return {"questions": Q.templates_for(TASK_LABELS[task]), "suffix": data["suffix"],
            "answers": {k: list(v) for k, v in data["answers"].items()}}


def build_judge(judge: Spec, device: str, batch_size: int):
    """The adapter of ``judge``, one that ``judges_images`` (the device and batch size are runtime)."""
    from spatialprobe.models.choice import judge_adapter

    if judge.name != judge_adapter():
        raise UsageError(f"the VQA judge runs a multimodal LLM through {judge_adapter()}, not {judge.name!r}.")
    # under --ray a stand-in: the model is loaded on the cluster, never by the driver
    return component("model", Spec(judge.name, {**judge.args, "device": device, "batch_size": batch_size}))


def answer_tokens(adapter: Any, judge: Spec, answers: Mapping[str, Any]) -> Q.AnswerTokens:
    """The answer words' tokens, from the judge's tokenizer. Under ``--ray`` the adapter is a
    stand-in the driver must not load (the model lives on the workers): its processor alone,
    a few files, is loaded here instead."""
    from spatialprobe.runner.components import Deferred

    if not isinstance(adapter, Deferred):
        return Q.AnswerTokens.of(adapter.tokenizer, answers)
    from transformers import AutoProcessor

    from spatialprobe.models.mllm import _load_processor

    processor = _load_processor(AutoProcessor, str(judge.args["model"]))
    return Q.AnswerTokens.of(getattr(processor, "tokenizer", processor), answers)


class VqaJudgeRun(RunKind):
    """The VQA judge as a run kind (see :class:`spatialprobe.runner.RunKind`)."""

    kind = "vqa-judge"
    Settings = VqaJudgeSettings

    def __init__(self, settings: VqaJudgeSettings, adapter: Any = None):
        require("PIL.Image", "judge")
        s, self.asked, self.batch_size = settings, vqa_settings(settings.task), settings.batch_size
        given = {"questions": s.questions, "suffix": s.suffix, "answers": s.answers}
        if s.questions is not None and given != self.asked:
            raise UsageError("this run's questions or answer words differ from the built-in ones "
                             "(spatialprobe/data/vqa_questions.json); it cannot be replayed as it was.")
        self.store, self.completeness, self.images, self.missing, self.unscorable = judged_task_images(
            s.source, s.task, s.skip_missing)
        self.variants = floor.variants(s.floor, s.contrast)
        if s.contrast:
            floor.check_contrast([rec.meta["label"] for rec in self.images])
        judge = Spec(s.judge.name, s.judge.args)
        self.adapter = adapter or build_judge(judge, s.device, s.batch_size)
        self.tokens = answer_tokens(self.adapter, judge, self.asked["answers"])
        self.settings = replace(s, source=image_run_source(self.store, self.images, self.completeness), **self.asked)

    def items(self) -> list[Item]:
        return ([Item(image_key(rec), ("claim", rec)) for rec in self.images]
                + [Item(f"{v}/{image_key(rec)}", (v, rec)) for v in self.variants for rec in self.images])

    def question(self, meta: Mapping[str, Any], label: str | None = None) -> str:
        template = self.asked["questions"][label or meta["label"]]
        return Q.claim_question(template, meta["obj_a"], meta["obj_b"], self.asked["suffix"])

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        for variant in dict.fromkeys(item.payload[0] for item in batch):  # one kind of image per call
            which = [n for n, item in enumerate(batch) if item.payload[0] == variant]
            records = [batch[n].payload[1] for n in which]
            questions = [self.question(r.meta, floor.OPPOSITE[r.meta["label"]] if variant == "contrast" else None)
                         for r in records]
            images = [floor.image_for(variant, r.path) for r in records]
            masses = Q.answer_masses(self.adapter, questions, images, self.tokens)
            out.update({n: {"question": q, **answer_row(yes, no, top)}
                        for n, q, (yes, no, top) in zip(which, questions, masses, strict=True)})
        return [out[n] for n in range(len(batch))]

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        rows = [vqa_row(rec, results[image_key(rec)], self.store) for rec in self.images]
        for row, rec in zip(rows, self.images, strict=True):
            for variant in self.variants:
                row.update(floor.fields(variant, results[f"{variant}/{image_key(rec)}"], row))
        described = self.adapter.describe()
        details: dict[str, Any] = {
            "method": "VQA judge (Soft-TIFA)", "source": str(self.store.path.resolve()), "judge": described,
            "questions": self.asked["questions"], "suffix": self.asked["suffix"],
            "answer_tokens": self.tokens.pieces, "image_run": self.completeness.to_dict(),
            "yes_rate": Q.yes_rate([row["answer"] for row in rows])}
        if self.variants:
            details["asked_also"] = list(self.variants)
        if self.missing:
            details["missing_images"] = missing_record(self.store, self.missing, len(self.images))
        info = source_info(self.store, self.images)
        specs = vqa_resampling(self.task)
        # every metric is declared in vqa_resampling: the spine computes it from the registry
        return Evaluation(rows, {}, self.task, info["model"], info["dataset"], None,
                          "untrained" in str(described.get("model", "")).lower(), details,
                          (*specs, *floor.resamplings(specs[0], self.variants)))

    def table(self, summary: Mapping[str, Any]) -> str:
        return (Completeness.line(summary["details"].get("image_run")) + table_markdown(summary)
                + floor.table_lines(summary["metrics"]))


def answer_row(yes: float, no: float, top: str | None) -> dict[str, Any]:
    """One answer: the masses, the normalised yes probability and the hard answer (``top``: the
    most probable token's answer word, or None where it is neither)."""
    return {"yes_mass": yes, "no_mass": no, "yes_probability": Q.yes_probability(yes, no), "answer": top}


def vqa_row(rec, result: Mapping[str, Any], store) -> dict[str, Any]:
    """A prediction row with the judge run's fields: the claim is the prompt's relation (gold);
    ``pred`` is it where the judge affirms it, else ``not <relation>``."""
    gold, affirmed = rec.meta["label"], result["answer"] == "yes"
    return {"instance_id": rec.prompt_id, "image_index": rec.image_index,
            "image": str(rec.path.relative_to(store.path)), "obj_a": rec.meta["obj_a"],
            "obj_b": rec.meta["obj_b"], "gold": gold, "pred": gold if affirmed else f"not {gold}",
            "recognized": result["answer"] is not None, "correct": affirmed, **result,
            "soft_score": 100.0 * result["yes_probability"], "yes_mass_score": 100.0 * result["yes_mass"]}


def vqa_resampling(task: str) -> tuple[Resampling, ...]:
    """Resampled by the prompts' objects (as the box judge's), pooled, per relation."""
    base = Resampling((), tasks.get(task).object_fields, group="gold", pooled=True,
                      key=("instance_id", "image_index"), pred="correct", metrics={"accuracy": "share"})
    return (base, replace(base, pred="recognized", metrics={"answered_ratio": "share"}),
            replace(base, pred="soft_score", metrics={"soft_tifa": "mean"}),
            replace(base, pred="yes_mass_score", metrics={"geneval2_soft_tifa": "mean"}))


def table_markdown(summary: Mapping[str, Any]) -> str:
    from spatialprobe.reports.tables import intervals_line, pm

    m, judge = summary["metrics"], summary["details"]["judge"]
    title = f"# VQA judge (Soft-TIFA): {summary['task']} - {summary['model']}\n\nJudge: {judge.get('model')}"
    names = ("accuracy", "soft_tifa", "geneval2_soft_tifa", "answered_ratio")
    head = ("| relation | images | claim affirmed (hard, %) | Soft-TIFA (%) | GenEval 2 mass on yes (%) "
            "| answered yes/no (%) |\n|---|---:|---:|---:|---:|---:|\n")
    lines = [f"| all | {m['accuracy']['n']} | " + " | ".join(pm(m[k]) for k in names) + " |"]
    for rel, part in m["accuracy"].get("breakdown", {}).items():
        lines.append(f"| {rel} | {part['n']} | " + " | ".join(pm(m[k]["breakdown"][rel]) for k in names) + " |")
    note = intervals_line(summary)
    return (f"{title}\n\n{head}" + "\n".join(lines) + "\n" + Q.yes_rate_line(summary["details"].get("yes_rate"), True)
            + (f"\n{note}\n" if note else ""))


def vqa_judge_run(source: str, out: str, task: str, judge: Spec, partial: bool = False,
                  **options: Any) -> dict[str, Any]:
    """Judge every image of ``task`` in the image store ``source`` with a multimodal LLM
    (``options``: the other fields of :class:`VqaJudgeSettings`)."""
    return execute(VqaJudgeRun(VqaJudgeSettings(task, image_run(source, partial), Component.of(judge), **options)), out)
