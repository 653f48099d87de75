"""The QA run spine: questions -> answerer -> per-question answers -> accuracy / macro-F1 -> files.

A run directory holds ``config.json``, ``run.sqlite`` (table ``qa_answers``: one row per
question and image, written after every batch, so an interrupted run resumes),
``predictions.jsonl``, ``summary.json`` (kind ``qa``) and ``table.md``.

Image QA answers each question from the images a synthesis run made for the question's
scenario: images are matched by ``prompt_id`` = the question's ``instance_id``, or else by the
scenario text. With several images per scenario the yes/no margins are averaged (restricted
answers) or the most frequent answer wins (full vocabulary, ties broken alphabetically).
Questions without an image are left out of the metrics and counted in ``coverage``.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..datasets.corpus_filter import normalize_phrase
from ..datasets.qa import QAItem, QASet
from ..extras import require
from ..store import RunDir, atomic_write_text, register_run, write_json, write_jsonl
from .qa_models import Answer

_TABLE = """CREATE TABLE IF NOT EXISTS qa_answers (
    item_id TEXT NOT NULL, image_index INTEGER NOT NULL, answer TEXT NOT NULL,
    yes_score REAL NOT NULL, no_score REAL NOT NULL, PRIMARY KEY (item_id, image_index))"""


def scores(gold: Sequence[str], pred: Sequence[str]) -> dict[str, float]:
    """Accuracy and macro-F1 over the yes/no classes, in percent (sklearn)."""
    from sklearn.metrics import accuracy_score, f1_score

    if not gold:
        return {"accuracy": float("nan"), "macro_f1": float("nan")}
    return {"accuracy": 100.0 * accuracy_score(gold, pred),
            "macro_f1": 100.0 * f1_score(gold, pred, labels=["yes", "no"], average="macro",
                                         zero_division=0)}


def _cached(run: RunDir) -> dict[tuple[str, int], Answer]:
    with run.db() as conn:
        conn.execute(_TABLE)
        rows = conn.execute("SELECT item_id, image_index, answer, yes_score, no_score FROM qa_answers")
        return {(r[0], r[1]): Answer(r[2], r[3], r[4]) for r in rows.fetchall()}


def _answer_all(run: RunDir, jobs: list[tuple[str, int, Any]], answer_batch: Callable,
                batch_size: int, progress: Callable[[int], None] | None) -> dict[tuple[str, int], Answer]:
    """Answer every (item_id, image_index, payload) not yet in the run's cache."""
    done = _cached(run)
    todo = [job for job in jobs if (job[0], job[1]) not in done]
    if progress:
        progress(len(jobs) - len(todo))
    for start in range(0, len(todo), batch_size):
        batch = todo[start:start + batch_size]
        answers = answer_batch([payload for _, _, payload in batch])
        rows = [(i, k, a.answer, a.yes_score, a.no_score) for (i, k, _), a in zip(batch, answers, strict=True)]
        with run.db() as conn:
            conn.executemany("INSERT OR REPLACE INTO qa_answers VALUES (?, ?, ?, ?, ?)", rows)
        done.update({(i, k): a for (i, k, _), a in zip(batch, answers, strict=True)})
        if progress:
            progress(len(batch))
    return done


def _combine(answers: list[Answer], full_vocab: bool) -> Answer:
    yes = sum(a.yes_score for a in answers) / len(answers)
    no = sum(a.no_score for a in answers) / len(answers)
    if full_vocab:
        counts = Counter(a.answer for a in answers)
        word = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    else:
        word = "yes" if yes >= no else "no"
    return Answer(word, yes, no)


def summarize(items: Sequence[QAItem], final: dict[str, Answer]) -> dict[str, Any]:
    answered = [item for item in items if item.id in final]
    overall = scores([i.answer for i in answered], [final[i.id].answer.lower() for i in answered])
    by_relation: dict[str, dict[str, Any]] = {}
    groups = defaultdict(list)
    for item in answered:
        groups[item.relation or "-"].append(item)
    for relation, group in sorted(groups.items()):
        part = scores([i.answer for i in group], [final[i.id].answer.lower() for i in group])
        by_relation[relation] = {"n": len(group), **{k: round(v, 2) for k, v in part.items()}}
    return {"accuracy": {"mean": overall["accuracy"], "std": None},
            "macro_f1": {"mean": overall["macro_f1"], "std": None},
            "n": len(answered), "n_questions": len(items),
            "coverage": len(answered) / len(items) if items else 0.0,
            "yes_share_pred": (sum(final[i.id].answer.lower() == "yes" for i in answered)
                               / len(answered) if answered else 0.0),
            "by_relation": by_relation}


