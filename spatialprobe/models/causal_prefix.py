"""The causal scorer's fast path: each distinct context is run once, its options continue from its cache.

A causal LM's scores of ``context + option`` depend on the context only through the hidden states
of its tokens, which are the same for every option: so the context is run once, and the options
are run as continuations of its key/value cache (the ``past_key_values`` generation uses).

* A **prefix pass** runs up to ``batch_size`` distinct contexts of the same length (no padding,
  so the cache needs none): its last position gives ``log p(first continuation token)``.
* The LM head runs only where a log-probability is read: the last position of a context, the
  real (not padding) positions of a continuation. With a large vocabulary the head's logits are
  most of the work. The head is the model's output embedding applied to its base model's last
  hidden state; a model that does more to its logits (a soft cap, a scale) fails the check below
  and takes its logits from its own forward pass (``logits_to_keep=1`` for the last position).
* A token's log-probability is ``logit - logsumexp(logits)`` (one pass over the vocabulary, not a
  full ``log_softmax`` written out): the same number up to rounding.
* **Continuation passes** run the options of those contexts, up to ``batch_size`` rows each,
  sorted by length and right-padded: row ``i`` feeds its continuation's tokens but the last, on a
  copy of the cache with the rows of its context (``reorder_cache``), and reads the log-probability
  of each next token. A one-token continuation needs no continuation pass.
* A continuation's score is the sum of its tokens' log-probabilities in float32, as the full pass
  adds them; the sequences are the full pass's own token ids split at the context's length, so
  the two differ by float rounding only (different matrix shapes).

:meth:`SharedPrefix.checked` decides at load time whether a model can take this path: it scores a
probe sentence both ways (with the head alone, then with the model's own logits), and a model that
returns no cache, fails, or disagrees both ways keeps full passes.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

Sequences = Sequence[tuple[tuple[int, ...], int]]
"""Distinct sequences as the causal scorer encodes them: (context + continuation ids, continuation length)."""

PROBE = (("An ant is", (" larger than a bird.", " tinier than a bird.", " big")),
         ("A house is", (" smaller than a cup.", ".")))
"""Contexts of two lengths in GPT-2's BPE, continuations of several lengths, one of a single token."""


def finished(waiting: list[set[int]], done) -> int:
    """How many requests the sequences ``done`` finish; ``waiting``: each request's sequences not done yet."""
    count = 0
    for pending in waiting:
        if pending:
            pending.difference_update(done)
            count += not pending
    return count


