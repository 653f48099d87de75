"""Export a dataset as an lm-evaluation-harness task: a YAML config beside its JSON lines docs.

``export_lm_eval(dataset, out_dir)`` writes ``spatialprobe_NAME.yaml`` and ``spatialprobe_NAME.jsonl``
into ``out_dir``; ``lm_eval --include_path OUT_DIR --tasks spatialprobe_NAME`` then runs it unchanged,
and ``--tasks spatialprobe`` (a tag every exported task carries) runs all the folder holds.
Each JSON line is one instance with the three fields lm-eval reads (``context``, ``choices``,
``gold``) next to our own (``id``, ``obj_a``, ``obj_b``, ``label``), so the YAML needs no templates.

Two formulations (``style``), both ``output_type: multiple_choice``, where lm-eval scores each
choice as the continuation of the context (it puts one space between them) and reports ``acc``
(summed log-likelihood) and ``acc_norm`` (log-likelihood per character of the choice):

``cloze`` (default)
    the task's hand-written prompt, the one ``--candidates manual`` probes, cut at the mask:
    ``An ant is`` + ``larger than a bird.`` / ``smaller than a bird.``. The choices differ only in the
    answer word and share everything after it, so lm-eval's ``acc`` compares the log-likelihoods
    of the filled sentences, as a causal scorer does under that prompt.
``question``
    ``Question: Is an ant larger or smaller than a bird?\\nAnswer:`` + ``larger`` / ``smaller``; posrel:
    ``Question: A man drives the bus. Is the man above, below, inside or beside the bus?\\nAnswer:``.

The docs are in a seeded shuffled order (``seed``, recorded in the YAML's metadata): in the
dataset's order they run label by label, so ``lm_eval --limit 100`` would read one label only (and
score a model that always says it 1.0). The data file is named by its absolute path: lm-eval hands
``data_files`` to ``datasets.load_dataset``, which resolves a relative path against the working
directory, not against the YAML's folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from spatialprobe import __version__, tasks
from spatialprobe.errors import OutputError, UsageError
from spatialprobe.records import Dataset, Instance
from spatialprobe.tasks.data import builtin_names
from spatialprobe.tasks.levels import with_article

STYLES = ("cloze", "question")
TAG = "spatialprobe"
METRICS = ("acc", "acc_norm")


def task_name(dataset: Dataset, style: str = "cloze") -> str:
    """``spatialprobe_size`` (``spatialprobe_size_question``) for a built-in set; for a file,
    ``spatialprobe_file_STEM_HASH``: its stem made an identifier and 8 hex digits of its content
    version. A file never takes a built-in set's name (the paper's ``posrel.jsonl`` exported
    beside the built-in ``spatialprobe_posrel`` does not overwrite it), and two files of one stem
    but other content get two names: two exports never collide. Both styles can sit in one
    folder and run side by side."""
    if dataset.name == dataset.task and dataset.name in builtin_names():
        name = f"{TAG}_{dataset.task}"
    else:
        stem = re.sub(r"[^a-z0-9]+", "_", Path(dataset.name).stem.lower()).strip("_") or dataset.task
        name = f"{TAG}_file_{stem}_{dataset.version.rsplit('-', 1)[-1][:8]}"
    return name if style == "cloze" else f"{name}_{style}"


def cloze_doc(inst: Instance, labels: tuple[str, ...], template: str, answers: dict[str, str]) -> dict:
    """The manual prompt cut at its mask: context before it, one choice per label after it."""
    from spatialprobe.prompts.templates import fill

    prefix, suffix = fill(template, inst)
    if not prefix.strip() or not prefix.endswith(" "):
        raise UsageError(f"template {template!r} must have words and a space before [MASK] for a cloze export")
    return {"context": prefix.rstrip(), "choices": [answers[label] + suffix for label in labels]}


def question_doc(inst: Instance, labels: tuple[str, ...], comparison: bool) -> dict:
    """A question naming every answer, then ``Answer:``; the choices are the label words."""
    if comparison:
        question = (f"Is {with_article(inst.obj_a)} {labels[0]} or {labels[1]} "
                    f"than {with_article(inst.obj_b)}?")
    else:
        options = ", ".join(labels[:-1]) + f" or {labels[-1]}"
        question = f"{inst.text.strip()} Is the {inst.obj_a} {options} the {inst.obj_b}?"
    return {"context": f"Question: {question}\nAnswer:", "choices": list(labels)}


def lm_eval_docs(dataset: Dataset, style: str = "cloze", seed: int = 0) -> list[dict[str, Any]]:
    """One lm-eval doc per instance: our fields, then ``context``, ``choices`` and ``gold``, in the
    order ``random.Random(seed).shuffle`` gives the instances."""
    import random

    from spatialprobe.prompts.templates import manual

    if style not in STYLES:
        raise UsageError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    definition = tasks.get(dataset.task)
    prompt = manual(dataset.task) if style == "cloze" else None
    docs = []
    for inst in dataset.instances:
        if prompt is not None:
            answers = {label: prompt.answers[label][0] for label in dataset.labels}
            made = cloze_doc(inst, dataset.labels, prompt.templates[0], answers)
        else:
            made = question_doc(inst, dataset.labels, definition.is_comparison)
        docs.append({"id": inst.id, "obj_a": inst.obj_a, "obj_b": inst.obj_b, "text": inst.text,
                     "label": inst.label, **made, "gold": dataset.labels.index(inst.label)})
    random.Random(seed).shuffle(docs)
    return docs


def _q(value: str) -> str:
    """A YAML double-quoted scalar (a JSON string is one), so the file needs no YAML writer."""
    return json.dumps(value)


def task_yaml(name: str, data_file: Path, dataset: Dataset, style: str, seed: int = 0) -> str:
    """The task config lm-eval's TaskManager reads (keys of its TaskConfig)."""
    metrics = "".join(f"  - metric: {m}\n    aggregation: mean\n    higher_is_better: true\n"
                      for m in METRICS)
    return (
        f"# lm-evaluation-harness task written by spatialprobe {__version__}: {dataset.task}, "
        f"{len(dataset)} instances, {style} style.\n"
        f"# Run: lm_eval --model hf --model_args pretrained=MODEL --include_path DIR --tasks {name}\n"
        f"task: {name}\n"
        f"tag: [{TAG}]\n"
        "dataset_path: json\n"
        "dataset_kwargs:\n"
        "  data_files:\n"
        f"    test: {_q(str(data_file))}\n"
        "test_split: test\n"
        "output_type: multiple_choice\n"
        "doc_to_text: context\n"
        "doc_to_choice: choices\n"
        "doc_to_target: gold\n"
        f"metric_list:\n{metrics}"
        "metadata:\n"
        f"  version: {_q(dataset.version)}\n"
        f"  spatialprobe_task: {_q(dataset.task)}\n"
        f"  style: {style}\n"
        f"  labels: [{', '.join(_q(label) for label in dataset.labels)}]\n"
        f"  order: {_q(f'shuffled: random.Random({seed}).shuffle of the instances')}\n"
        f"  order_seed: {seed}\n"
    )


