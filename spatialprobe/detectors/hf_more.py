"""The benchmarks' detectors through transformers, without mmdetection/mmcv or a CUDA build.

* :class:`Mask2FormerDetector` - GenEval's detector: Mask2Former COCO instance segmentation
  (GenEval: mmdetection 2.x ``mask2former_swin-s-p4-w7-224_lsj_8x2_50e_coco``); each instance's
  box is the tight box of its binary mask (mmdet's ``mask2bbox``, :func:`mask_to_box`), classes
  are renamed to our object names through the COCO alias map of the DETR adapter.
* :class:`GroundingDinoDetector` - open-vocabulary Grounding DINO: the object names joined into
  one ``"cat. dog."`` prompt; each box's predicted phrase is mapped back to the queried name.

Both load through ``from_pretrained`` only and follow the device rule of :mod:`detectors.hf`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from spatialprobe.detectors.base import Detection, as_box
from spatialprobe.detectors.hf import _TorchModel, classes_for, load_aliases
from spatialprobe.detectors.rules import Box
from spatialprobe.loading import load_pretrained

DEFAULT_MASK2FORMER = "facebook/mask2former-swin-small-coco-instance"
DEFAULT_GROUNDING_DINO = "IDEA-Research/grounding-dino-tiny"


def mask_to_box(mask: np.ndarray) -> Box:
    """The tight box of a binary (height, width) mask, as mmdetection's ``mask2bbox``.

    ``(first column, first row, last column + 1, last row + 1)``: the box covers whole pixels, so
    a one-pixel mask at (x, y) is ``(x, y, x + 1, y + 1)``; an empty mask is ``(0, 0, 0, 0)``.
    """
    mask = np.asarray(mask, dtype=bool)
    columns, rows = np.flatnonzero(mask.any(axis=0)), np.flatnonzero(mask.any(axis=1))
    if len(columns) == 0 or len(rows) == 0:
        return (0.0, 0.0, 0.0, 0.0)
    return (float(columns[0]), float(rows[0]), float(columns[-1] + 1), float(rows[-1] + 1))


class Mask2FormerDetector(_TorchModel):
    """Closed-set COCO instance segmentation; detections are the instances scoring above ``threshold``.

    Scores are transformers' ``post_process_instance_segmentation`` scores (class probability x
    mean mask probability inside the mask, as mmdetection's Mask2Former head computes them);
    GenEval keeps instances scoring ``> 0.3`` (its ``threshold`` option), the default here.
    """

    name = "mask2former"

    def __init__(self, model: str = DEFAULT_MASK2FORMER, threshold: float = 0.3,
                 aliases: str | None = None, device: str = "auto"):
        from transformers import AutoImageProcessor, Mask2FormerForUniversalSegmentation

        self.model_name, self.threshold, self.aliases_path = model, threshold, aliases
        self.aliases = load_aliases(aliases)
        self.processor = load_pretrained(AutoImageProcessor, model, "detector processor")
        self._setup(load_pretrained(Mask2FormerForUniversalSegmentation, model, "detector", dtype="fp32"), device)
        self.id2label = {int(k): v.lower() for k, v in self.model.config.id2label.items()}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_name, "threshold": self.threshold,
                "aliases": self.aliases_path or "builtin:coco_aliases.json", "box": "tight box of the mask"}

    def detect(self, images: Sequence[Any], queries: Sequence[Sequence[str]]) -> list[list[Detection]]:
        images = [im.convert("RGB") for im in images]
        inputs = self.processor(images=images, return_tensors="pt")
        outputs = self._forward(inputs)
        results = []
        for i, (image, qs) in enumerate(zip(images, queries, strict=True)):
            instances = self._instances(outputs, inputs["pixel_mask"][i], i, (image.size[1], image.size[0]))
            wanted = {q: set(classes_for(q, self.aliases)) for q in qs}
            results.append([Detection(q, box, score) for cls, box, score in instances
                            for q, classes in wanted.items() if cls in classes])
        return results

    def _instances(self, outputs, pixel_mask, i: int, size: tuple[int, int]) -> list[tuple[str, Box, float]]:
        """(class name, box, score) of image ``i``'s instances scoring above the threshold."""
        import torch

        # The processor pads a batch to a common size; transformers' post-processing stretches the
        # whole padded mask over the image, so the mask logits are cropped to the image first
        # (as mmdetection crops to ``img_shape``): upsampled to the input size, then cut.
        height, width = int(pixel_mask.any(dim=1).sum()), int(pixel_mask.any(dim=0).sum())
        masks = torch.nn.functional.interpolate(
            outputs.masks_queries_logits[i:i + 1].float(), size=tuple(pixel_mask.shape),
            mode="bilinear", align_corners=False)[..., :height, :width]
        # on the CPU: the post-processing indexes a CPU segmentation map with the masks
        single = SimpleNamespace(class_queries_logits=outputs.class_queries_logits[i:i + 1].float().cpu(),
                                 masks_queries_logits=masks.cpu())
        found = self.processor.post_process_instance_segmentation(
            single, threshold=self.threshold, target_sizes=[size], return_binary_maps=True)[0]
        maps = found["segmentation"]
        return [(self.id2label.get(int(info["label_id"]), ""), mask_to_box(maps[k].cpu().numpy()),
                 float(info["score"]))
                for k, info in enumerate(found["segments_info"])
                if info["score"] > self.threshold]  # GenEval keeps scores strictly above its cut


