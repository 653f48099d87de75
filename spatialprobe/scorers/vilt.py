"""ViLT's masked-LM head as a cloze scorer (``dandelin/vilt-b32-mlm`` or any ViltForMaskedLM).

ViLT always reads an image with the text. Which image is an option:

* ``image="blank"`` (default): a neutral mid-gray 384x384 image for every request, so the
  answer rests on the text and ViLT's vision-language pretraining, not on a picture.
* ``image="request"``: the image each :class:`ClozeRequest` carries (``request.image``, a PIL
  image or a path); requests without one get the blank image. :func:`attach_images` fills
  ``request.image`` from a synthesis run by instance id (the image store's ``prompt_id``).
* ``image=RUN_DIR``: a synthesis run directory; each request gets the first image of the
  prompt whose two objects occur, in the same order, in the request text (the CLI path, where
  requests carry no instance ids). Requests that match no prompt get the blank image.

Scores follow :mod:`spatialprobe.scorers.base`: the mean log-probability of a word's pieces,
one ``[MASK]`` per piece. ViLT reads at most 40 text tokens (its position embeddings); a
prompt longer than that is an error rather than a silently truncated sentence.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from spatialprobe.loading import autocast, device_name, load_pretrained
from spatialprobe.scorers.base import ClozeRequest, Option, Progress
from spatialprobe.scorers.masked_lm import weights_hash
from spatialprobe.vision import blank_image, open_image


def image_option(value: str) -> str:
    """``blank``/``request`` as they are; a synthesis run as its absolute path (a run's identity
    must not depend on the directory it was started from)."""
    value = str(value)
    return value if value in ("blank", "request") else str(Path(value).resolve())


def attach_images(requests: Sequence[ClozeRequest], ids: Sequence[str], store) -> list[ClozeRequest]:
    """Copies of ``requests`` whose ``image`` is the first image stored for each id."""
    first: dict[str, Path] = {}
    for record in store.images():
        first.setdefault(record.prompt_id, record.path)
    return [dataclasses.replace(r, image=first.get(i)) for r, i in zip(requests, ids, strict=True)]


def _images_by_objects(run_dir: str | Path) -> list[tuple[str, str, Path]]:
    from spatialprobe.imagestore import ImageStore

    if not (Path(run_dir) / "run.sqlite").is_file():  # do not create a store from a typo
        raise ValueError(f"image option {str(run_dir)!r} is neither 'blank', 'request' nor a "
                         "synthesis run directory (one holding run.sqlite)")
    rows, seen = [], set()
    for record in ImageStore(run_dir).images():
        a, b = record.meta.get("obj_a"), record.meta.get("obj_b")
        if a and b and record.prompt_id not in seen:
            seen.add(record.prompt_id)
            rows.append((a.lower(), b.lower(), record.path))
    if not rows:
        raise ValueError(f"{run_dir} holds no finished images whose prompts name obj_a and obj_b")
    return rows


def _match_image(text: str, rows: list[tuple[str, str, Path]]) -> Path | None:
    text = text.lower()
    for a, b, path in rows:
        pos_a = re.search(rf"\b{re.escape(a)}\b", text)
        pos_b = re.search(rf"\b{re.escape(b)}\b", text)
        if pos_a and pos_b and pos_a.start() < pos_b.start():
            return path
    return None


class ViltMaskedLMScorer:
    """Cloze scoring with ViltForMaskedLM; see the module docstring for the image options."""

    name = "vilt"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    options: ClassVar[dict[str, Option]] = {
        "image": Option(image_option, "blank", "blank (gray image), request (each request's image) "
                        "or a synthesis run directory")}

    def __init__(self, model: str = "dandelin/vilt-b32-mlm", image: str = "blank",
                 device: str = "auto", batch_size: int = 16, blank_size: int = 384):
        from transformers import ViltForMaskedLM, ViltProcessor

        self.model_name = str(model)
        self.image_option = str(image)
        self.device = device_name(device)
        self.batch_size = batch_size
        self._by_objects = None  # checked before the model loads: a typo fails at once
        if self.image_option not in ("blank", "request"):
            self._by_objects = _images_by_objects(self.image_option)
        self.processor = load_pretrained(ViltProcessor, self.model_name, "ViLT processor")
        self.model = load_pretrained(ViltForMaskedLM, self.model_name, "ViLT masked-LM model",
                                     dtype="fp32")  # float32 weights, autocast on CUDA
        self.model.to(self.device).eval()
        self.tokenizer = self.processor.tokenizer
        # ViLT's text position embeddings hold 40 tokens; a saved tokenizer may not say so.
        self.max_text_length = min(self.model.config.max_position_embeddings,
                                   self.tokenizer.model_max_length)
        self.blank = blank_image(blank_size)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_name, "image": self.image_option,
                "weights_revision": getattr(self.model.config, "_commit_hash", None),
                "weights_sha256": weights_hash(self.model),
                "device": str(self.device)}

    def _image_for(self, request: ClozeRequest):
        if self.image_option == "blank":
            return self.blank
        if self.image_option == "request":
            return open_image(request.image) if request.image is not None else self.blank
        assert self._by_objects is not None  # __init__ read the run for any other image option
        path = _match_image(request.prefix + " " + request.suffix, self._by_objects)
        return open_image(path) if path is not None else self.blank

    def _variants(self, request: ClozeRequest) -> list[tuple[str, list[int]]]:
        """(text with one [MASK] per piece, piece ids) for each answer word."""
        mask = self.tokenizer.mask_token
        out = []
        for word in request.words:
            pieces = self.tokenizer.encode(" " + word.strip(), add_special_tokens=False)
            if not pieces:
                raise ValueError(f"answer word {word!r} tokenizes to nothing")
            masks = " ".join([mask] * len(pieces))
            out.append((f"{request.prefix.rstrip()} {masks}{request.suffix}".strip(), pieces))
        return out

    def score(self, requests: Sequence[ClozeRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        import torch

        jobs = []  # (request index, text, piece ids, image)
        limit = self.max_text_length
        for index, request in enumerate(requests):
            image = self._image_for(request)
            for text, pieces in self._variants(request):
                length = len(self.tokenizer(text)["input_ids"])
                if length > limit:
                    raise ValueError(f"request {index}: {text!r} is {length} tokens with [CLS]/[SEP]; "
                                     f"ViLT reads at most {limit} (shorten the prompt)")
                jobs.append((index, text, pieces, image))
        scores: list[list[float]] = [[] for _ in requests]
        done_requests = 0
        for start in range(0, len(jobs), self.batch_size):
            batch = jobs[start:start + self.batch_size]
            inputs = self.processor(images=[j[3] for j in batch], text=[j[1] for j in batch],
                                    padding=True, truncation=True, max_length=limit,
                                    return_tensors="pt")
            inputs = {k: v.to(self.device) for k, v in inputs.items()}
            with torch.no_grad(), autocast(self.device):
                logits = self.model(**inputs).logits.float()
            log_probs = torch.log_softmax(logits, dim=-1)
            mask_id = self.tokenizer.mask_token_id
            for row, (index, _, pieces, _) in enumerate(batch):
                positions = (inputs["input_ids"][row] == mask_id).nonzero().flatten()
                if len(positions) != len(pieces):  # a literal [MASK] in the prompt text
                    raise ValueError(f"request {index}: expected {len(pieces)} [MASK] tokens, "
                                     f"found {len(positions)}")
                values = log_probs[row, positions, torch.tensor(pieces, device=self.device)]
                scores[index].append(float(values.mean()))
            finished = sum(1 for i, s in enumerate(scores) if len(s) == len(requests[i].words))
            if progress is not None and finished > done_requests:
                progress(finished - done_requests)
                done_requests = finished
        return [tuple(s) for s in scores]