def export_lm_eval(dataset: Dataset, out_dir: Path, style: str = "cloze", seed: int = 0) -> tuple[str, Path, Path]:
    """Write the task's YAML and JSON lines (in ``seed``'s shuffled order) into ``out_dir``; return
    (task name, yaml, jsonl)."""
    from spatialprobe.files import write_jsonl

    docs = lm_eval_docs(dataset, style, seed)
    name = task_name(dataset, style)
    refuse_other_task(out_dir / f"{name}.yaml", name, dataset)
    out_dir.mkdir(parents=True, exist_ok=True)
    data_file = (out_dir / f"{name}.jsonl").resolve()
    write_jsonl(data_file, docs)
    config = out_dir / f"{name}.yaml"
    config.write_text(task_yaml(name, data_file, dataset, style, seed), encoding="utf-8")
    return name, config, data_file


def refuse_other_task(config: Path, name: str, dataset: Dataset) -> None:
    """A task of this name already in the folder is overwritten only by the same data (its
    version): a built-in set of another toolkit release, say, is refused, not replaced."""
    if not config.exists():
        return
    text = config.read_text(encoding="utf-8", errors="replace")
    if f"  version: {_q(dataset.version)}\n" not in text:
        raise OutputError(f"{config} already defines the lm-eval task {name} with other data than "
                          f"{dataset.name} ({dataset.version}); export into another --out folder, or "
                          "remove that task first.")
