"""Yes/no questions about the scenarios of a task (``qa text``), or about the images a synthesis
run drew for them (``qa image``: every image of a scenario is asked, the answers voted over, see
:func:`spatialprobe.benchmarks.base.vote`; a migrated ``--full-vocab`` run of the retired qa kind
combines its replies by :func:`word_vote`, as that kind did).

Wordings: ``question`` (context and question with "Answer yes or no.", replies ``Yes``/``No``:
chat models) and ``short`` (the bare question, the scenario as its passage for text QA, answer
words ``yes``/``no``: T5/UnifiedQA and the VQA classifiers). Resampled by the objects its
questions were built from (both objects of a size/height pair; the object of a posrel scenario),
or by scenario where a question names none; official metrics: accuracy and macro-F1, broken down
per relation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, Wording, vote
from spatialprobe.errors import DataError, UsageError
from spatialprobe.generalize.corpus_filter import normalize_phrase
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component
from spatialprobe.tasks.yes_no import QAItem, QASet

QUESTION = "{text} Answer yes or no."
OFFICIAL = (Official({"accuracy": "accuracy", "macro_f1": "macro_f1"}, ("relation",)),)


def _images(path: str, partial: bool, vote: bool) -> tuple[Any, dict[str, Any]]:
    """The image run and its records, and how the run records it: path, completeness and (``vote``:
    the runs that ask every image) a hash of the image files, so another run's images in the same
    folder are another identity."""
    import hashlib

    from spatialprobe.imagestore import open_image_run, present_images

    store, completeness = open_image_run(path, partial=partial)
    records = present_images(store.path, store.records(), False, "answer")[0]
    recorded: dict[str, Any] = {"path": str(Path(path).resolve()), "completeness": completeness.to_dict()}
    if vote:
        digest = hashlib.sha256()
        for rec in records:
            digest.update(f"{rec.prompt_id}\t{rec.image_index}\t".encode())
            digest.update(hashlib.sha256(rec.path.read_bytes()).digest())
        recorded["content"] = f"sha256:{digest.hexdigest()}"
    return (store, records), recorded


def qa_source(task: str | None, data: str | None, images: str | None = None,
              partial: bool = False, vote: bool = True, words: bool = False) -> tuple[Source, dict[str, Any]]:
    """The questions of a task or file, or of the instances a synthesis run drew, each with every
    image of its scenario (``images``; ``vote`` False: its first image only, as ask runs before
    the sources recorded no ``vote``; ``words``: generated replies combined by :func:`word_vote`,
    as the retired qa kind's ``--full-vocab`` runs combined them, which migrate to it)."""
    from spatialprobe import tasks
    from spatialprobe.tasks.yes_no import asked_objects, questions_for

    settings: dict[str, Any] = {"name": "qa", "task": task, "data": data, "images": None}
    matched: dict[str, list[str]] = {}
    if images is not None:
        (store, records), settings["images"] = _images(images, partial, vote)
        if vote:
            settings["vote"] = "words" if words else True
        qa, label = questions_from_images(store) if task is None and data is None else questions_for(task, data)
        matched = {k: [str(r.path) for r in v] for k, v in match_images(qa.items, records).items()}
    else:
        qa, label = questions_for(task, data)
    objects = {item.id: asked_objects(item.question) for item in qa.items}
    known = all(objects.values()) and qa.task in tasks.names()
    items = []
    for item in qa.items:
        pictured = matched.get(item.id, [])
        if images is not None and not pictured:
            continue
        fields: dict[str, Any] = {"instance": item.instance_id, "relation": item.relation or "-",
                                  "context": item.context}
        if known:
            fields["obj_a"], fields["obj_b"] = objects[item.id]  # type: ignore[misc]
        short = Wording(item.question, ("yes", "no"), ("yes", "no"), passage=item.context if images is None else "")
        items.append(SourceItem(item.id, QUESTION.format(text=item.full_text), ("Yes", "No"), ("yes", "no"),
                                item.answer, pictured[0] if pictured else None, (item.instance_id,), fields,
                                {"short": short}, images=tuple(pictured[1:]) if vote else ()))
    if images is not None and not items:
        raise DataError(images, None, None, "holds no image of these questions' scenarios; leave out "
                        "--task/--data to ask about the run's own prompts, or pass the dataset its images "
                        "were synthesized from")
    clusters = tasks.get(qa.task).object_fields if known else ("instance",)
    spec = Resampling(("yes", "no"), clusters, key=("instance_id",), pooled=True,
                      unit=None if known else "scenarios")
    source = Source("qa", str(qa.task), label, ("yes", "no"), tuple(items), spec, official=OFFICIAL,
                    combine=word_vote if images is not None and vote and words else None,
                    settings=settings, details={"total": len(qa.items), "n_questions": len(qa.items),
                             "mode": "text" if images is None else "image",
                             **({"image_run": settings["images"]["completeness"]} if images else {}),
                             "questions": f"{qa.name}@{qa.version}"})
    return source, settings


def word_vote(replies: Sequence[str], labels: Sequence[str]) -> str | None:
    """The most frequent of a question's replies about its scenario's images, any word counted (ties:
    the first in alphabetical order), as the label it is in lower case, else None (wrong): how the
    retired qa kind's ``--full-vocab`` answered, so ``two, yes`` is ``two`` (wrong) where the vote
    over replies parsed to yes or no is ``yes``."""
    word = (vote(replies, None, (), ()) or "").lower()  # the most frequent reply, ties alphabetical
    return word if word in labels else None


def _scenario(record) -> str:
    return normalize_phrase(str(record.meta.get("text") or record.prompt))


def match_images(items: Iterable[QAItem], records) -> dict[str, list]:
    """Images of each question's scenario: by prompt_id = instance id, else by scenario text.

    Instance ids repeat across datasets (``posrel-0000`` is a different scenario in the
    built-in set, the release file and a generalized file), so a prompt_id match counts only
    when the image's scenario text is the question's context too (or the question has none).
    """
    by_prompt, by_text = defaultdict(list), defaultdict(list)
    for record in records:
        by_prompt[record.prompt_id].append(record)
        by_text[_scenario(record)].append(record)
    matched = {}
    for item in items:
        context = normalize_phrase(item.context)
        same = [r for r in by_prompt.get(item.instance_id, []) if not context or _scenario(r) == context]
        matched[item.id] = same or (by_text.get(context, []) if context else [])
    return matched


def questions_from_images(store) -> tuple[QASet, str]:
    """The question set of the dataset instances a synthesis run drew (its prompts' metadata).

    Returns the questions and the run's dataset label (``name@version`` from its config).
    """
    from spatialprobe import tasks as registered
    from spatialprobe.records import Dataset, Instance
    from spatialprobe.tasks.levels import content_version
    from spatialprobe.tasks.yes_no import build_qa

    labels = {name: registered.labels_of(name) for name in registered.names()}
    instances = [Instance.from_dict(p.meta) for p in store.prompts()
                 if p.meta.get("task") in labels and {"id", "obj_a", "obj_b", "label"} <= set(p.meta)]
    tasks = {inst.task for inst in instances}
    if len(tasks) != 1:
        raise UsageError(f"{store.path}: its prompts are not the instances of one task's dataset "
                         f"(tasks found: {sorted(tasks) or 'none'}); pass --task or --data.")
    task = tasks.pop()
    config = store.run.config() or {}
    label = str(config.get("prompts") or Path(store.path).name)
    name = label.split("@")[0]
    inst = tuple(instances)
    dataset = Dataset(name, content_version(name, inst), task, labels[task], inst)
    return build_qa(dataset), label


@component("source", "qa", "yes/no QA about scenarios, text or their images")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of a run's recorded ``source`` settings."""
    images = settings.get("images") or None
    partial = bool(((images or {}).get("completeness") or {}).get("partial"))
    vote = settings.get("vote", False)
    return qa_source(settings.get("task"), settings.get("data"), images and images["path"], partial,
                     bool(vote), vote == "words")[0]
