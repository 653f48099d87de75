"""VSR with CLIP and negated-relation prompting: the caption wins if it outscores its negation.

For each (image, caption) the model scores the caption and the caption with its relation
replaced by the relation's negation or antonym (``spatialprobe/data/vsr_relations.tsv``);
the prediction is *true* when the caption scores strictly higher. Accuracy is reported overall
and, as its ``breakdown``, per relation category (``category NAME``) and per relation
(``relation NAME``); ``accuracy.png`` plots both. An example whose relation has no category
(``congruent``) counts overall and per relation but in no category, as the VSR authors' script.

The run goes through the run spine (:mod:`spatialprobe.runner`): its items are the examples
whose image is found, a batch is one call of the CLIP scorer, results are cached per example.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from spatialprobe.datasets import vsr
from spatialprobe.errors import UsageError
from spatialprobe.fingerprints import file_input, model_input
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.models import options
from spatialprobe.models.base import ScoreRequest
from spatialprobe.runner import Evaluation, Item, RunKind, execute
from spatialprobe.runner.settings import DataFile
from spatialprobe.runner.summary import Metric, single
from spatialprobe.sources.vsr import panels, write_plot

METHOD = "clip-negated-relation"
PROMPT = "caption vs. caption with the relation negated (vsr_relations.tsv)"


def pct(value: float) -> float:
    return round(100.0 * value, 2)


def grouped_accuracy(rows: Sequence[dict[str, Any]], key: str) -> dict[str, dict[str, float]]:
    """Accuracy per value of ``row[key]``; rows whose value is None are in no group (a relation
    without a category: analysis_scripts/eval_compute_acc_by_rel_meta_cat.py skips it)."""
    groups: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        if row[key] is not None:
            groups[row[key]].append(row["pred"] == row["label"])
    return {g: {"accuracy": pct(sum(v) / len(v)), "n": len(v)} for g, v in sorted(groups.items())}


def vsr_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Metric]:
    """Accuracy (with its breakdown per category and per relation) and macro-F1, in percent."""
    from sklearn.metrics import accuracy_score, f1_score

    gold = [r["label"] for r in rows]
    pred = [r["pred"] for r in rows]
    breakdown = {f"{key} {group}": single(v["accuracy"], int(v["n"]))
                 for key in ("category", "relation") for group, v in grouped_accuracy(rows, key).items()}
    return {
        "accuracy": Metric(pct(accuracy_score(gold, pred)) if rows else None, None, len(rows), breakdown),
        "macro_f1": single(pct(f1_score(gold, pred, average="macro", labels=[0, 1], zero_division=0))
                           if rows else None, len(rows)),
    }


def vsr_resampling() -> tuple[Resampling, ...]:
    """How VSR rows (one per caption) are resampled: by COCO image. VSR's captions were written
    for sampled images, several per image, so an image's captions are not independent draws;
    images share no objects by design, so the image is the unit. The overall value is pooled over
    captions, as are each category's and relation's (two resamplings of the same draws)."""
    by_category = Resampling((0, 1), ("image",), group="category", part="category {}", gold="label",
                             key=("id",), pooled=True, unit="images")
    return by_category, replace(by_category, group="relation", part="relation {}", metrics={"accuracy": "accuracy"})


def accuracy_table(summary: Mapping[str, Any], coverage: str | None = None) -> str:
    """table.md: its coverage (``coverage``, else the line of ``details.coverage``), then overall
    accuracy and accuracy per relation category, with 95 % intervals."""
    from spatialprobe.reports.tables import ci_suffix, coverage_line, intervals_line

    acc = summary["accuracy"]
    lines = [coverage or coverage_line(summary["details"].get("coverage")), "",
             "| group | accuracy (%) | n |", "|---|---|---|",
             f"| overall | {acc['mean']}{ci_suffix(acc)} | {acc['n']} |"]
    lines += [f"| {group} | {v['accuracy']}{ci_suffix(v)} | {v['n']} |"
              for group, v in panels(summary)["per category"].items()]
    text = "\n".join(lines) + "\n"
    return text + (f"\n{intervals_line(summary)}" if summary.get("intervals") else "")


def check_negations(examples: Sequence[vsr.VSRExample], path: Path) -> None:
    """Every example's relation is in the table and its caption negates: checked before any model runs."""
    table = vsr.relations()
    for example in examples:
        if example.relation not in table:
            raise UsageError(f"{path}: example {example.id} has relation {example.relation!r}, which "
                             "is not among the 71 of spatialprobe/data/vsr_relations.tsv")
        vsr.negate_caption(example.caption, example.relation)  # ValueError names the caption


