"""Detector and depth adapters over transformers checkpoints (or local directories).

* :class:`OwlDetector` - open-vocabulary OWL-ViT / OWLv2: one text query per object name.
* :class:`DetrDetector` - closed-set COCO detectors (DETR and any ``AutoModelForObjectDetection``)
  with an editable alias map from our object names to the detector's class names.
* :class:`HFDepth` - ``AutoModelForDepthEstimation`` (DPT, Depth Anything, ...); disparity is
  converted to depth by :func:`detectors.depth.to_depth`.

Models load through ``from_pretrained`` only; ``device="auto"`` picks CUDA when present, where
inference runs under float16 autocast. ``preprocess="tensor"`` resizes and normalises on the
model's device (:mod:`detectors.preprocess`) instead of through the processor (the reference,
``"processor"``); boxes and depth maps are decoded for the whole batch at once and copied to the
host in one transfer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from spatialprobe.detectors.base import Detection, as_box, nms
from spatialprobe.detectors.depth import predicts_of_config, to_depth
from spatialprobe.detectors.preprocess import tensor_preprocessor
from spatialprobe.errors import UsageError
from spatialprobe.loading import autocast, device_name, load_pretrained

DEFAULT_OWLVIT = "google/owlvit-base-patch32"
DEFAULT_OWLV2 = "google/owlv2-base-patch16-ensemble"
DEFAULT_DETR = "facebook/detr-resnet-50"
DEFAULT_DPT = "Intel/dpt-large"
DEFAULT_DEPTH_ANYTHING = "LiheYoung/depth-anything-small-hf"


PREPROCESS = ("processor", "tensor")


class _TorchModel:
    processor: Any

    def _setup(self, model, device: str, preprocess: str = "processor"):
        if preprocess not in PREPROCESS:
            raise UsageError(f"preprocess must be one of {PREPROCESS}, not {preprocess!r}")
        self.device = device_name(device)
        self.model = model.to(self.device).eval()
        self.preprocess = preprocess
        image_processor = getattr(self.processor, "image_processor", self.processor)
        # None: the processor cannot be reproduced as tensor ops, so it keeps preprocessing
        self._fast = tensor_preprocessor(image_processor) if preprocess == "tensor" else None

    def _pixels(self, images) -> dict[str, Any]:
        """The model's image inputs: tensor ops on the device, else the processor."""
        if self._fast is not None:
            return self._fast(images, self.device)
        processor = getattr(self.processor, "image_processor", self.processor)
        return dict(processor(images=images, return_tensors="pt"))

    def _settings(self) -> dict[str, Any]:
        return {"preprocess": self.preprocess} if self.preprocess != "processor" else {}

    def _forward(self, inputs):
        import torch

        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with torch.inference_mode(), autocast(self.device):
            return self.model(**inputs)


class OwlDetector(_TorchModel):
    """OWL-ViT or OWLv2: query ``template.format(name)`` per object, keep boxes above ``threshold``."""

    name = "owlvit"

    def __init__(self, model: str = DEFAULT_OWLVIT, threshold: float = 0.1,
                 template: str = "a photo of a {}", nms_iou: float | None = None,
                 device: str = "auto", preprocess: str = "processor"):
        from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor

        self.model_name, self.threshold, self.template, self.nms_iou = model, threshold, template, nms_iou
        self.processor = load_pretrained(AutoProcessor, model, "detector processor")
        self._setup(load_pretrained(AutoModelForZeroShotObjectDetection, model, "detector", dtype="fp32"), device,
                    preprocess)
        # OWLv2 pads images to a square before predicting, so its boxes are relative to that square.
        self.square = self.model.config.model_type == "owlv2"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_name, "threshold": self.threshold,
                "template": self.template, "nms_iou": self.nms_iou, **self._settings()}

    def detect(self, images: Sequence[Any], queries: Sequence[Sequence[str]]) -> list[list[Detection]]:
        import torch
        from transformers.image_transforms import center_to_corners_format

        images = [im.convert("RGB") for im in images]
        texts = [[self.template.format(q) for q in qs] for qs in queries]
        # Fixed-length padding: every image's queries stack into one tensor, as OWL-ViT expects.
        inputs = dict(self.processor(text=texts, return_tensors="pt", padding="max_length",
                                     truncation=True))
        outputs = self._forward({**inputs, **self._pixels(images)})
        sizes = [(max(im.size),) * 2 if self.square else (im.size[1], im.size[0]) for im in images]
        logits = outputs.logits.float().clone()
        counts = torch.tensor([len(qs) for qs in queries], device=logits.device)
        padding = torch.arange(logits.shape[-1], device=logits.device)[None, :] >= counts[:, None]
        # the processor's padding queries must not win a box
        logits.masked_fill_(padding[:, None, :], torch.finfo(logits.dtype).min)
        # As post_process_grounded_object_detection, for the whole batch: best query per box,
        # sigmoid, corners scaled to the image; then one copy to the host.
        best = torch.max(logits, dim=-1)
        scores, labels = torch.sigmoid(best.values), best.indices
        boxes: Any = center_to_corners_format(outputs.pred_boxes.float())
        heights, widths = torch.tensor(sizes).unbind(1)
        boxes = boxes * torch.stack([widths, heights, widths, heights], dim=1).unsqueeze(1).to(scores.device)
        return [nms(found, self.nms_iou) if self.nms_iou is not None else found
                for found in _detections(scores, labels, boxes, self.threshold,
                                         lambda i, lab: [queries[i][lab]] if lab < len(queries[i]) else [])]


def owlv2(model: str = DEFAULT_OWLV2, **kwargs) -> OwlDetector:
    detector = OwlDetector(model=model, **kwargs)
    detector.name = "owlv2"
    return detector


