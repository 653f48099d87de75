"""SpatialMQA (Liu et al. 2025): a question about a COCO image with 2-6 lettered options.

Wordings: ``question`` (lettered options, the reply parsed by letter, text, then the benchmark's
lenient rule) and ``contrastive`` (each option in the template ``{option}: {question}`` scored
against the image). The official metrics, for every family: lenient accuracy, macro-F1 over the
relations in gold, macro precision and recall and the benchmark's F1 = 2PR/(P+R), each with its
``strict_`` twin and broken down per perspective and per axis (``Code/eval/calculate_prf1.py``).
A row's ``pred_lenient`` is the gold answer where the answer's text is leniently correct, else the
first relation containing it; ``pred_strict`` the option it equals. The text is the reply, the
option its letter names, or the option chosen by likelihood (:func:`matching`).

``wording="legacy-generate"`` (recorded in the source settings only where given): the ``question``
wording is the retired spatialmqa kind's generate prompt, verbatim (:data:`LEGACY_PROMPT`, options
joined by ``; ``), and every reply is matched as that kind matched it (strict and lenient labels of
the reply as it is, even a bare letter), so that a migrated run of its generate method
(:mod:`spatialprobe.benchmarks.legacy`) asks and scores exactly as it did.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.metrics.intervals import Resampling
from spatialprobe.sources.base import Official, Source, SourceItem, Wording

QUESTION = "{question}\nOptions:\n{options}\nAnswer with the option's letter."
TEMPLATE = "{option}: {question}"
LEGACY_PROMPT = ("You are an expert in spatial relation reasoning. Look at the image and answer the "
                 "question by choosing exactly one of the options. Reply with the option only, no "
                 "explanation.\nQuestion: {question}\nOptions: {options}")
"""The retired spatialmqa kind's generate prompt (commit 6125a7a, ``models/mqa_models.py``)."""
LEGACY = "legacy-generate"
STATISTICS = {"accuracy": "accuracy", "macro_f1": "macro_f1_gold", "f1": "pr_f1_gold",
              "precision": "precision_gold", "recall": "recall_gold"}
OFFICIAL = (Official(STATISTICS, ("perspective", "axis"), pred="pred_lenient"),
            Official({f"strict_{k}": v for k, v in STATISTICS.items()}, ("perspective", "axis"), pred="pred_strict"))


def _graded(item: SourceItem, text: str | None) -> dict[str, Any]:
    """``pred_strict`` and ``pred_lenient`` of an answer's text by the benchmark's rules
    (:mod:`spatialprobe.models.answer_parse`); no text: neither."""
    from spatialprobe.models.answer_parse import lenient_label, strict_label

    if text is None:
        return {"pred_strict": "--", "pred_lenient": "--"}
    return {"pred_strict": strict_label(text, item.options), "pred_lenient": lenient_label(text, item.gold)}


def matching(item: SourceItem, output: str | None, label: str | None) -> dict[str, Any]:
    """``pred_strict`` and ``pred_lenient`` of an answer, graded as the benchmark grades an output
    text: a reply as it is, except that a reply giving an option's letter (the ``question`` wording
    asks for one; the authors' prompt had none) is that option's text, and so is an option chosen
    by likelihood or by a contrastive model (``output`` None)."""
    from spatialprobe.models.answer_parse import parse_answer

    letter = output is not None and parse_answer(output, item.options).rule == "letter"
    return _graded(item, label if output is None or letter else output)


def legacy_matching(item: SourceItem, output: str | None, label: str | None) -> dict[str, Any]:
    """The retired kind's matching: the reply graded as it is, whatever it is."""
    return _graded(item, label if output is None else output)


def spatialmqa_source(path: Path, images_dir: Path | None, part: str = "test", limit: int | None = None,
                      skip_missing: bool = False, wording: str | None = None) -> tuple[Source, dict[str, Any]]:
    """SpatialMQA's questions with their images (those found; ``skip_missing`` or refused);
    ``images_dir`` None: the questions alone (a blind audit, ``spatialprobe audit blind``);
    ``wording`` :data:`LEGACY`: the retired kind's generate prompt and matching (module docstring)."""
    from spatialprobe.errors import UsageError

    if wording not in (None, LEGACY):
        raise UsageError(f"the spatialmqa source's wording is {LEGACY} or none, not {wording!r}.")
    from spatialprobe.datasets import spatialmqa
    from spatialprobe.datasets.vsr import file_version, usable_images, without_images
    from spatialprobe.models.answer_parse import SPATIALMQA_LABEL_ORDER, spatialmqa_option

    every = spatialmqa.load_spatialmqa_file(path, part=part)
    examples = every[:limit]
    found, missing, coverage = (usable_images(examples, images_dir, total=len(every),
                                              subdirs=("", "test2017", "images"), skip_missing=skip_missing,
                                              limit=limit, what="questions")
                                if images_dir is not None else without_images(examples, len(every), limit))
    before, _, after = TEMPLATE.partition("{option}")
    items = []
    for e in examples:
        if e.id not in found:
            continue
        lettered = "\n".join(f"{chr(65 + n)}. {o}" for n, o in enumerate(e.options))
        contrastive = Wording(before.format(question=e.question), e.options, e.options,
                              after.format(question=e.question))
        asked = (LEGACY_PROMPT.format(question=e.question, options="; ".join(e.options)) if wording
                 else QUESTION.format(question=e.question, options=lettered))
        items.append(SourceItem(e.id, asked, e.options,
                                e.options, e.answer, None if found[e.id] is None else str(found[e.id]), (e.image,),
                                {"image": e.image, "perspective": e.perspective, "axis": e.axis},
                                {"contrastive": contrastive}))
    train = path.parent / "train.jsonl"
    prior = (tuple(x.answer for x in spatialmqa.load_spatialmqa_file(train, part="train"))
             if part != "train" and train.is_file() else None)
    spec = Resampling(tuple(SPATIALMQA_LABEL_ORDER), ("image",), key=("instance_id",), pooled=True,
                      unit="images", fold_case=True)
    settings = {"name": "spatialmqa", "data": {"file": str(path.resolve()), "version": file_version(path)},
                "images": images_dir and str(images_dir.resolve()), "part": part, "limit": limit,
                "skip_missing": skip_missing, **({"wording": wording} if wording else {})}
    source = Source("spatialmqa", "spatialmqa", f"spatialmqa-{part}@{file_version(path)}",
                    tuple(SPATIALMQA_LABEL_ORDER), tuple(items), spec, prior_labels=prior,
                    lenient=spatialmqa_option, official=OFFICIAL,
                    matching=legacy_matching if wording else matching, settings=settings,
                    details={"total": coverage["total"], "coverage_detail": coverage, "what": "questions",
                             "missing_images": sorted({e.image for e in examples if e.id in set(missing)})[:50],
                             "extra_keys": spatialmqa.extra_key_report(examples)})
    return source, settings


def replay(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of a run's recorded ``source`` settings."""
    images = settings["images"]
    return spatialmqa_source(Path(settings["data"]["file"]), images and Path(images), settings["part"],
                             settings["limit"], settings["skip_missing"], settings.get("wording"))[0]
