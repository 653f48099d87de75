"""Fine-tune ViLT as a binary classifier on VSR: the supervised baseline of the VSR paper.

``ViltForImagesAndTextClassification`` with one image (the VSR authors' setup), initialized
from ``dandelin/vilt-b32-mlm``, trained with the standard transformers ``Trainer``; the dev
split is evaluated every ``eval_steps`` and the best dev checkpoint is kept and evaluated on
the test split. Defaults are the paper's (``scripts/vilt_train.sh`` and ``src/train.py`` of
cambridgeltl/visual-spatial-reasoning): AdamW with torch's default weight decay 0.01, learning
rate 1e-5 (constant, no warm-up), no gradient clipping, batch size 12, 30 epochs, evaluation
every 100 steps, text padded to 40 tokens, mixed precision on CUDA, seed 42. (The Trainer
exempts biases and LayerNorm weights from weight decay; the authors' loop decays all.)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..datasets import vsr
from ..extras import require
from ..store import RunDir
from .vl_common import load_pretrained, open_image, resolve_device


@dataclass(frozen=True)
class TrainSettings:
    """Hyperparameters; defaults follow the VSR paper's ViLT run."""

    learning_rate: float = 1e-5
    """AdamW learning rate, constant schedule."""
    batch_size: int = 12
    """Training and evaluation batch size."""
    epochs: float = 30
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
    from transformers import TrainingArguments

    return TrainingArguments(
        output_dir=str(output_dir), learning_rate=settings.learning_rate,
        per_device_train_batch_size=settings.batch_size, per_device_eval_batch_size=settings.batch_size,
        num_train_epochs=settings.epochs, max_steps=settings.max_steps, lr_scheduler_type="constant",
        warmup_steps=0, weight_decay=settings.weight_decay, max_grad_norm=settings.max_grad_norm,
        eval_strategy="steps", eval_steps=settings.eval_steps, save_strategy="steps",
        save_steps=settings.eval_steps, save_total_limit=2, load_best_model_at_end=True,
        metric_for_best_model="accuracy", greater_is_better=True, seed=settings.seed,
        fp16=device.startswith("cuda"), use_cpu=device == "cpu", report_to=[],
        remove_unused_columns=False, dataloader_num_workers=0, logging_steps=settings.eval_steps)


def train_vsr_vilt(data_dir, images_dir, out, *, model: str = "dandelin/vilt-b32-mlm",
                   split: str = "random", settings: TrainSettings = TrainSettings(),
                   device: str = "auto") -> dict[str, Any]:
    """Fine-tune, keep the best dev checkpoint in ``OUT/best``, evaluate it on test."""
    # transformers' Trainer imports accelerate, which transformers itself does not install.
    require("accelerate", "vl", "Fine-tuning on VSR (spatialprobe vsr-train)")
    from transformers import Trainer, ViltForImagesAndTextClassification, ViltProcessor

    device = resolve_device(device)
    run = RunDir(out)
    parts = {p: vsr.load_vsr(data_dir, split, p) for p in vsr.PARTS}
    found = {p: vsr.find_images(ex, images_dir) for p, ex in parts.items()}
    data = {p: VSRImageText(parts[p], found[p][0]) for p in vsr.PARTS}
    if not len(data["train"]) or not len(data["dev"]):
        raise ValueError(f"no training or dev images found under {images_dir}")
    versions = {p: vsr.file_version(vsr.split_file(data_dir, split, p)) for p in vsr.PARTS}
    run.start({"kind": "vsr", "method": "vilt-finetune", "model": str(model), "split": split,
               "dataset": f"vsr-{split}@{versions['train']}", "data_versions": versions,
               "images": str(images_dir), "settings": asdict(settings), "seed": settings.seed,
               "missing_images": {p: len(found[p][1]) for p in vsr.PARTS}},
              resume_keys=("model", "split", "dataset", "settings"))
    processor = load_pretrained(ViltProcessor, model, "ViLT processor")
    net = load_pretrained(ViltForImagesAndTextClassification, model, "ViLT model", num_images=1,
                          num_labels=2, id2label={0: "False", 1: "True"},
                          label2id={"False": 0, "True": 1})
    args = training_arguments(settings, run.file("checkpoints"), device)
    trainer = Trainer(model=net, args=args, train_dataset=data["train"], eval_dataset=data["dev"],
                      data_collator=make_collator(processor, settings.max_text_length),
                      compute_metrics=_accuracy)
    resume = any(run.file("checkpoints").glob("checkpoint-*"))
    trainer.train(resume_from_checkpoint=True if resume else None)
    trainer.save_model(str(run.file("best")))
    processor.save_pretrained(str(run.file("best")))
    return _evaluate_test(run, trainer, parts["test"], data["test"], found["test"][1], model, split,
                          versions["test"], trainer.state.best_metric)


def _evaluate_test(run, trainer, examples, dataset, missing, model, split, version, best_dev):
    from .vl_runs import write_summary
    from .vsr_eval import vsr_metrics

    table = vsr.relations()
    with_image = [e for e in examples if e.id not in set(missing)]
    rows = []
    if len(dataset):
        predictions = trainer.predict(dataset).predictions.argmax(-1).tolist()
        rows = [{"id": e.id, "image": e.image, "caption": e.caption, "relation": e.relation,
                 "category": table[e.relation].category if e.relation in table else "Unallocated",
                 "label": e.label, "pred": int(p)} for e, p in zip(with_image, predictions, strict=True)]
    metrics = vsr_metrics(rows)
    summary = {"kind": "vsr", "task": f"vsr-{split}", "model": f"{model} (fine-tuned ViLT)",
               "dataset": f"vsr-{split}-test@{version}",
               "accuracy": {"mean": metrics["accuracy"], "std": None},
               "macro_f1": {"mean": metrics["macro_f1"], "std": None},
               "best_dev_accuracy": None if best_dev is None else round(100 * best_dev, 2),
               "best_checkpoint": str(run.file("best")), "n_examples": len(examples),
               "n_scored": len(rows), "n_missing_images": len(missing),
               "per_category": metrics["per_category"], "per_relation": metrics["per_relation"]}
    table_rows = [("overall", str(metrics["accuracy"]), str(metrics["n"]))]
    table_rows += [(c, str(v["accuracy"]), str(v["n"])) for c, v in metrics["per_category"].items()]
    write_summary(run, summary, rows, table_rows, ("group", "accuracy (%)", "n"))
    return summary