def load_aliases(path: str | Path | None = None) -> dict[str, list[str]]:
    """Our object name -> detector class names. Default: ``spatialprobe/data/coco_aliases.json``."""
    if path is None:
        text = (resources.files("spatialprobe") / "data" / "coco_aliases.json").read_text("utf-8")
    else:
        text = Path(path).read_text("utf-8")
    raw = json.loads(text)
    aliases = raw.get("aliases", raw)
    return {k.lower(): ([v] if isinstance(v, str) else list(v)) for k, v in aliases.items()
            if not k.startswith("_")}


def classes_for(name: str, aliases: dict[str, list[str]]) -> list[str]:
    """Detector classes that count as ``name``: its aliases, else the name itself."""
    return [c.lower() for c in aliases.get(name.lower(), [name])]


class DetrDetector(_TorchModel):
    """A closed-set detector (COCO DETR by default); detections are renamed to our object names."""

    name = "detr"

    def __init__(self, model: str = DEFAULT_DETR, threshold: float = 0.5,
                 aliases: str | None = None, device: str = "auto", preprocess: str = "processor"):
        from transformers import AutoImageProcessor, AutoModelForObjectDetection

        self.model_name, self.threshold, self.aliases_path = model, threshold, aliases
        self.aliases = load_aliases(aliases)
        self.processor = load_pretrained(AutoImageProcessor, model, "detector processor")
        self._setup(load_pretrained(AutoModelForObjectDetection, model, "detector", dtype="fp32"), device, preprocess)
        self.id2label = {int(k): v.lower() for k, v in self.model.config.id2label.items()}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_name, "threshold": self.threshold,
                "aliases": self.aliases_path or "builtin:coco_aliases.json", **self._settings()}

    def detect(self, images: Sequence[Any], queries: Sequence[Sequence[str]]) -> list[list[Detection]]:
        import torch
        from transformers.image_transforms import center_to_corners_format

        images = [im.convert("RGB") for im in images]
        outputs = self._forward(self._pixels(images))
        # As post_process_object_detection, for the whole batch, then one copy to the host.
        prob = torch.nn.functional.softmax(outputs.logits.float(), -1)
        scores, labels = prob[..., :-1].max(-1)
        boxes: Any = center_to_corners_format(outputs.pred_boxes.float())
        heights = torch.Tensor([im.size[1] for im in images])
        widths = torch.Tensor([im.size[0] for im in images])
        boxes = boxes * torch.stack([widths, heights, widths, heights], dim=1).to(scores.device)[:, None, :]
        wanted = [{q: set(classes_for(q, self.aliases)) for q in qs} for qs in queries]

        def names(i: int, lab: int) -> list[str]:
            cls = self.id2label.get(lab, "")
            return [q for q, classes in wanted[i].items() if cls in classes]

        return _detections(scores, labels, boxes, self.threshold, names)


class HFDepth(_TorchModel):
    """Monocular depth through ``AutoModelForDepthEstimation``, returned as depth at image size.

    ``predicts="auto"`` reads the config: metric checkpoints predict depth, all others
    disparity (relative inverse depth), which is inverted with ``shift`` (see detectors.depth).
    """

    name = "dpt"

    def __init__(self, model: str = DEFAULT_DPT, predicts: str = "auto", shift: float = 0.0,
                 device: str = "auto", preprocess: str = "processor"):
        from transformers import AutoImageProcessor, AutoModelForDepthEstimation

        self.model_name, self.shift = model, shift
        self.processor = load_pretrained(AutoImageProcessor, model, "depth processor")
        self._setup(load_pretrained(AutoModelForDepthEstimation, model, "depth model", dtype="fp32"), device,
                    preprocess)
        self.predicts = predicts_of_config(self.model.config) if predicts == "auto" else predicts

    def describe(self) -> dict[str, Any]:
        conversion = ("none (model predicts depth)" if self.predicts == "depth"
                      else "depth = 1 / max(disparity - shift, 1e-6)")
        return {"name": self.name, "model": self.model_name, "predicts": self.predicts,
                "conversion": conversion, "shift": self.shift, **self._settings()}

    def estimate(self, images: Sequence[Any]) -> list[np.ndarray]:
        import torch

        images = [im.convert("RGB") for im in images]
        predicted = self._forward(self._pixels(images)).predicted_depth.float()
        # As post_process_depth_estimation (bicubic to each image's size), one call per size.
        maps: list[Any] = [None] * len(images)
        for size in {(im.size[1], im.size[0]) for im in images}:
            index = [i for i, im in enumerate(images) if (im.size[1], im.size[0]) == size]
            resized = torch.nn.functional.interpolate(predicted[index].unsqueeze(1), size=size,
                                                      mode="bicubic", align_corners=False)
            for i, depth in zip(index, resized[:, 0].cpu().numpy(), strict=True):
                maps[i] = to_depth(depth, self.predicts, shift=self.shift)
        return maps


def _detections(scores, labels, boxes, threshold: float, names) -> list[list[Detection]]:
    """Detections above ``threshold`` per image from (batch, boxes) tensors, copied to the host
    once; ``names(image, label)`` lists our object names that a box of ``label`` counts as."""
    keep = (scores > threshold).cpu().tolist()
    scores, labels, boxes = scores.cpu().tolist(), labels.cpu().tolist(), boxes.cpu().tolist()
    results = []
    for i, kept in enumerate(keep):
        results.append([Detection(name, as_box(boxes[i][j]), float(scores[i][j]))
                        for j in range(len(kept)) if kept[j] for name in names(i, int(labels[i][j]))])
    return results


def depth_anything(model: str = DEFAULT_DEPTH_ANYTHING, **kwargs) -> HFDepth:
    estimator = HFDepth(model=model, **kwargs)
    estimator.name = "depth-anything"
    return estimator
