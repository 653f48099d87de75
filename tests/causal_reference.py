"""The causal-LM scoring path as it was at commit a6d4cfb, kept as the reference.

``CausalLMScorer.score`` now runs each distinct context once and continues its options from the
key/value cache (``spatialprobe/models/causal_prefix.py``), and tokenises in batch calls. This is
the previous ``encode`` and ``score``, unchanged but for living in a wrapper around a scorer:
every (context, option) sentence encoded by its own tokenizer calls, one full forward pass per
distinct sentence. The full pass itself is the scorer's ``_continuation_logprobs``, which is still
the previous code (it is the path of models that fail the shared-prefix check). The tests check
the new path against this one score by score; ``bench/causal_throughput.py`` times both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from spatialprobe.models.base import Progress, ScoreRequest


class ReferenceCausalLM:
    """Today's scoring of a ``CausalLMScorer`` (same model, tokenizer, format, device, batch size)."""

    def __init__(self, scorer):
        self.name, self._scorer = scorer.name, scorer
        self.tokenizer, self.format, self.model_name = scorer.tokenizer, scorer.format, scorer.model_name

    def describe(self) -> dict[str, Any]:
        return self._scorer.describe()

    def encode(self, context: str, continuation: str) -> tuple[tuple[int, ...], int]:
        spaces = len(context) - len(context.rstrip())
        if spaces:
            context, continuation = context[:-spaces], context[-spaces:] + continuation
        head = self._scorer._head if self.format == "plain" else []
        whole = self.tokenizer(context + continuation, add_special_tokens=False)["input_ids"]
        left = self.tokenizer(context, add_special_tokens=False)["input_ids"] if context else []
        if whole[:len(left)] != left:
            whole = left + self.tokenizer(continuation, add_special_tokens=False)["input_ids"]
        n = len(whole) - len(left)
        if n == 0:
            raise ValueError(f"The tokenizer of {self.model_name!r} turns {continuation!r} into no tokens.")
        ids = head + list(whole)
        if len(ids) == n:
            raise ValueError(f"{self.model_name!r}: nothing to condition {continuation!r} on")
        return tuple(ids), n

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        seq_index: dict[tuple[tuple[int, ...], int], int] = {}
        plans: list[list[tuple[int, int]]] = []
        for req in requests:
            context = self._scorer.context_text(req)
            plan = []
            for word in req.options:
                continuation = word + req.suffix if self.format == "plain" else word
                key = self.encode(context, continuation)
                plan.append((seq_index.setdefault(key, len(seq_index)), len(continuation)))
            plans.append(plan)
        sums = self._scorer._continuation_logprobs(list(seq_index), progress, plans)
        assert all(math.isfinite(total) for total in sums)
        keys = list(seq_index)
        return [tuple(self._scorer._normalized(sums[sid], keys[sid][1], chars) for sid, chars in plan)
                for plan in plans]


class MaterializedHead:
    """The shared-prefix path's earlier reads, kept as the reference for the chunked head:
    the head's float32 logits of every read position written out whole, ``gather`` for the target,
    ``torch.logsumexp`` over the vocabulary; each pass read at once (no pooling)."""

    pools = False

    def __init__(self, head):
        self.head = head

    def logprobs(self, states, rows, targets):
        import torch

        logits = self.head(states).float()
        return logits[rows].gather(1, targets[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)[rows]


def materialized(scorer):
    """``scorer`` (a ``CausalLMScorer`` on the head-only shared-prefix path) with a copy of its
    shared-prefix path reading through :class:`MaterializedHead`: the earlier code."""
    import copy

    shared = copy.copy(scorer._shared)
    shared.reads = MaterializedHead(shared.head)
    before = copy.copy(scorer)
    before._shared = shared
    return before
