"""VISOR read by the VQA judge (``spatialprobe visor RUN --rule vqa --judge-model M``): run kind
``vqa-visor``.

VISOR's numbers, with a multimodal LLM in place of the detector and the centroid rule. For each
image of a spatial SR2D prompt (A REL B) the judge is asked three questions (the built-in
templates of :mod:`.vqa_questions`): ``Is there a A in the image?``, ``Is there a B in the
image?`` and the claim ``Is the A REL the B?``. An object counts as detected where the hard
answer (the most probable token) is yes; the relation holds where the claim's hard answer is
yes. :func:`spatialprobe.judging.visor_metrics.image_outcome` then scores the image as VISOR does (correct
= both objects and the relation), so OA, VISOR, VISOR_cond, VISOR_n and the object accuracies
are computed by the same code as with a detector; the table adds the judge's yes-rate over the
three questions of every image (a judge that answers yes to everything scores 100). Each row
keeps the three questions, their hard answers and Soft-TIFA probabilities (yes normalised over yes and no).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from spatialprobe.errors import UsageError
from spatialprobe.judging import visor_metrics as V
from spatialprobe.judging import vqa_questions as Q
from spatialprobe.judging.visor import VisorRun
from spatialprobe.judging.vqa import answer_tokens, build_judge
from spatialprobe.registry import Spec
from spatialprobe.runner import Evaluation, Item
from spatialprobe.runner.settings import Component, model
from spatialprobe.store import RunDir
from spatialprobe.tasks.sr2d import SR2D_RELATIONS


def visor_questions() -> dict[str, Any]:
    """The built-in questions of SR2D's four relations, the object question, suffix and answers."""
    data = Q.builtin()
    return {"questions": Q.templates_for(SR2D_RELATIONS), "object_question": data["object"],
            "suffix": data["suffix"], "answers": {k: list(v) for k, v in data["answers"].items()}}


@dataclass(frozen=True)
class VqaVisorSettings:
    """What a ``vqa-visor`` run's ``config.json`` records."""

    source: dict[str, Any]
    """``{"image_run": ...}`` (:func:`judged_images.image_run_source`)."""
    prompts: dict[str, str] | None
    """The SR2D prompt file (``file_version``; a command gives its ``path``), if one was given."""
    judge: Component = field(metadata=model("the judge model", "judge_model"))
    questions: dict[str, str] | None = None
    """The built-in questions (:func:`visor_questions`; None: those)."""
    object_question: str | None = None
    suffix: str | None = None
    answers: dict[str, list[str]] | None = None
    skip_missing: bool = False
    device: str = "auto"
    batch_size: int = 8


class VqaVisorRun(VisorRun):
    """VISOR with a multimodal LLM judge (see the module docstring)."""

    kind = "vqa-visor"
    Settings = VqaVisorSettings  # type: ignore[assignment]

    def __init__(self, settings: VqaVisorSettings):
        self.asked = visor_questions()
        given = {k: getattr(settings, k) for k in self.asked}
        if settings.questions is not None and given != self.asked:
            raise UsageError("this run's questions or answer words differ from the built-in ones "
                             "(spatialprobe/data/vqa_questions.json); it cannot be replayed as it was.")
        super().__init__(settings)  # type: ignore[arg-type]
        self.tokens = answer_tokens(self.detector, self.reader_spec(), self.asked["answers"])
        self.settings = replace(self.settings, **self.asked)

    def reader_spec(self) -> Spec:
        return Spec(self.settings.judge.name, self.settings.judge.args)

    def _reader(self, detector: Spec) -> Any:
        return build_judge(detector, self.device, self.batch_size)

    def questions(self, prompt: Mapping[str, Any]) -> list[str]:
        """Object A present?, object B present?, A REL B?"""
        a, b, asked = prompt["obj_1_attributes"][0], prompt["obj_2_attributes"][0], self.asked
        return [Q.object_question(asked["object_question"], a, asked["suffix"]),
                Q.object_question(asked["object_question"], b, asked["suffix"]),
                Q.claim_question(asked["questions"][prompt["rel_type"]], a, b, asked["suffix"])]

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        assert self.store is not None
        asked = [self.questions(item.payload[0]) for item in batch]
        images = [item.payload[1].path for item in batch for _ in range(3)]
        flat = Q.answer_masses(self.detector, [q for qs in asked for q in qs], images, self.tokens)
        out = []
        for n, item in enumerate(batch):
            prompt, rec = item.payload
            answers = flat[3 * n:3 * n + 3]
            names = (prompt["obj_1_attributes"][0], prompt["obj_2_attributes"][0])
            found = [name for name, (_, _, top) in zip(names, answers[:2], strict=True) if top == "yes"]
            out.append({**V.image_outcome(prompt, found, None, sra=answers[2][2] == "yes"),
                        "image": str(rec.path.relative_to(self.store.path)), "text": prompt["text"],
                        "questions": asked[n], "answers": [top for _, _, top in answers],
                        "yes_probability": [Q.yes_probability(y, no) for y, no, _ in answers],
                        "yes_mass": [y for y, _, _ in answers]})
        return out

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        evaluation = super().evaluate(results)
        details = evaluation.details
        details.update({"method": "VISOR (VQA judge)", "judge": details.pop("detector"),
                        "questions": {"object": self.asked["object_question"], **self.asked["questions"]},
                        "suffix": self.asked["suffix"], "answer_tokens": self.tokens.pieces,
                        "yes_rate": Q.yes_rate([a for row in evaluation.predictions for a in row["answers"]])})
        return evaluation

    def table(self, summary: Mapping[str, Any]) -> str:
        """VISOR's table and the judge's yes-rate over every question asked (objects and claims)."""
        return super().table(summary) + Q.yes_rate_line(summary["details"].get("yes_rate"), False)

    def write_extras(self, run: RunDir, summary: Mapping[str, Any], evaluation: Evaluation) -> None:
        """Nothing: no boxes were detected (the rows hold each question's answer)."""