def missing_details(examples: Sequence[Any], missing: Sequence[str],
                    coverage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What summary.json records of the examples without an image (and the coverage line's numbers)."""
    gone = set(missing)
    details = {"n_examples": len(examples), "n_missing_images": len(missing),
               "missing_images": sorted({e.image for e in examples if e.id in gone})[:50]}
    return {**details, "coverage": dict(coverage)} if coverage is not None else details


@dataclass(frozen=True)
class ImageBenchmarkSettings:
    """What every run of a model on a COCO-image benchmark file records (vsr, spatialmqa)."""

    model: str
    dataset: str
    data: DataFile
    part: str
    limit: int | None
    images: str
    """The COCO image folder (absolute)."""
    device: str
    batch_size: int


@dataclass(frozen=True)
class VSRRunSettings(ImageBenchmarkSettings):
    """What a vsr run's ``config.json`` records (its typed settings, see ``RunKind``)."""

    method: str
    prompt: str
    split: str
    skip_missing: bool = False
    """Examples without an image were left out (--skip-missing), counted in details.coverage."""


class VSRRun(RunKind):
    """A CLIP model on one VSR split as a run kind (see :class:`spatialprobe.runner.RunKind`)."""

    kind = "vsr"
    Settings = VSRRunSettings

    def __init__(self, model: str, path: str | Path, images_dir: str | Path, *, split: str = "random",
                 part: str = "test", limit: int | None = None, device: str = "auto",
                 batch_size: int = 16, clip=None, skip_missing: bool = False):
        self.model, self.path, self.split, self.part, self.limit = str(model), Path(path), split, part, limit
        self.images_dir, self.batch_size, self.skip_missing = Path(images_dir), batch_size, skip_missing
        every = vsr.load_vsr_file(self.path, split=split, part=part)
        self.examples = every[:limit]
        check_negations(self.examples, self.path)
        self.images, self.missing, self.coverage = vsr.usable_images(
            self.examples, images_dir, total=len(every), skip_missing=skip_missing, limit=limit)
        if clip is None:  # the contrastive adapter reads the family from the config, refusing others
            # under --ray: described on the cluster, never loaded by the driver
            clip = options.scaled_adapter("contrastive", self.model, {}, device=device)
        self.clip, self.device = clip, getattr(clip, "device", device)
        self.dataset = f"vsr-{split}-{part}@{vsr.file_version(self.path)}"

    def resolved(self) -> VSRRunSettings:
        return VSRRunSettings(
            method=METHOD, prompt=PROMPT, model=self.model, dataset=self.dataset,
            data=DataFile(str(self.path.resolve()), vsr.file_version(self.path)),
            split=self.split, part=self.part, limit=self.limit, images=str(self.images_dir.resolve()),
            device=self.device, batch_size=self.batch_size, skip_missing=self.skip_missing)

    def inputs(self) -> dict[str, Any]:
        return {"model": model_input("the CLIP model", self.model),
                "data": file_input("the VSR data file", self.path)}

    def items(self) -> list[Item]:
        return [Item(e.id, e) for e in self.examples if e.id in self.images]

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        table = vsr.relations()
        examples = [item.payload for item in batch]
        pairs = [(self.images[e.id], (e.caption, vsr.negate_caption(e.caption, e.relation))) for e in examples]
        scores = self.clip.score([ScoreRequest("", "", texts, image) for image, texts in pairs])
        return [{"id": e.id, "image": e.image, "caption": e.caption, "negation": texts[1],
                 "relation": e.relation, "category": table[e.relation].category, "label": e.label,
                 "pred": int(s_caption > s_negation), "score_caption": s_caption,
                 "score_negation": s_negation}
                for e, (_, texts), (s_caption, s_negation) in zip(examples, pairs, scores, strict=True)]

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        rows = [results[item.key] for item in self.items()]
        details = {**missing_details(self.examples, self.missing, self.coverage), "method": METHOD, "prompt": PROMPT,
                   "model_info": self.clip.describe()}
        return Evaluation(rows, vsr_metrics(rows), f"vsr-{self.split}", self.model, self.dataset,
                          None, False, details, vsr_resampling())

    def table(self, summary: Mapping[str, Any]) -> str:
        return accuracy_table(summary)

    def write_extras(self, run, summary: Mapping[str, Any], evaluation: Evaluation) -> None:
        write_plot(run, summary, f"VSR {self.split}/{self.part}: {self.model}")

    @classmethod
    def from_settings(cls, settings: VSRRunSettings) -> VSRRun:
        s = settings
        return cls(s.model, s.data.file, s.images, split=s.split, part=s.part, limit=s.limit,
                   device=s.device, batch_size=s.batch_size, skip_missing=s.skip_missing)


def run_vsr_clip(model: str, data_dir: str | Path, images_dir: str | Path, out: str | Path, *,
                 split: str = "random", part: str = "test", device: str = "auto",
                 batch_size: int = 16, limit: int | None = None, clip=None,
                 progress: Callable[[int, int], None] | None = None, skip_missing: bool = False) -> dict[str, Any]:
    """Evaluate one CLIP checkpoint on a VSR split; writes and returns the run's summary."""
    run = VSRRun(model, vsr.split_file(data_dir, split, part), images_dir, split=split, part=part,
                 limit=limit, device=device, batch_size=batch_size, clip=clip, skip_missing=skip_missing)
    return execute(run, out, progress)
