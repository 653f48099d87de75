"""Fine-tune ViLT as a binary classifier on VSR: the supervised baseline of the VSR paper.

``ViltForImagesAndTextClassification`` with one image (the VSR authors' setup), initialized
from ``dandelin/vilt-b32-mlm``, trained with the standard transformers ``Trainer``; the dev
split is evaluated every ``eval_steps`` and the best dev checkpoint is kept and evaluated on
the test split. Defaults are the paper's (``scripts/vilt_train.sh`` and ``src/train.py`` of
cambridgeltl/visual-spatial-reasoning): AdamW with torch's default weight decay 0.01, learning
rate 1e-5 (constant, no warm-up), no gradient clipping, batch size 12, 30 epochs, evaluation
every 100 steps, text padded to 40 tokens, mixed precision on CUDA, seed 42. (The Trainer
exempts biases and LayerNorm weights from weight decay; the authors' loop decays all.)

As a run kind (:class:`VSRTrainRun`, through :mod:`spatialprobe.runner`) training is one item,
``training``, ahead of the test examples: the first batch trains (resuming from the Trainer's
checkpoints in ``RUN/checkpoints`` if a run was interrupted) and keeps the best dev checkpoint
in ``RUN/best``; the test examples are then predicted batch by batch and cached like any run's
results. A rerun of a finished run trains nothing and predicts nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks import vsr
from spatialprobe.benchmarks.vsr import panels
from spatialprobe.errors import UsageError
from spatialprobe.extras import require
from spatialprobe.fingerprints import file_input
from spatialprobe.loading import device_name, load_pretrained, resolve_precision
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.runner import Evaluation, Item, RunKind, execute
from spatialprobe.runner.settings import model as model_field
from spatialprobe.vision import open_image

TRAINING = "training"
"""Key of the one item that trains the model (its result: the best dev accuracy and step)."""



def pct(value: float) -> float:
    return round(100.0 * value, 2)


def vsr_metrics(rows: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], tuple[Resampling, ...]]:
    """VSR's official metrics of the test rows (labels 0/1) from the statistic registry, as every
    source's (:func:`spatialprobe.engine.metrics.official_metrics`: accuracy and macro-F1, per
    relation category and per relation; a relation without a category, ``congruent``, in no
    category), and the resamplings that give their intervals: by COCO image, since VSR's captions
    were written several per sampled image and images share no objects by design."""
    from spatialprobe.benchmarks.vsr import OFFICIAL
    from spatialprobe.engine.metrics import official_metrics

    spec = Resampling((0, 1), ("image",), gold="label", key=("id",), pooled=True, unit="images")
    return official_metrics(rows, spec, OFFICIAL)


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


def missing_details(examples: Sequence[Any], missing: Sequence[str],
                    coverage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What summary.json records of the examples without an image (and the coverage line's numbers)."""
    gone = set(missing)
    details = {"n_examples": len(examples), "n_missing_images": len(missing),
               "missing_images": sorted({e.image for e in examples if e.id in gone})[:50]}
    return {**details, "coverage": dict(coverage)} if coverage is not None else details


@dataclass(frozen=True)
class TrainSettings:
    """Hyperparameters; defaults follow the VSR paper's ViLT run."""

    learning_rate: float = 1e-5
    """AdamW learning rate, constant schedule."""
    batch_size: int = 12
    """Training and evaluation batch size."""
    epochs: float = 30.0
    """Training epochs."""
    eval_steps: int = 100
    """Evaluate on dev (and maybe save the best checkpoint) every this many steps."""
    max_steps: int = -1
    """Stop after this many steps (-1: run all epochs); for smoke tests."""
    weight_decay: float = 0.01
    """AdamW weight decay (torch.optim.AdamW's default, which the authors' loop used)."""
    max_grad_norm: float = 0.0
    """Gradient clipping norm; 0 = none, as in the authors' loop (the Trainer's default is 1)."""
    max_text_length: int = 40
    """Text tokens (ViLT's position embeddings hold 40)."""
    seed: int = 42
    """Seed for initialization of the classifier head and data order."""


class VSRImageText:
    """A torch-style dataset of (image path, caption, label) for examples that have an image."""

    def __init__(self, examples, images: dict[str, Path]):
        self.rows = [(images[e.id], e.caption, e.label) for e in examples if e.id in images]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        path, caption, label = self.rows[index]
        return {"image": path, "caption": caption, "label": label}


def make_collator(processor, max_text_length: int):
    import torch

    def collate(batch):
        inputs = processor(images=[open_image(b["image"]) for b in batch],
                           text=[b["caption"] for b in batch], padding="max_length",
                           truncation=True, max_length=max_text_length, return_tensors="pt")
        inputs["pixel_values"] = inputs["pixel_values"].unsqueeze(1)  # (batch, 1 image, C, H, W)
        if "pixel_mask" in inputs:
            inputs["pixel_mask"] = inputs["pixel_mask"].unsqueeze(1)
        inputs["labels"] = torch.tensor([b["label"] for b in batch])
        return dict(inputs)

    return collate


