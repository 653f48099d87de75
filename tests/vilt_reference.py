"""The ViLT scoring path as it was at commit a6d4cfb, kept as the reference.

``ViltMaskedLMScorer.score`` now reads every answer word with the same number of pieces from one
pass (one forward row per prompt and image for single-piece answers). This is the previous code,
unchanged but for living in a wrapper around a scorer: one forward row per answer word, the image
processed for every row. The tests check the new path against it score by score;
``bench/vilt_throughput.py`` times both side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spatialprobe.loading import autocast
from spatialprobe.models.base import Progress, ScoreRequest
from spatialprobe.models.vilt import _match_image
from spatialprobe.vision import open_image


class ReferenceVilt:
    """Today's scoring of a ``ViltMaskedLMScorer`` (same model, processor, image option, batch size)."""

    def __init__(self, scorer):
        self._scorer = scorer
        self.name, self.image_option, self.blank = scorer.name, scorer.image_option, scorer.blank
        self.processor, self.tokenizer, self.model = scorer.processor, scorer.tokenizer, scorer.model
        self.device, self.batch_size, self.max_text_length = scorer.device, scorer.batch_size, scorer.max_text_length
        self._by_objects = scorer._by_objects

    def describe(self) -> dict[str, Any]:
        return self._scorer.describe()

    def _image_for(self, request: ScoreRequest):
        if self.image_option == "blank":
            return self.blank
        if self.image_option == "request":
            return open_image(request.image) if request.image is not None else self.blank
        assert self._by_objects is not None  # __init__ read the run for any other image option
        path = _match_image(request.prefix + " " + request.suffix, self._by_objects)
        return open_image(path) if path is not None else self.blank

    def _variants(self, request: ScoreRequest) -> list[tuple[str, list[int]]]:
        """(text with one [MASK] per piece, piece ids) for each answer word."""
        mask = self.tokenizer.mask_token
        out = []
        for word in request.options:
            pieces = self.tokenizer.encode(" " + word.strip(), add_special_tokens=False)
            if not pieces:
                raise ValueError(f"answer word {word!r} tokenizes to nothing")
            masks = " ".join([mask] * len(pieces))
            out.append((f"{request.prefix.rstrip()} {masks}{request.suffix}".strip(), pieces))
        return out

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
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
            finished = sum(1 for i, s in enumerate(scores) if len(s) == len(requests[i].options))
            if progress is not None and finished > done_requests:
                progress(finished - done_requests)
                done_requests = finished
        return [tuple(s) for s in scores]
