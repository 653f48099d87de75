"""SpatialGenEval (AMAP-ML/SpatialGenEval): 1,230 long text-to-image prompts, each with ten
multiple-choice questions about the generated image (``eval/SpatialGenEval_T2I_Prompts.jsonl``:
``id, scene, prompt, question_type[10], questions[10], answers[10]``; each question lists its
options ``Options: A: …, B: …, E: None``), answered by a multimodal LLM judge.

``--data`` is that file; ``--images`` the images: a JSON ``{prompt: image path}`` or a
``spatialprobe synthesize`` run of its prompts (:mod:`spatialprobe.benchmarks.prompt_images`). Each
question is an item (its options lettered, the judge asked for the letter, by likelihood or
generation); labels are the option letters, gold the answer's.

Official scoring (``scripts/spatialgeneval_stage2_acc.py`` @8b294b5): the judge answers each
image five times (sampled) and a question is right where the gold option is chosen at least four
times (``check_qa_model_preds``, ``--min_count 4``); ``avg_acc`` is the mean of the ten question
columns, ``basic_acc`` of the first two (object, attribute), ``spatial_acc`` of the other eight.
The engine's judge decodes greedily, so its five answers would be one answer repeated: the vote
is right exactly where that answer is (the test checks this against the transcribed function).
Every prompt has ten questions, so ``avg_acc`` is the accuracy over all rows and ``basic_acc`` /
``spatial_acc`` the accuracy over their rows (the breakdown ``part basic`` / ``part spatial``),
also broken down per question type; resampled by prompt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks import base
from spatialprobe.benchmarks.base import Official, Source, SourceItem
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {}
"""SpatialGenEval has no options of its own."""
OFFICIAL = (Official({"accuracy": "accuracy"}, ("part", "question_type")),)
QUESTION = "{question}\nAnswer with the option's letter."
_OPTION = re.compile(r"([A-H]): (.*?)(?=,\s*[A-H]: |$)")


def options_of(question: str) -> tuple[str, tuple[str, ...]]:
    """(the question before ``Options:``, its option texts in letter order)."""
    head, sep, listed = question.partition("Options:")
    if not sep:
        return question.strip(), ()
    found = _OPTION.findall(listed.strip())
    if [letter for letter, _ in found] != [chr(65 + n) for n in range(len(found))]:
        return head.strip(), ()
    return head.strip(), tuple(text.strip() for _, text in found)


def spatialgeneval_source(found: Mapping[str, Any]) -> Source:
    """Every question of the prompts that have images (:func:`base.given`)."""
    from spatialprobe.benchmarks.local_copy import options_text, read_records
    from spatialprobe.benchmarks.prompt_images import images_by_prompt

    if found.get("split") or found.get("subset") or found["options"]:
        raise UsageError("--split, --subset and --option do not apply to spatialgeneval.")
    if not found.get("data"):
        raise UsageError("spatialgeneval reads your copy of SpatialGenEval_T2I_Prompts.jsonl: pass --data.")
    records = read_records(found["data"])
    images, recorded_images = images_by_prompt(found.get("images"), "spatialgeneval")
    items, without = [], 0
    for n in range(min(len(records.rows), found.get("limit") or len(records.rows))):
        prompt = str(records.require(n, "prompt")).strip()
        questions, answers = records.listed(n, "questions"), records.listed(n, "answers")
        kinds = records.listed(n, "question_type") if records.rows[n].get("question_type") else [""] * len(questions)
        if not len(questions) == len(answers) == len(kinds):
            raise records.error(n, "answers", f"{len(questions)} questions, {len(answers)} answers, "
                                f"{len(kinds)} question types")
        if prompt not in images:
            without += 1
            continue
        key = str(records.rows[n].get("id") or n)
        for j, (question, answer, kind) in enumerate(zip(questions, answers, kinds, strict=True)):
            head, choices = options_of(str(question))
            if len(choices) < 2:
                raise records.error(n, "questions", f"question {j + 1} lists no lettered options (A: …, B: …)")
            letters = tuple(chr(65 + i) for i in range(len(choices)))
            if str(answer).strip() not in letters:
                raise records.error(n, "answers", f"answer {j + 1} {answer!r:.60} is none of {', '.join(letters)}")
            fields = {"prompt": key, "question_type": str(kind), "part": "basic" if j < 2 else "spatial",
                      "column": j + 1, "scene": str(records.rows[n].get("scene") or "")}
            text = QUESTION.format(question=f"{head}\n{options_text(choices)}")
            items.append(SourceItem(f"{key}.{j + 1}", text, choices, letters, str(answer).strip(), images[prompt][0],
                                    (key,), fields, images=tuple(images[prompt][1:])))
    if not items:
        raise UsageError(f"{found['data']}: no prompt has an image in --images")
    spec = Resampling(tuple(chr(65 + i) for i in range(8)), ("prompt",), key=("instance_id",), pooled=True,
                      unit="prompts")
    settings = base.recorded("spatialgeneval", found, str(found["data"]), records.version, image_set=recorded_images)
    return Source("spatialgeneval", "spatialgeneval", f"spatialgeneval@{records.version}", spec.labels, tuple(items),
                  spec, official=OFFICIAL, settings=settings,
                  details={"total": len(items), "what": "questions", "prompts_without_images": without})


@component("source", "spatialgeneval",
           "SpatialGenEval's ten multiple-choice questions per generated image, by a multimodal LLM judge")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of ``spatialprobe bench spatialgeneval`` settings or of a run's recorded ones."""
    return spatialgeneval_source(base.given(settings))


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in SpatialGenEval's layout (:mod:`spatialprobe.benchmarks.demo_copy`):
    ``SpatialGenEval_T2I_Prompts.jsonl`` (ten lettered questions per prompt) and drawn "generated"
    images named by a JSON ``{prompt: path}``."""
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng, rows, images = random.Random(seed), [], {}
    kinds = ["Object", "Attribute", "Position", "Orientation", "Layout", "Comparison", "Proximity", "Occlusion",
             "Motion", "Causal"]
    for k in range(5):
        scene = d.pair(rng)
        prompt = f"a {scene.a} {d.RELATIONS[scene.relation]} a {scene.b}, scene {k}"
        images[prompt] = str(Path(d.save(d.draw(scene), folder / "images" / f"{k}.png")).relative_to(folder))
        questions, answers = [], []
        for j in range(10):
            order = rng.sample([*d.RELATIONS, "None"], 5)
            questions.append(f"Question {j + 1}: where is the {scene.a} relative to the {scene.b}?  Options: "
                             + ", ".join(f"{'ABCDE'[i]}: {t}" for i, t in enumerate(order)))
            answers.append("ABCDE"[order.index(scene.relation)])
        rows.append({"id": f"{k:06d}", "scene": "Demo", "prompt": prompt, "question_type": kinds,
                     "questions": questions, "answers": answers})
    d.write_json(folder / "images.json", images)
    return d.Demo(d.write_jsonl(folder / "SpatialGenEval_T2I_Prompts.jsonl", rows), images=folder / "images.json")
