"""Today's (before the fast path) judge adapters, kept verbatim as the reference.

The processor preprocesses, its post-processing decodes each image, and every box is copied to
Python on its own. Used by tests/test_judge_fast.py and bench/judge_throughput.py (``--plain``).
"""

import torch

from spatialprobe.detectors.base import Detection, as_box, nms
from spatialprobe.detectors.depth import to_depth
from spatialprobe.detectors.hf import DetrDetector, HFDepth, OwlDetector, classes_for


class PlainOwl(OwlDetector):
    def detect(self, images, queries):
        images = [im.convert("RGB") for im in images]
        texts = [[self.template.format(q) for q in qs] for qs in queries]
        inputs = self.processor(text=texts, images=images, return_tensors="pt",
                                padding="max_length", truncation=True)
        outputs = self._forward(inputs)
        sizes = [(max(im.size),) * 2 if self.square else (im.size[1], im.size[0]) for im in images]
        logits = outputs.logits.float().clone()
        for i, qs in enumerate(queries):
            logits[i, :, len(qs):] = torch.finfo(logits.dtype).min
        outputs.logits = logits
        outputs.pred_boxes = outputs.pred_boxes.float()
        processed = self.processor.post_process_grounded_object_detection(
            outputs=outputs, threshold=self.threshold, target_sizes=torch.tensor(sizes))
        results = []
        for qs, out in zip(queries, processed, strict=True):
            found = [Detection(qs[int(lab)], as_box(box.tolist()), float(score))
                     for score, lab, box in zip(out["scores"], out["labels"], out["boxes"], strict=True)
                     if int(lab) < len(qs)]
            results.append(nms(found, self.nms_iou) if self.nms_iou is not None else found)
        return results


class PlainDetr(DetrDetector):
    def detect(self, images, queries):
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


class PlainDepth(HFDepth):
    def estimate(self, images):
        images = [im.convert("RGB") for im in images]
        outputs = self._forward(self.processor(images=images, return_tensors="pt"))
        outputs.predicted_depth = outputs.predicted_depth.float()
        processed = self.processor.post_process_depth_estimation(
            outputs, target_sizes=[(im.size[1], im.size[0]) for im in images])
        return [to_depth(p["predicted_depth"].cpu().numpy(), self.predicts, shift=self.shift)
                for p in processed]