def _accuracy(eval_pred) -> dict[str, float]:
    logits, labels = eval_pred
    return {"accuracy": float((logits.argmax(-1) == labels).mean())}


def training_arguments(settings: TrainSettings, output_dir: Path, device: str):
    """The Trainer's arguments for ``settings`` (best dev accuracy kept)."""
    import torch
    from transformers import TrainingArguments

    amp = resolve_precision("auto", device, "vsr fine-tuning")
    return TrainingArguments(
        output_dir=str(output_dir), learning_rate=settings.learning_rate,
        per_device_train_batch_size=settings.batch_size, per_device_eval_batch_size=settings.batch_size,
        num_train_epochs=settings.epochs, max_steps=settings.max_steps, lr_scheduler_type="constant",
        warmup_steps=0, weight_decay=settings.weight_decay, max_grad_norm=settings.max_grad_norm,
        eval_strategy="steps", eval_steps=settings.eval_steps, save_strategy="steps",
        save_steps=settings.eval_steps, save_total_limit=2, load_best_model_at_end=True,
        metric_for_best_model="accuracy", greater_is_better=True, seed=settings.seed,
        fp16=amp == torch.float16, bf16=amp == torch.bfloat16, use_cpu=device == "cpu", report_to=[],
        remove_unused_columns=False, dataloader_num_workers=0, logging_steps=settings.eval_steps)


@dataclass(frozen=True)
class TrainData:
    """The VSR data folder a vsr-train run read, and each part's file version."""

    dir: str
    versions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class VSRTrainRunSettings:
    """What a vsr-train run's ``config.json`` records (its typed settings, see ``RunKind``)."""

    data: TrainData
    """The VSR folder (a command gives ``TrainData(dir)``; the run reads each part's version)."""
    images: str
    train: TrainSettings
    model: str = field(default="dandelin/vilt-b32-mlm", metadata=model_field("the model fine-tuned"))
    split: str = "random"
    method: str = "vilt-finetune"
    dataset: str | None = None
    """``vsr-SPLIT@VERSION`` (read from the train file)."""
    device: str = "auto"
    skip_missing: bool = False
    """Examples without an image were left out (--skip-missing), counted in details.coverage."""


