"""The masked-LM scoring path as it was at commit a25fb35, kept as the reference.

``MaskedLMScorer.score`` was rewritten for speed (segments tokenised in one batch call, inputs
packed into one pre-allocated buffer, log-probabilities gathered on the device and copied once).
This is the previous code, unchanged but for living in a wrapper around a scorer's model and
tokenizer: the tests check the new path against it score by score, and
``bench/probe_throughput.py --compare-reference`` times both side by side.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from spatialprobe.models.base import Progress, ScoreRequest


class ReferenceMaskedLM:
    """Today's scoring of a ``MaskedLMScorer`` (same model, tokenizer, head, device, batch size)."""

    def __init__(self, scorer):
        import torch

        self.name = scorer.name
        self.model_name, self.device, self.batch_size = scorer.model_name, scorer.device, scorer.batch_size
        self.tokenizer, self.model, self.half, self._head = scorer.tokenizer, scorer.model, scorer.half, scorer._head
        self._scorer = scorer
        self._torch = torch
        self._piece_cache: dict[tuple[str, bool], list[int]] = {}
        self._segment_cache: dict[tuple[str, str], tuple[list[int], list[int]]] = {}

    def describe(self) -> dict[str, Any]:
        return self._scorer.describe()

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
        if not hasattr(self, "_specials"):
            plain = self.tokenizer("a", add_special_tokens=False)["input_ids"]
            full = self.tokenizer("a")["input_ids"]
            at = next(i for i in range(len(full)) if full[i:i + len(plain)] == plain)
            self._specials = (list(full[:at]), list(full[at + len(plain):]))
        return self._specials

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        seq_index: dict[tuple[int, ...], int] = {}
        reads: list[list[tuple[int, list[int]]]] = []
        requests_of_seq: dict[int, set[int]] = defaultdict(set)
        needed: dict[int, set[int]] = defaultdict(set)
        for r, req in enumerate(requests):
            after_space = bool(req.prefix.strip()) and req.prefix[-1:].isspace()
            plan = []
            for word in req.options:
                pieces = self.word_pieces(word, after_space)
                seq = self._encode(req.prefix, len(pieces), req.suffix)
                sid = seq_index.setdefault(seq, len(seq_index))
                requests_of_seq[sid].add(r)
                needed[sid].update(pieces)
                plan.append((sid, pieces))
            reads.append(plan)
        sequences = list(seq_index)
        mask_logprobs = self._mask_logprobs(sequences, requests_of_seq, needed, len(requests), progress)
        out = []
        for plan in reads:
            scores = []
            for sid, pieces in plan:
                columns, rows = mask_logprobs[sid]
                scores.append(float(sum(rows[j, columns[p]] for j, p in enumerate(pieces)) / len(pieces)))
            out.append(tuple(scores))
        return out

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
