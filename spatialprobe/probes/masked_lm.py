"""Cloze scoring with any transformers masked LM (BERT, RoBERTa, ALBERT, DeBERTa, ...).

How a request is scored (see :mod:`spatialprobe.probes.base`):

* The words of a request are grouped by their number of word pieces ``n``. For each group the
  prompt is encoded once with ``n`` consecutive mask tokens, so **one forward pass reads every
  answer of that length**. Most answer sets are single pieces: one pass per filled prompt.
* A word's score is the mean over its pieces of ``log p(piece_j | mask_j)``, all pieces read from
  the same pass (the pieces are predicted independently, as LAMA-style probes do).
* Tokenizers that mark a leading space (RoBERTa's byte-level BPE ``Ġ``, SentencePiece ``▁``) get
  the word tokenized with the space it has in the sentence: ``" larger"`` after ``"is "``. The
  prefix and suffix are encoded separately around the masks, so no piece crosses the mask.
* Identical encoded sequences are computed once; sequences are sorted by length and batched.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..loading import ModelLoadError, load_pretrained, resolve_device
from .base import ClozeRequest, Progress


def weights_hash(model) -> str:
    """sha256 over the model's parameters and buffers (names, shapes, bytes), first 16 hex digits."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


class MaskedLMScorer:
    """Scores cloze requests with ``AutoModelForMaskedLM.from_pretrained(model)``."""

    name = "hf-mlm"

    def __init__(self, model: str, device: str = "auto", batch_size: int = 64,
                 half: bool | None = None, model_obj=None, tokenizer=None):
        import torch
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self.model_name = model
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.tokenizer = tokenizer or load_pretrained(AutoTokenizer, model, "the tokenizer of")
        self.model = model_obj or load_pretrained(AutoModelForMaskedLM, model, "the masked LM")
        if self.tokenizer.mask_token_id is None:
            raise ModelLoadError(f"{model!r} has no mask token: it is not a masked language model.")
        self.half = (self.device.type == "cuda") if half is None else half
        self.model.eval().to(self.device)
        if self.half:
            self.model.half()
        self._weights_hash = weights_hash(self.model)
        self._torch = torch
        self._piece_cache: dict[tuple[str, bool], list[int]] = {}
        self._segment_cache: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
        self._head = self._find_head()

    def describe(self) -> dict[str, Any]:
        return {"scorer": self.name, "model": self.model_name, "weights_sha256": self._weights_hash,
                "device": str(self.device), "half": self.half, "batch_size": self.batch_size,
                "score": "mean log-probability of the answer's word pieces, one mask per piece"}

    # -- tokenization --------------------------------------------------------------------------
    def word_pieces(self, word: str, after_space: bool) -> list[int]:
        key = (word, after_space)
        if key not in self._piece_cache:
            text = (" " + word) if after_space else word
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            if not ids:
                raise ValueError(f"The tokenizer of {self.model_name!r} turns {word!r} into no tokens.")
            self._piece_cache[key] = list(ids)
        return self._piece_cache[key]

    def _encode(self, prefix: str, n_masks: int, suffix: str) -> tuple[int, ...]:
        left, right = self._segments(prefix, suffix)
        head, tail = self._special_tokens()
        return tuple(head + left + [self.tokenizer.mask_token_id] * n_masks + right + tail)

    def _segments(self, prefix: str, suffix: str) -> tuple[list[int], list[int]]:
        """Token ids of the text before and after the mask, encoded separately (cached)."""
        key = (prefix, suffix)
        if key not in self._segment_cache:
            tok = self.tokenizer
            left = tok(prefix.rstrip(), add_special_tokens=False)["input_ids"] if prefix.strip() else []
            right = tok(suffix, add_special_tokens=False)["input_ids"] if suffix.strip() else []
            if len(self._segment_cache) > 100_000:
                self._segment_cache.clear()
            self._segment_cache[key] = (list(left), list(right))
        return self._segment_cache[key]

    def _special_tokens(self) -> tuple[list[int], list[int]]:
        """The ids the tokenizer puts before and after a single sequence ([CLS] ... [SEP])."""
        if not hasattr(self, "_specials"):
            plain = self.tokenizer("a", add_special_tokens=False)["input_ids"]
            full = self.tokenizer("a")["input_ids"]
            at = next(i for i in range(len(full)) if full[i:i + len(plain)] == plain)
            self._specials = (list(full[:at]), list(full[at + len(plain):]))
        return self._specials

    # -- scoring -------------------------------------------------------------------------------
    def score(self, requests: Sequence[ClozeRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        # 1. plan: one sequence per (request, piece count); identical sequences share a pass
        seq_index: dict[tuple[int, ...], int] = {}
        reads: list[list[tuple[int, list[int]]]] = []  # per request: (sequence id, pieces) per word
        requests_of_seq: dict[int, set[int]] = defaultdict(set)
        needed: dict[int, set[int]] = defaultdict(set)  # vocabulary ids read from each sequence
        for r, req in enumerate(requests):
            after_space = bool(req.prefix.strip()) and req.prefix[-1:].isspace()
            plan = []
            for word in req.words:
                pieces = self.word_pieces(word, after_space)
                seq = self._encode(req.prefix, len(pieces), req.suffix)
                sid = seq_index.setdefault(seq, len(seq_index))
                requests_of_seq[sid].add(r)
                needed[sid].update(pieces)
                plan.append((sid, pieces))
            reads.append(plan)
        sequences = list(seq_index)
        # 2. run: log-probabilities of the needed ids at the mask positions of every sequence
        mask_logprobs = self._mask_logprobs(sequences, requests_of_seq, needed, len(requests), progress)
        # 3. read: mean log-probability of each word's pieces
        out = []
        for plan in reads:
            scores = []
            for sid, pieces in plan:
                columns, rows = mask_logprobs[sid]
                scores.append(float(sum(rows[j, columns[p]] for j, p in enumerate(pieces)) / len(pieces)))
            out.append(tuple(scores))
        return out

    def _find_head(self):
        """The LM head as one module, so it runs at the mask positions only (it is ~10% of a
        BERT-large pass when applied everywhere). Checked against the full forward pass on a
        probe sentence; models whose head is not one module keep the full pass."""
        torch = self._torch
        base = self.model.base_model
        heads = [m for _, m in self.model.named_children() if m is not base]
        if len(heads) != 1:
            return None
        ids = torch.tensor([self._encode("An ant is", 2, " than a bird.")], device=self.device)
        mask = torch.ones_like(ids)
        try:
            with torch.inference_mode():
                full = self.model(input_ids=ids, attention_mask=mask).logits[0]
                hidden = base(input_ids=ids, attention_mask=mask)[0][0]
                fast = heads[0](hidden)
        except Exception:  # a head with another calling convention: use the full pass
            return None
        tolerance = 1e-2 if self.half else 1e-4
        return heads[0] if fast.shape == full.shape and torch.allclose(fast, full, atol=tolerance) else None

    def _logits_at_masks(self, ids, attention, is_mask):
        if self._head is None:
            return self.model(input_ids=ids, attention_mask=attention).logits[is_mask]
        hidden = self.model.base_model(input_ids=ids, attention_mask=attention)[0]
        return self._head(hidden[is_mask])

    def _mask_logprobs(self, sequences, requests_of_seq, needed, n_requests, progress):
        torch = self._torch
        mask_id = self.tokenizer.mask_token_id
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        result: dict[int, Any] = {}
        remaining = dict.fromkeys(range(n_requests), 0)
        for reqs in requests_of_seq.values():
            for r in reqs:
                remaining[r] += 1
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                width = max(len(sequences[i]) for i in batch)
                ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
                attention = torch.zeros((len(batch), width), dtype=torch.long)
                for row, i in enumerate(batch):
                    ids[row, :len(sequences[i])] = torch.tensor(sequences[i])
                    attention[row, :len(sequences[i])] = 1
                ids, attention = ids.to(self.device), attention.to(self.device)
                is_mask = ids == mask_id
                logprobs = torch.log_softmax(self._logits_at_masks(ids, attention, is_mask).float(), dim=-1)
                counts = is_mask.sum(dim=1).tolist()
                offset = 0
                done = 0
                for row, i in enumerate(batch):
                    vocab_ids = sorted(needed[i])
                    rows = logprobs[offset:offset + counts[row]][:, vocab_ids].cpu().numpy()
                    result[i] = ({v: c for c, v in enumerate(vocab_ids)}, rows)
                    offset += counts[row]
                    for r in requests_of_seq[i]:
                        remaining[r] -= 1
                        done += remaining[r] == 0
                if progress:
                    progress(done)
        return result
