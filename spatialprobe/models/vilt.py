"""ViLT's masked-LM head as a cloze scorer (``dandelin/vilt-b32-mlm`` or any ViltForMaskedLM).

ViLT always reads an image with the text. Which image is an option:

* ``image="blank"`` (default): a neutral mid-gray 384x384 image for every request, so the
  answer rests on the text and ViLT's vision-language pretraining, not on a picture.
* ``image="request"``: the image each :class:`ScoreRequest` carries (``request.image``, a PIL
  image or a path); requests without one get the blank image. :func:`attach_images` fills
  ``request.image`` from a synthesis run by instance id (the image store's ``prompt_id``).
* ``image=RUN_DIR``: a synthesis run directory; each request gets the first image of the
  prompt whose two objects occur, in the same order, in the request text (the CLI path, where
  requests carry no instance ids). Requests that match no prompt get the blank image.

Scores follow :mod:`spatialprobe.models.base`: the mean log-probability of a word's pieces,
one ``[MASK]`` per piece. ViLT reads at most 40 text tokens (its position embeddings); a
prompt longer than that is an error rather than a silently truncated sentence.

Speed, as the masked-LM scorer: the words of a request are grouped by their number
of pieces ``n``, and the prompt with ``n`` masks is read **once** for every word of that length
(with its image): one forward pass per (prompt, image) when the answers are single pieces,
instead of one per answer. Identical (text, image) rows are computed once; each distinct image
of a batch goes through the image processor once. The scores are those of one pass per word:
the same text and image give the same logits.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from spatialprobe.errors import UsageError
from spatialprobe.loading import autocast, device_name, load_pretrained
from spatialprobe.models.base import Declared, Option, Progress, ScoreRequest
from spatialprobe.models.lm_weights import weights_hash
from spatialprobe.registry import component
from spatialprobe.vision import blank_image, open_image


def image_option(value: str) -> str:
    """``blank``/``request`` as they are; a synthesis run as its absolute path (a run's identity
    must not depend on the directory it was started from)."""
    value = str(value)
    return value if value in ("blank", "request") else str(Path(value).resolve())


def attach_images(requests: Sequence[ScoreRequest], ids: Sequence[str], store) -> list[ScoreRequest]:
    """Copies of ``requests`` whose ``image`` is the first image stored for each id."""
    first: dict[str, Path] = {}
    for record in store.images():
        first.setdefault(record.prompt_id, record.path)
    return [dataclasses.replace(r, image=first.get(i)) for r, i in zip(requests, ids, strict=True)]


def _images_by_objects(run_dir: str | Path) -> list[tuple[str, str, Path]]:
    from spatialprobe.imagestore import ImageStore

    if not (Path(run_dir) / "run.sqlite").is_file():  # do not create a store from a typo
        raise UsageError(f"image option {str(run_dir)!r} is neither 'blank', 'request' nor a "
                         "synthesis run directory (one holding run.sqlite)")
    rows, seen = [], set()
    for record in ImageStore(run_dir).images():
        a, b = record.meta.get("obj_a"), record.meta.get("obj_b")
        if a and b and record.prompt_id not in seen:
            seen.add(record.prompt_id)
            rows.append((a.lower(), b.lower(), record.path))
    if not rows:
        raise UsageError(f"{run_dir} holds no finished images whose prompts name obj_a and obj_b")
    return rows


def _match_image(text: str, rows: list[tuple[str, str, Path]]) -> Path | None:
    text = text.lower()
    for a, b, path in rows:
        pos_a = re.search(rf"\b{re.escape(a)}\b", text)
        pos_b = re.search(rf"\b{re.escape(b)}\b", text)
        if pos_a and pos_b and pos_a.start() < pos_b.start():
            return path
    return None


@component("model", "vilt", "ViLT masked-LM (dandelin/vilt-b32-mlm) with a blank or synthesized image")
class ViltMaskedLMScorer(Declared):
    """Cloze scoring with ViltForMaskedLM; see the module docstring for the image options."""
    sees_images: ClassVar[bool] = True
    specificity: ClassVar[int] = 10
    model_types: ClassVar[tuple[str, ...]] = ("vilt",)

    @classmethod
    def prefers(cls, config: Mapping[str, Any]) -> bool:
        """First for a ViLT without a question-answering head."""
        from spatialprobe.models.base import architectures

        return not any(a.endswith("ForQuestionAnswering") for a in architectures(config))


    name = "vilt"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("cloze",)
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
        import torch

        self._torch = torch

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_name, "image": self.image_option,
                "weights_revision": getattr(self.model.config, "_commit_hash", None),
                "weights_sha256": weights_hash(self.model),
                "device": str(self.device)}

    def _image_key(self, request: ScoreRequest):
        """Which image the request is read with: None for the blank image, else a path or an image."""
        if self.image_option == "blank":
            return None
        if self.image_option == "request":
            return request.image
        assert self._by_objects is not None  # __init__ read the run for any other image option
        return _match_image(request.prefix + " " + request.suffix, self._by_objects)

    def _open(self, key):
        return self.blank if key is None else open_image(key)

    def _variants(self, request: ScoreRequest) -> list[tuple[str, list[list[int]], list[int]]]:
        """(text with one [MASK] per piece, the words' piece ids, the words' positions in
        ``request.options``) for each number of pieces among the request's words, first seen first."""
        mask = self.tokenizer.mask_token
        groups: dict[int, tuple[list[list[int]], list[int]]] = {}
        for at, word in enumerate(request.options):
            pieces = self.tokenizer.encode(" " + word.strip(), add_special_tokens=False)
            if not pieces:
                raise UsageError(f"answer word {word!r} tokenizes to nothing")
            words, where = groups.setdefault(len(pieces), ([], []))
            words.append(pieces)
            where.append(at)
        return [(f"{request.prefix.rstrip()} {' '.join([mask] * n)}{request.suffix}".strip(), words, where)
                for n, (words, where) in groups.items()]

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        rows: dict[tuple[str, Any], int] = {}  # distinct (text, image): one forward row each
        reads: list[tuple[int, int, list[list[int]], list[int]]] = []  # (request, row, pieces, where)
        images: dict[Any, Any] = {}  # image key -> opened image, so each is opened once
        last_row = []  # per request: its last row, for progress
        for index, request in enumerate(requests):
            key = self._image_key(request)
            image_id = key if key is None or isinstance(key, str | Path) else id(key)
            if image_id not in images:
                images[image_id] = self._open(key)
            mine = [-1]
            for text, words, where in self._variants(request):
                mine.append(rows.setdefault((text, image_id), len(rows)))
                reads.append((index, mine[-1], words, where))
            last_row.append(max(mine))
        texts = [text for text, _ in rows]
        self._check_lengths(texts, {row: index for index, row, _, _ in reversed(reads)})
        by_row: dict[int, list[tuple[int, list[list[int]], list[int]]]] = {}
        for index, row, words, where in reads:
            by_row.setdefault(row, []).append((index, words, where))
        scores: list[list[float]] = [[0.0] * len(r.options) for r in requests]
        done_requests = 0
        keys = list(rows)
        for start in range(0, len(keys), self.batch_size):
            batch = range(start, min(start + self.batch_size, len(keys)))
            log_probs = self._mask_log_probs([keys[r][0] for r in batch], [images[keys[r][1]] for r in batch])
            for row in batch:
                for index, words, where in by_row.get(row, []):
                    at_masks = log_probs[row - start]
                    if len(at_masks) != len(words[0]):  # a literal [MASK] in the prompt text
                        raise UsageError(f"request {index}: expected {len(words[0])} [MASK] tokens, "
                                         f"found {len(at_masks)}")
                    pieces = self._torch.tensor(words, device=at_masks.device)
                    values = at_masks[self._torch.arange(pieces.shape[1], device=at_masks.device), pieces]
                    for at, value in zip(where, values.mean(dim=1).tolist(), strict=True):
                        scores[index][at] = value
            finished = sum(1 for last in last_row if last < batch.stop)
            if progress is not None and finished > done_requests:
                progress(finished - done_requests)
                done_requests = finished
        return [tuple(s) for s in scores]

    def _check_lengths(self, texts: list[str], first_request: dict[int, int]) -> None:
        limit = self.max_text_length
        for row, ids in enumerate(self.tokenizer(texts)["input_ids"] if texts else []):
            if len(ids) > limit:
                raise UsageError(f"request {first_request[row]}: {texts[row]!r} is {len(ids)} tokens with "
                                 f"[CLS]/[SEP]; ViLT reads at most {limit} (shorten the prompt)")

    def _mask_log_probs(self, texts: list[str], images: list) -> list:
        """Per row, the log-probabilities over the vocabulary at its [MASK] positions (masks x vocab).
        Each distinct image of the batch goes through the image processor once."""
        import torch

        inputs = dict(self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_text_length,
                                     return_tensors="pt"))
        distinct = list({id(image): image for image in images}.values())
        which = torch.tensor([[id(d) for d in distinct].index(id(image)) for image in images])
        pixels = self.processor.image_processor(images=distinct, return_tensors="pt")
        inputs.update({k: v[which] for k, v in pixels.items()})
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with torch.no_grad(), autocast(self.device):
            logits = self.model(**inputs).logits
        is_mask = inputs["input_ids"] == self.tokenizer.mask_token_id
        return [torch.log_softmax(logits[row, is_mask[row]].float(), dim=-1) for row in range(len(texts))]