class SharedPrefix:
    """Continuation log-likelihoods with one pass per distinct context (see the module docstring)."""

    def __init__(self, model, device, batch_size: int, pad_id: int | None, head_only: bool = True):
        import torch

        self.model, self.device, self.batch_size = model, device, batch_size
        self.pad_id = pad_id if pad_id is not None else 0
        self._torch = torch
        self.head = model.get_output_embeddings() if head_only else None
        if head_only and self.head is None:
            raise TypeError(f"{type(model).__name__} has no output embeddings")
        takes = inspect.signature(model.forward).parameters
        self._keep: dict[str, Any] = {"logits_to_keep": 1} if "logits_to_keep" in takes else {}

    @classmethod
    def checked(cls, scorer) -> SharedPrefix | None:
        """This path for ``scorer``'s model, or None where it does not give the full pass's scores."""
        sequences = list(dict.fromkeys(scorer.encode_all(
            [(context, option) for context, options in PROBE for option in options])))
        plans = [[(i, 0)] for i in range(len(sequences))]
        full = scorer._continuation_logprobs(sequences, None, plans)
        tolerance = 2e-2 if scorer.half else 1e-4
        # spread over devices, the whole model runs (its hooks return the logits on the input
        # device); the head alone would leave them on the last layer's device
        for head_only in (False,) if getattr(scorer, "sharded", False) else (True, False):
            try:
                shared = cls(scorer.model, scorer.device, scorer.batch_size, scorer.tokenizer.pad_token_id, head_only)
                fast = shared.logprobs(sequences, None, plans)
            except Exception:  # no cache, or one this path cannot continue
                continue
            if all(math.isfinite(a) and abs(a - b) <= tolerance * max(1.0, abs(b))
                   for a, b in zip(fast, full, strict=True)):
                return shared
        return None

    def logprobs(self, sequences: Sequences, progress, plans: list[list[tuple[int, int]]]) -> list[float]:
        """Sum of log p(token | tokens before it) over each sequence's continuation tokens."""
        torch = self._torch
        prefix_of: dict[tuple[int, ...], int] = {}
        members: list[list[int]] = []  # per distinct context: its sequences
        for sid, (ids, n) in enumerate(sequences):
            pid = prefix_of.setdefault(ids[:-n], len(prefix_of))
            if pid == len(members):
                members.append([])
            members[pid].append(sid)
        prefixes = list(prefix_of)
        by_length = sorted(range(len(prefixes)), key=lambda p: len(prefixes[p]))
        chunks = []
        for _, same in itertools.groupby(by_length, key=lambda p: len(prefixes[p])):
            group = list(same)
            chunks += [group[i:i + self.batch_size] for i in range(0, len(group), self.batch_size)]
        totals = torch.empty(len(sequences), dtype=torch.float32, device=self.device)
        waiting = [{sid for sid, _ in plan} for plan in plans]
        with torch.inference_mode():
            for chunk in chunks:
                cache, first = self._prefix_pass([prefixes[p] for p in chunk])
                rows = sorted(((row, sid) for row, p in enumerate(chunk) for sid in members[p]),
                              key=lambda rs: sequences[rs[1]][1])
                for start in range(0, len(rows), self.batch_size):
                    self._continue(rows[start:start + self.batch_size], cache, first, sequences, totals)
                if progress:  # requests whose last sequence was in this chunk
                    progress(finished(waiting, {sid for p in chunk for sid in members[p]}))
        return totals.tolist()

    def _forward(self, ids, attention, past, last_only: bool):
        """(the cache after ``ids``, what the head reads: hidden states, or the model's logits)."""
        if self.head is not None:
            out = self.model.base_model(input_ids=ids, attention_mask=attention, past_key_values=past,
                                        use_cache=True)
            states = out.last_hidden_state
        else:
            out = self.model(input_ids=ids, attention_mask=attention, past_key_values=past, use_cache=True,
                             **(self._keep if last_only else {}))
            states = out.logits
        if out.past_key_values is None:
            raise TypeError(f"{type(self.model).__name__} returned no key/value cache")
        return out.past_key_values, states

    def _logits(self, states):
        """Float32 logits of ``states`` (hidden states, or logits already)."""
        return (self.head(states) if self.head is not None else states).float()

    def _prefix_pass(self, prefixes: list[tuple[int, ...]]):
        """(the cache of these same-length contexts, their last position's logits and logsumexp)."""
        torch = self._torch
        ids = torch.tensor(prefixes, dtype=torch.long, device=self.device)
        cache, states = self._forward(ids, torch.ones_like(ids), None, last_only=True)
        logits = self._logits(states[:, -1])
        return cache, (logits, torch.logsumexp(logits, dim=-1))

    def _continue(self, rows: list[tuple[int, int]], cache, last, sequences: Sequences, totals) -> None:
        """Score the continuations ``rows`` (row of their context in ``cache``, sequence id) into
        ``totals``; ``last``: the logits and logsumexp of the contexts' last positions (first tokens)."""
        torch = self._torch
        context_rows = torch.tensor([row for row, _ in rows], device=self.device)
        sids = torch.tensor([sid for _, sid in rows], device=self.device)
        continuations = [sequences[sid][0][-sequences[sid][1]:] for _, sid in rows]
        heads = torch.tensor([c[0] for c in continuations], device=self.device)
        first_tokens = last[0][context_rows, heads] - last[1][context_rows]
        width = max(len(c) for c in continuations) - 1
        if width == 0:  # one-token continuations: the context's last position read them
            totals[sids] = first_tokens
            return
        ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        targets = np.zeros((len(rows), width), dtype=np.int64)
        valid = np.zeros((len(rows), width), dtype=bool)
        for i, tokens in enumerate(continuations):
            ids[i, :len(tokens) - 1] = tokens[:-1]
            targets[i, :len(tokens) - 1] = tokens[1:]
            valid[i, :len(tokens) - 1] = True
        past = copy.deepcopy(cache)  # the next rows of this chunk continue from the same contexts
        past.reorder_cache(context_rows)
        seen = torch.from_numpy(valid).to(self.device)
        attention = torch.cat([torch.ones((len(rows), past.get_seq_length()), dtype=torch.long, device=self.device),
                               seen.long()], dim=1)
        _, states = self._forward(torch.from_numpy(ids).to(self.device), attention, past, last_only=False)
        later = torch.zeros((len(rows), width), dtype=torch.float32, device=self.device)
        logits = self._logits(states[seen])
        read = torch.from_numpy(targets).to(self.device)[seen]
        later[seen] = logits.gather(1, read[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
        totals[sids] = torch.cat([first_tokens[:, None], later], dim=1).sum(dim=1)