def phrase_words(text: str) -> str:
    """Lower-case words separated by single spaces, punctuation dropped: ``"Traffic-light."`` ->
    ``"traffic light"``; phrases and queries are compared in this form."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def query_of_phrase(phrase: str, queries: Sequence[str]) -> str | None:
    """The queried object name a predicted phrase names, or None.

    The phrase equal to a query names it; else the first query whose words occur as whole words
    in the phrase (Grounding DINO's ``Model.phrases2classes`` takes the first class contained in
    the phrase; whole words keep ``cat`` out of ``bobcat``). A phrase naming no query is dropped.
    """
    words = phrase_words(phrase)
    for query in queries:
        if phrase_words(query) == words:
            return query
    for query in queries:
        if phrase_words(query) and re.search(rf"\b{re.escape(phrase_words(query))}\b", words):
            return query
    return None


def grounding_prompt(queries: Sequence[str]) -> str:
    """``["cat", "traffic light"]`` -> ``"cat. traffic light."``, lower case, as Grounding DINO expects."""
    return " ".join(f"{q.strip().lower()}." for q in queries)


class GroundingDinoDetector(_TorchModel):
    """Grounding DINO: boxes whose best token scores above ``threshold`` (the box threshold), named by
    the tokens scoring above ``text_threshold``; defaults 0.35 / 0.25 as the GroundingDINO README."""

    name = "grounding-dino"

    def __init__(self, model: str = DEFAULT_GROUNDING_DINO, threshold: float = 0.35,
                 text_threshold: float = 0.25, device: str = "auto"):
        from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor

        self.model_name, self.threshold, self.text_threshold = model, threshold, text_threshold
        self.processor = load_pretrained(AutoProcessor, model, "detector processor")
        self._setup(load_pretrained(AutoModelForZeroShotObjectDetection, model, "detector", dtype="fp32"), device)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_name, "threshold": self.threshold,
                "text_threshold": self.text_threshold, "prompt": "'<name>. <name>.'"}

    def detect(self, images: Sequence[Any], queries: Sequence[Sequence[str]]) -> list[list[Detection]]:
        images = [im.convert("RGB") for im in images]
        inputs = self.processor(images=images, text=[grounding_prompt(qs) for qs in queries],
                                return_tensors="pt", padding=True)
        outputs = self._forward(inputs)
        outputs.logits, outputs.pred_boxes = outputs.logits.float(), outputs.pred_boxes.float()
        post_process = self.processor.post_process_grounded_object_detection
        # older transformers (4.4x) call the box threshold ``box_threshold`` and the phrases ``labels``
        box_arg = "threshold" if "threshold" in inspect.signature(post_process).parameters else "box_threshold"
        processed = post_process(outputs, inputs["input_ids"], text_threshold=self.text_threshold,
                                 target_sizes=[(im.size[1], im.size[0]) for im in images],
                                 **{box_arg: self.threshold})
        results = []
        for qs, out in zip(queries, processed, strict=True):
            found = []
            phrases = out["text_labels"] if "text_labels" in out else out["labels"]
            for score, box, phrase in zip(out["scores"], out["boxes"], phrases, strict=True):
                query = query_of_phrase(phrase, qs)
                if query is not None:
                    found.append(Detection(query, as_box(box.tolist()), float(score)))
            results.append(found)
        return results