class VSRTrainRun(RunKind):
    """Fine-tuning and testing ViLT on a VSR split as a run kind (see :class:`spatialprobe.runner.RunKind`)."""

    kind = "vsr-train"
    Settings = VSRTrainRunSettings

    scales_out = False  # the test batches need the model the training item made in this process

    def __init__(self, settings: VSRTrainRunSettings, work_dir: str | Path | None = None):
        require("accelerate", "vl", "Fine-tuning on VSR (spatialprobe vsr-train)")
        s = settings
        self.data_dir, self.images_dir = Path(s.data.dir), Path(s.images)
        self.batch_size = s.train.batch_size
        self.work_dir = None if work_dir is None else Path(work_dir)
        self.parts = {p: vsr.load_vsr(s.data.dir, s.split, p) for p in vsr.PARTS}
        # every part's images, or a refusal naming the first missing (--skip-missing: counted)
        found = {p: vsr.usable_images(ex, s.images, total=len(ex), skip_missing=s.skip_missing,
                                      what=f"{p} examples") for p, ex in self.parts.items()}
        self.found = {p: (images, missing) for p, (images, missing, _) in found.items()}
        self.coverage = {p: coverage for p, (_, _, coverage) in found.items()}
        self.data = {p: VSRImageText(self.parts[p], self.found[p][0]) for p in vsr.PARTS}
        self.versions = {p: vsr.file_version(vsr.split_file(s.data.dir, s.split, p)) for p in vsr.PARTS}
        self._trainer = None
        self.settings = replace(s, model=str(s.model), dataset=f"vsr-{s.split}@{self.versions['train']}",
                                data=TrainData(str(self.data_dir.resolve()), dict(self.versions)),
                                images=str(self.images_dir.resolve()), device=device_name(s.device))

    def prepare(self, run, cached: Mapping[str, Any]) -> list[str]:
        """The spine's hook before computing: keep checkpoints/ and best/ in the run directory
        (also on replay, where the kind is built from its config). Nothing cached is redone."""
        self.work_dir = Path(run.path)
        return []

    def inputs(self) -> dict[str, Any]:
        """The model (by its field) and each part's data file, which the VSR folder holds."""
        return {**super().inputs(), **{f"data_{p}": file_input(f"the VSR {p} file", vsr.split_file(
            self.data_dir, self.split, p)) for p in vsr.PARTS}}

    def items(self) -> list[Item]:
        test = self.found["test"][0]
        return [Item(TRAINING)] + [Item(e.id, e) for e in self.parts["test"] if e.id in test]

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [self._train()] if batch[0].key == TRAINING else []
        examples = [item.payload for item in batch if item.key != TRAINING]
        if examples:
            dataset = VSRImageText(examples, self.found["test"][0])
            predictions = self._predictor().predict(dataset).predictions.argmax(-1).tolist()
            relations = vsr.relations()
            out += [{"id": e.id, "image": e.image, "caption": e.caption, "relation": e.relation,
                     "category": relations[e.relation].category if e.relation in relations else "Unallocated",
                     "label": e.label, "pred": int(p)} for e, p in zip(examples, predictions, strict=True)]
        return out

    def _dir(self, name: str) -> Path:
        if self.work_dir is None:
            raise UsageError("vsr-train needs its run directory for checkpoints (use_run_dir).")
        return self.work_dir / name

    def _trainer_for(self, net, processor):
        from transformers import Trainer

        args = training_arguments(self.train, self._dir("checkpoints"), self.device)
        return Trainer(model=net, args=args, train_dataset=self.data["train"], eval_dataset=self.data["dev"],
                       data_collator=make_collator(processor, self.train.max_text_length),
                       compute_metrics=_accuracy)

    def _train(self) -> dict[str, Any]:
        """Fine-tune (resuming from the latest checkpoint), keep the best dev model in best/."""
        from transformers import ViltForImagesAndTextClassification, ViltProcessor

        processor = load_pretrained(ViltProcessor, self.model, "ViLT processor")
        net = load_pretrained(ViltForImagesAndTextClassification, self.model, "ViLT model", dtype="fp32",
                              num_images=1, num_labels=2, id2label={0: "False", 1: "True"},
                              label2id={"False": 0, "True": 1})
        trainer = self._trainer_for(net, processor)
        resume = any(self._dir("checkpoints").glob("checkpoint-*"))
        trainer.train(resume_from_checkpoint=True if resume else None)
        trainer.save_model(str(self._dir("best")))
        processor.save_pretrained(str(self._dir("best")))
        self._trainer = trainer
        best = trainer.state.best_metric
        return {"best_dev_accuracy": None if best is None else pct(best),
                "best_model_checkpoint": trainer.state.best_model_checkpoint,
                "global_step": trainer.state.global_step}

    def _predictor(self):
        """The trainer holding the best model: this process's, or one loaded from best/."""
        if self._trainer is None:
            from transformers import ViltForImagesAndTextClassification, ViltProcessor

            best = self._dir("best")
            if not (best / "config.json").exists():
                raise UsageError(f"{best} is missing: this run's training finished but its best model "
                                 "is gone; use another --out directory to train again.")
            self._trainer = self._trainer_for(
                load_pretrained(ViltForImagesAndTextClassification, str(best), "ViLT model", dtype="fp32"),
                load_pretrained(ViltProcessor, str(best), "ViLT processor"))
        return self._trainer

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        items = self.items()
        rows = [results[item.key] for item in items[1:]]
        details = {**results[TRAINING],
                   **missing_details(self.parts["test"], self.found["test"][1], self.coverage["test"]),
                   "best_checkpoint": None if self.work_dir is None else str(self._dir("best")),
                   "missing_images_per_part": {p: len(self.found[p][1]) for p in vsr.PARTS},
                   "coverage_per_part": self.coverage}
        metrics, specs = vsr_metrics(rows)
        return Evaluation(rows, metrics, f"vsr-{self.split}", f"{self.model} (fine-tuned ViLT)",
                          f"vsr-{self.split}-test@{self.versions['test']}", self.train.seed, False, details,
                          specs)

    def table(self, summary: Mapping[str, Any]) -> str:
        from spatialprobe.reports.tables import coverage_line

        parts = summary["details"].get("coverage_per_part") or {}
        coverage = "Coverage: " + "; ".join(f"{p} " + coverage_line(parts[p]).removeprefix("Coverage: ").rstrip(".")
                                            for p in vsr.PARTS if p in parts) + "." if parts else None
        return (accuracy_table(summary, coverage) + f"\nBest dev accuracy {summary['details']['best_dev_accuracy']}% "
                f"(step {summary['details']['global_step']}).\n")


def train_vsr_vilt(data_dir, images_dir, out, *, model: str = "dandelin/vilt-b32-mlm",
                   split: str = "random", settings: TrainSettings = TrainSettings(),
                   device: str = "auto", progress=None, skip_missing: bool = False) -> dict[str, Any]:
    """Fine-tune, keep the best dev checkpoint in ``OUT/best``, evaluate it on test."""
    run = VSRTrainRun(VSRTrainRunSettings(TrainData(str(data_dir)), str(images_dir), settings, str(model), split,
                                          device=device, skip_missing=skip_missing),
                       work_dir=out if isinstance(out, (str, Path)) else None)  # a default folder: set in prepare
    return execute(run, out, progress)
