"""VSR (Liu, Emerson, Collier 2023): is the caption true of its COCO image?

Wordings: ``question`` (a yes/no question about the caption, for chat models) and
``contrastive`` (the caption against the caption with its relation negated, from
``spatialprobe/data/vsr_relations.tsv``: the caption wins - ``yes`` - only where it scores strictly
higher, as the CLIP baseline of the paper). Labels ``yes``/``no`` for every family; resampled by
COCO image; official metrics: accuracy (with its breakdown per relation category and per
relation) and macro-F1. A relation without a category (``congruent``) counts overall and per
relation but in no category, as the VSR authors' script. Each item states its fact (subject,
relation, object) - the relation as ``not RELATION`` where the caption is false - which
``spatialprobe report --by fact`` joins with other runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.sources.base import Official, Source, SourceItem, Wording

QUESTION = "Is this caption true of the image? Caption: {caption} Answer yes or no."
OFFICIAL = (Official({"accuracy": "accuracy", "macro_f1": "macro_f1"}, ("category", "relation")),)


def _contrastive(caption: str, relation: str) -> Wording:
    """Negation first, so that a tie (the first of equal scores wins) answers ``no``."""
    from spatialprobe.datasets import vsr

    return Wording("", (vsr.negate_caption(caption, relation), caption), ("no", "yes"))


def vsr_source(path: Path, images_dir: Path | None, split: str = "random", part: str = "test",
               limit: int | None = None, skip_missing: bool = False) -> tuple[Source, dict[str, Any]]:
    """VSR's captions with their images (those found; ``skip_missing`` or refused); ``images_dir``
    None: the captions alone, without images (a blind audit, ``spatialprobe audit blind``)."""
    from spatialprobe.datasets import vsr

    every = vsr.load_vsr_file(path, split=split, part=part)
    examples = every[:limit]
    table = vsr.relations()
    for example in examples:  # every relation has a negation, checked before any model runs
        if example.relation not in table:
            raise UsageError(f"{path}: example {example.id} has relation {example.relation!r}, which "
                             "is not among the 71 of spatialprobe/data/vsr_relations.tsv")
    found, missing, coverage = (vsr.usable_images(examples, images_dir, total=len(every), skip_missing=skip_missing,
                                                  limit=limit) if images_dir is not None
                                else vsr.without_images(examples, len(every), limit))
    items = tuple(SourceItem(e.id, QUESTION.format(caption=e.caption), ("Yes", "No"), ("yes", "no"),
                             "yes" if e.label == 1 else "no", None if found[e.id] is None else str(found[e.id]),
                             (e.subj, e.obj, e.image),
                             {"image": e.image, "relation": e.relation,
                              "category": table[e.relation].category},
                             {"contrastive": _contrastive(e.caption, e.relation)},
                             fact=(e.subj, e.relation if e.label == 1 else f"not {e.relation}", e.obj))
                  for e in examples if e.id in found)
    train = path.parent / "train.jsonl"  # the answer prior: the training split's majority
    prior = (tuple("yes" if e.label == 1 else "no" for e in vsr.load_vsr_file(train, split=split, part="train"))
             if part != "train" and train.is_file() else None)
    spec = Resampling(("yes", "no"), ("image",), key=("instance_id",), pooled=True, unit="images")
    settings = {"name": "vsr", "data": {"file": str(path.resolve()), "version": vsr.file_version(path)},
                "images": images_dir and str(images_dir.resolve()), "split": split, "part": part, "limit": limit,
                "skip_missing": skip_missing}
    source = Source("vsr", f"vsr-{split}", f"vsr-{split}-{part}@{vsr.file_version(path)}", ("yes", "no"),
                    items, spec, prior_labels=prior, official=OFFICIAL, settings=settings, extras=plot,
                    details={"total": coverage["total"], "coverage_detail": coverage, "what": "examples",
                             "missing_images": sorted({e.image for e in examples if e.id in set(missing)})[:50]})
    return source, settings


def panels(summary: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """{"per category": {group: {accuracy, n, ci}}, "per relation": ...} from a summary's breakdown
    (``ci`` only where the run has intervals)."""
    out: dict[str, dict[str, dict[str, Any]]] = {"per category": {}, "per relation": {}}
    for part, metric in summary["metrics"]["accuracy"].get("breakdown", {}).items():
        key, group = part.split(" ", 1)
        out[f"per {key}"][group] = {"accuracy": metric["mean"], "n": metric["n"],
                                    **({"ci": metric["ci"]} if "ci" in metric else {})}
    return out


def write_plot(run: Any, summary: Mapping[str, Any], title: str) -> None:
    """``accuracy.png`` (written atomically by the plot) when anything was scored."""
    if not summary["accuracy"]["n"]:
        return
    from spatialprobe.reports.vl_plots import accuracy_bars

    accuracy_bars(panels(summary), run.file("accuracy.png"), title)


def plot(run: Any, summary: Mapping[str, Any]) -> None:
    """The source's extra file: ``accuracy.png``, accuracy per category and per relation."""
    write_plot(run, summary, f"VSR: {summary['model']}")


def replay(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of a run's recorded ``source`` settings."""
    images = settings["images"]
    return vsr_source(Path(settings["data"]["file"]), images and Path(images), settings["split"],
                      settings["part"], settings["limit"], settings["skip_missing"])[0]
