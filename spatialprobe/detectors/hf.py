"""Detector and depth adapters over transformers checkpoints (or local directories).

* :class:`OwlDetector` - open-vocabulary OWL-ViT / OWLv2: one text query per object name.
* :class:`DetrDetector` - closed-set COCO detectors (DETR and any ``AutoModelForObjectDetection``)
  with an editable alias map from our object names to the detector's class names.
* :class:`HFDepth` - ``AutoModelForDepthEstimation`` (DPT, Depth Anything, ...); disparity is
  converted to depth by :func:`detectors.depth.to_depth`.

Models load through ``from_pretrained`` only; ``device="auto"`` picks CUDA when present, where
inference runs under float16 autocast.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..loading import load_pretrained
from ..probes.vl_common import resolve_device
from .base import Detection, as_box, nms
from .depth import predicts_of_config, to_depth

DEFAULT_OWLVIT = "google/owlvit-base-patch32"
DEFAULT_OWLV2 = "google/owlv2-base-patch16-ensemble"
DEFAULT_DETR = "facebook/detr-resnet-50"
DEFAULT_DPT = "Intel/dpt-large"
DEFAULT_DEPTH_ANYTHING = "LiheYoung/depth-anything-small-hf"


class _TorchModel:
    def _setup(self, model, device: str):
        import torch

        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self._autocast = (torch.autocast("cuda", dtype=torch.float16)
                          if self.device.startswith("cuda") else None)

    def _forward(self, inputs):
        import contextlib

        import torch

        inputs = inputs.to(self.device)
        with torch.inference_mode(), (self._autocast or contextlib.nullcontext()):
            return self.model(**inputs)


class OwlDetector(_TorchModel):
    """OWL-ViT or OWLv2: query ``template.format(name)`` per object, keep boxes above ``threshold``."""

    name = "owlvit"

    def __init__(self, model: str = DEFAULT_OWLVIT, threshold: float = 0.1,
                 template: str = "a photo of a {}", nms_iou: float | None = None,
                 device: str = "auto"):
        from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor

        self.model_name, self.threshold, self.template, self.nms_iou = model, threshold, template, nms_iou
        self.processor = load_pretrained(AutoProcessor, model, "detector processor")
        self._setup(load_pretrained(AutoModelForZeroShotObjectDetection, model, "detector"), device)
        # OWLv2 pads images to a square before predicting, so its boxes are relative to that square.
        self.square = self.model.config.model_type == "owlv2"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_name, "threshold": self.threshold,
                "template": self.template, "nms_iou": self.nms_iou}

    def detect(self, images: Sequence[Any], queries: Sequence[Sequence[str]]) -> list[list[Detection]]:
        import torch

        images = [im.convert("RGB") for im in images]
        texts = [[self.template.format(q) for q in qs] for qs in queries]
        # Fixed-length padding: every image's queries stack into one tensor, as OWL-ViT expects.
        inputs = self.processor(text=texts, images=images, return_tensors="pt",
                                padding="max_length", truncation=True)
        outputs = self._forward(inputs)
        sizes = [(max(im.size),) * 2 if self.square else (im.size[1], im.size[0]) for im in images]
        logits = outputs.logits.float().clone()
        for i, qs in enumerate(queries):  # the processor's padding queries must not win a box
            logits[i, :, len(qs):] = torch.finfo(logits.dtype).min
        outputs.logits = logits
        outputs.pred_boxes = outputs.pred_boxes.float()
        processed = self.processor.post_process_grounded_object_detection(
            outputs=outputs, threshold=self.threshold, target_sizes=torch.tensor(sizes))
        results = []
        for qs, out in zip(queries, processed, strict=True):
            found = [Detection(qs[int(lab)], as_box(box.tolist()), float(score))
                     for score, lab, box in zip(out["scores"], out["labels"], out["boxes"], strict=True)
                     if int(lab) < len(qs)]  # labels beyond qs are the processor's padding queries
            results.append(nms(found, self.nms_iou) if self.nms_iou is not None else found)
        return results


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
                 aliases: str | None = None, device: str = "auto"):
        from transformers import AutoImageProcessor, AutoModelForObjectDetection

        self.model_name, self.threshold, self.aliases_path = model, threshold, aliases
        self.aliases = load_aliases(aliases)
        self.processor = load_pretrained(AutoImageProcessor, model, "detector processor")
        self._setup(load_pretrained(AutoModelForObjectDetection, model, "detector"), device)
        self.id2label = {int(k): v.lower() for k, v in self.model.config.id2label.items()}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_name, "threshold": self.threshold,
                "aliases": self.aliases_path or "builtin:coco_aliases.json"}

    def detect(self, images: Sequence[Any], queries: Sequence[Sequence[str]]) -> list[list[Detection]]:
        images = [im.convert("RGB") for im in images]
        outputs = self._forward(self.processor(images=images, return_tensors="pt"))
        outputs.logits = outputs.logits.float()
        outputs.pred_boxes = outputs.pred_boxes.float()
        processed = self.processor.post_process_object_detection(
            outputs, threshold=self.threshold, target_sizes=[(im.size[1], im.size[0]) for im in images])
        results = []
        for qs, out in zip(queries, processed, strict=True):
            wanted = {q: set(classes_for(q, self.aliases)) for q in qs}
            found = []
            for score, lab, box in zip(out["scores"], out["labels"], out["boxes"], strict=True):
                cls = self.id2label.get(int(lab), "")
                found += [Detection(q, as_box(box.tolist()), float(score))
                          for q, classes in wanted.items() if cls in classes]
            results.append(found)
        return results


class HFDepth(_TorchModel):
    """Monocular depth through ``AutoModelForDepthEstimation``, returned as depth at image size.

    ``predicts="auto"`` reads the config: metric checkpoints predict depth, all others
    disparity (relative inverse depth), which is inverted with ``shift`` (see detectors.depth).
    """

    name = "dpt"

    def __init__(self, model: str = DEFAULT_DPT, predicts: str = "auto", shift: float = 0.0,
                 device: str = "auto"):
        from transformers import AutoImageProcessor, AutoModelForDepthEstimation

        self.model_name, self.shift = model, shift
        self.processor = load_pretrained(AutoImageProcessor, model, "depth processor")
        self._setup(load_pretrained(AutoModelForDepthEstimation, model, "depth model"), device)
        self.predicts = predicts_of_config(self.model.config) if predicts == "auto" else predicts

    def describe(self) -> dict[str, Any]:
        conversion = ("none (model predicts depth)" if self.predicts == "depth"
                      else "depth = 1 / max(disparity - shift, 1e-6)")
        return {"name": self.name, "model": self.model_name, "predicts": self.predicts,
                "conversion": conversion, "shift": self.shift}

    def estimate(self, images: Sequence[Any]) -> list[np.ndarray]:
        images = [im.convert("RGB") for im in images]
        outputs = self._forward(self.processor(images=images, return_tensors="pt"))
        outputs.predicted_depth = outputs.predicted_depth.float()
        processed = self.processor.post_process_depth_estimation(
            outputs, target_sizes=[(im.size[1], im.size[0]) for im in images])
        return [to_depth(p["predicted_depth"].cpu().numpy(), self.predicts, shift=self.shift)
                for p in processed]


def depth_anything(model: str = DEFAULT_DEPTH_ANYTHING, **kwargs) -> HFDepth:
    estimator = HFDepth(model=model, **kwargs)
    estimator.name = "depth-anything"
    return estimator