def _finish(run: RunDir, config: dict, items: Sequence[QAItem], final: dict[str, Answer],
            per_item_images: dict[str, list[int]] | None = None) -> dict[str, Any]:
    rows = []
    for item in items:
        row = item.to_dict()
        if item.id in final:
            a = final[item.id]
            row.update(pred=a.answer, yes_score=a.yes_score, no_score=a.no_score,
                       correct=a.answer.lower() == item.answer)
            if per_item_images is not None:
                row["images"] = per_item_images.get(item.id, [])
        rows.append(row)
    write_jsonl(run.file("predictions.jsonl"), rows)
    summary = {"kind": "qa", "mode": config["mode"], "task": config["task"], "model": config["model"],
               "dataset": config["dataset"], **summarize(items, final)}
    write_json(run.file("summary.json"), summary)
    acc, f1 = summary["accuracy"]["mean"], summary["macro_f1"]["mean"]
    table = ("| mode | task | model | dataset | n | coverage | accuracy | macro-F1 |\n"
             "|---|---|---|---|---|---|---|---|\n"
             f"| {config['mode']} | {config['task']} | {config['model']} | {config['dataset']} | "
             f"{summary['n']} | {summary['coverage']:.1%} | {acc:.1f} | {f1:.1f} |\n")
    atomic_write_text(run.file("table.md"), table)
    register_run(run.path, kind="qa", task=config["task"], model=config["model"],
                 dataset=config["dataset"], accuracy=acc, macro_f1=f1)
    return summary


def _start(out: str | Path, config: dict) -> tuple[RunDir, dict]:
    run = RunDir(out)
    resolved = run.start(config, resume_keys=("mode", "task", "model", "dataset", "questions",
                                              "full_vocab", "answerer", "images"))
    return run, resolved


def run_text_qa(qa: QASet, answerer, out: str | Path, *, dataset: str, batch_size: int = 16,
                progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Answer every question of ``qa`` with a text answerer (``answer(questions, contexts)``)."""
    config = {"kind": "qa", "mode": "text", "task": qa.task, "model": answerer.model_id,
              "dataset": dataset, "questions": f"{qa.name}@{qa.version}", "full_vocab": False,
              "answerer": answerer.describe(), "device": answerer.device, "seed": None,
              "deterministic": True}
    run, config = _start(out, config)
    by_id = {item.id: item for item in qa.items}

    def batch(ids: list[str]) -> list[Answer]:
        return answerer.answer([by_id[i].question for i in ids], [by_id[i].context for i in ids])

    jobs = [(item.id, -1, item.id) for item in qa.items]
    done = _answer_all(run, jobs, batch, batch_size, progress)
    final = {item_id: answer for (item_id, _), answer in done.items() if item_id in by_id}
    return _finish(run, config, qa.items, final)


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
    from ..datasets.qa import build_qa
    from ..datasets.scale import content_version
    from ..records import HEIGHT_LABELS, POSREL_LABELS, SIZE_LABELS, Dataset, Instance

    labels = {"size": SIZE_LABELS, "height": HEIGHT_LABELS, "posrel": POSREL_LABELS}
    instances = [Instance.from_dict(p.meta) for p in store.prompts()
                 if p.meta.get("task") in labels and {"id", "obj_a", "obj_b", "label"} <= set(p.meta)]
    tasks = {inst.task for inst in instances}
    if len(tasks) != 1:
        raise ValueError(f"{store.path}: its prompts are not the instances of one size, height or "
                         f"posrel dataset (tasks found: {sorted(tasks) or 'none'}); pass --task or --data.")
    task = tasks.pop()
    config = store.run.config() or {}
    label = str(config.get("prompts") or Path(store.path).name)
    name = label.split("@")[0]
    inst = tuple(instances)
    dataset = Dataset(name, content_version(name, inst), task, labels[task], inst)
    return build_qa(dataset), label


def run_image_qa(qa: QASet, store, answerer, out: str | Path, *, dataset: str, full_vocab: bool = False,
                 batch_size: int = 8, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Answer every question from the images ``store`` (an ImageStore) holds for its scenario."""
    Image = require("PIL.Image", "qa")
    records = list(store.images())
    matched = match_images(qa.items, records)
    if not any(matched.values()):
        example = f"{records[0].prompt_id}: {records[0].prompt!r}" if records else "none"
        raise ValueError(
            f"No image in {store.path} belongs to these questions: its {len(records)} image(s) show "
            f"other scenarios (e.g. {example}) than the questions ask about (e.g. "
            f"{qa.items[0].instance_id}: {qa.items[0].context!r}). Leave out --task/--data to ask "
            f"about the run's own prompts, or pass the dataset its images were synthesized from.")
    config = {"kind": "qa", "mode": "image", "task": qa.task, "model": answerer.model_id,
              "dataset": dataset, "questions": f"{qa.name}@{qa.version}", "full_vocab": full_vocab,
              "images": str(Path(store.path).resolve()),
              "answerer": {"name": answerer.name, "model": answerer.model_id},
              "device": answerer.device,
              "seed": None, "deterministic": True}
    run, config = _start(out, config)
    by_id = {item.id: item for item in qa.items}
    jobs = [(item.id, rec.image_index, (item.id, rec.path))
            for item in qa.items for rec in matched[item.id]]

    def batch(payloads: list[tuple[str, Path]]) -> list[Answer]:
        images = [Image.open(path).convert("RGB") for _, path in payloads]
        return answerer.answer(images, [by_id[i].question for i, _ in payloads], full_vocab=full_vocab)

    done = _answer_all(run, jobs, batch, batch_size, progress)
    final, used = {}, {}
    for item in qa.items:
        answers = [done[(item.id, rec.image_index)] for rec in matched[item.id]
                   if (item.id, rec.image_index) in done]
        if answers:
            final[item.id] = _combine(answers, full_vocab)
            used[item.id] = [rec.image_index for rec in matched[item.id]]
    return _finish(run, config, qa.items, final, used)


def read_summary(out: str | Path) -> dict[str, Any]:
    return json.loads((Path(out) / "summary.json").read_text(encoding="utf-8"))
