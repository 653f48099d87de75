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
* A token's log-probability is ``logit - logsumexp(logits)``, the logit its own dot product with
  the head's row. Through the head (:class:`HeadLogProbs`) the reads of a whole chunk of
  contexts (their last positions, then every continuation batch's scored positions) are pooled
  (:class:`Pending`) and normalised together, and on a CPU the ``[positions, vocabulary]`` logits
  never exist whole: the head runs on a block of positions and a chunk of the vocabulary at a time,
  small enough to stay in the cache while it is reduced to a sum of exponentials. The same number
  as ``log_softmax`` up to float32 rounding.
* **Continuation passes** run the options of those contexts, up to ``batch_size`` rows each,
  sorted by length and right-padded: row ``i`` feeds its continuation's tokens but the last, on a
  copy of the cache with the rows of its context (``reorder_cache``), and reads the log-probability
  of each next token. A one-token continuation needs no continuation pass.
* A continuation's score is the sum of its tokens' float32 log-probabilities, added in float64;
  the sequences are the full pass's own token ids split at the context's length, so the two differ
  by float rounding only (different matrix shapes).

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
from typing import Any, Protocol

import numpy as np

Sequences = Sequence[tuple[tuple[int, ...], int]]
"""Distinct sequences as the causal scorer encodes them: (context + continuation ids, continuation length)."""

PROBE = (("An ant is", (" larger than a bird.", " tinier than a bird.", " big")),
         ("A house is", (" smaller than a cup.", ".")))
"""Contexts of two lengths in GPT-2's BPE, continuations of several lengths, one of a single token."""


LOG2E = 1 / math.log(2.0)
CPU_CHUNK = 1 << 18
"""Logits per chunk of the head on a CPU: 1 MiB of float32, written and reduced while it is in the
core's cache (see docs/scorer_speed.md for the sizes measured)."""
BLOCK_ROWS = 512
"""Positions per block of the chunked head on a CPU; the chunk of the vocabulary is the rest of the budget."""
DEVICE_CHUNK = 1 << 26
"""Logits per block elsewhere (a GPU, or a half-precision head): whole rows, as many as this allows."""


class HeadLogProbs:
    """``log p(target | hidden state)`` through a linear LM head, its vocabulary taken a chunk at a time.

    ``log p(t | h) = w_t . h + b_t - logsumexp_v(w_v . h + b_v)``. With float32 weights on a CPU the
    logsumexp never writes the ``[positions, vocabulary]`` logits out whole: it takes
    :data:`BLOCK_ROWS` positions at a time and, for each chunk of the vocabulary that fills
    :data:`CPU_CHUNK` logits, writes the chunk's ``logits - s`` into one reused buffer (the shift
    ``s`` rides in the matrix product: ``addmm`` onto ``-s`` broadcast) and reduces it there to
    ``sum exp2((x - s) * log2 e)``; torch's CPU ``exp2`` is about 3x faster than its ``exp``.
    ``s`` is each row's maximum over the first chunk, so every term of that chunk is at most 1 and
    the sum is at least 1 (nothing the result depends on underflows); subtracting before scaling
    keeps float32's accuracy (measured against float64: the largest error of ``torch.logsumexp``).
    A row whose later logits exceed ``s`` by so much that the sum overflows (about 88 nats; no
    model tested comes near) is recomputed as ``torch.logsumexp`` of its whole row of logits.
    Elsewhere (a GPU, a half-precision head) the logits of whole rows are computed in the head's
    dtype, a block of rows at a time, and reduced in float32, as ``head(states).float()`` was.
    """

    pools = True
    """Reads are worth pooling: the states are hidden states, small next to their logits."""

    def __init__(self, head):
        import torch

        self.head = head
        self.weight, self.bias = head.weight, getattr(head, "bias", None)
        if self.weight.dim() != 2:
            raise TypeError(f"{type(head).__name__} is not a linear head")
        self.fused = self.weight.device.type == "cpu" and self.weight.dtype == torch.float32
        self._buffer = None
        self._views: dict[int, list[tuple[Any, Any]]] = {}

    def logprobs(self, states, rows, targets):
        """``log p(targets | states[rows])``, float32."""
        return self.picked(states[rows], targets) - self.logsumexp(states)[rows]

    def picked(self, states, targets):
        """Float32 logits of ``targets`` (one vocabulary id per row of ``states``)."""
        rows = self.weight[targets].float()
        logits = (states.float()[:, None, :] @ rows[:, :, None])[:, 0, 0]
        return logits if self.bias is None else logits + self.bias[targets].float()

    def logsumexp(self, states):
        """Float32 ``logsumexp`` over the vocabulary of the head's logits at each row of ``states``."""
        import torch

        out = torch.empty(len(states), dtype=torch.float32, device=states.device)
        step = BLOCK_ROWS if self.fused else max(1, DEVICE_CHUNK // len(self.weight))
        for start in range(0, len(states), step):
            block = states[start:start + step]
            out[start:start + len(block)] = self._fused(block) if self.fused and block.dtype == torch.float32 \
                else self._whole(block)
        return out

    def _whole(self, block):
        """``logsumexp`` of whole rows of logits (the head's dtype, reduced in float32)."""
        import torch

        return torch.logsumexp(torch.nn.functional.linear(block, self.weight, self.bias).float(), dim=-1)

    def _chunks(self, width: int) -> list[tuple[Any, Any]]:
        """(the head's transposed weight, its bias or None) per chunk of ``width`` ids (views, made once)."""
        if width not in self._views:
            self._views[width] = [(self.weight[start:start + width].T,
                                   None if self.bias is None else self.bias[start:start + width])
                                  for start in range(0, len(self.weight), width)]
        return self._views[width]

    def _fused(self, block):
        import torch

        rows = len(block)
        width = min(len(self.weight), max(256, CPU_CHUNK // rows))
        if self._buffer is None or self._buffer.numel() < rows * width:
            self._buffer = torch.empty(rows * width, dtype=torch.float32)
        (first, first_bias), *chunks = self._chunks(width)
        logits = self._buffer[:rows * width].view(rows, width)
        if first_bias is None:  # the shift: each row's maximum over the first chunk
            torch.mm(block, first, out=logits)
        else:
            torch.addmm(first_bias, block, first, out=logits)
        shift = logits.amax(dim=1, keepdim=True)
        lowered = shift.neg()
        sums = torch.empty((len(chunks) + 1, rows), dtype=torch.float32)
        torch.sum(logits.sub_(shift).mul_(LOG2E).exp2_(), dim=1, out=sums[0])
        for j, (weight, bias) in enumerate(chunks, start=1):
            logits = self._buffer[:rows * weight.shape[1]].view(rows, weight.shape[1])
            torch.addmm(lowered if bias is None else bias - shift, block, weight, out=logits)
            torch.sum(logits.mul_(LOG2E).exp2_(), dim=1, out=sums[j])
        out = shift[:, 0] + torch.log(sums.sum(dim=0))
        overflowed = ~torch.isfinite(out)
        if overflowed.any():
            out[overflowed] = self._whole(block[overflowed])
        return out


class GivenLogits:
    """Token log-probabilities from logits the model computed itself (a model whose head is not its
    output embedding alone)."""

    head = None
    pools = False
    """Each pass's logits are read at once, not held."""

    def logprobs(self, logits, rows, targets):
        import torch

        logits = logits.float()
        return logits[rows].gather(1, targets[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)[rows]


class Reads(Protocol):
    """How token log-probabilities are read from what a pass returns (hidden states or logits)."""

    head: Any
    pools: bool

    def logprobs(self, states, rows, targets):
        """``log p(targets | states[rows])``, float32."""


class Pending:
    """Token reads waiting for their normalisation, pooled so that the head runs on full blocks.

    A read is (a row of some states, its target token, the sequence it belongs to): its
    log-probability ``picked - logsumexp`` of that row is added to the sequence's total. Through
    the head, the states of every pass of a chunk of contexts (their last positions, then every
    continuation batch's scored positions) are normalised together at :meth:`flush`, in blocks of
    :data:`BLOCK_ROWS` rows, instead of one small block per pass; a context's last position is
    normalised once for all of its options. Logits a model computed itself are read at once.
    """

    def __init__(self, reads: Reads, totals):
        self.reads, self.totals = reads, totals
        self._items: list[tuple[Any, Any, Any, Any]] = []

    def add(self, states, rows, owners, targets) -> None:
        """Queue reads of ``states[rows]`` at ``targets``, summed into ``totals[owners]``."""
        self._items.append((states, rows, owners, targets))
        if not self.reads.pools:
            self.flush()

    def flush(self) -> None:
        import torch

        if not self._items:
            return
        offsets = list(itertools.accumulate((len(states) for states, *_ in self._items), initial=0))
        states = torch.cat([item[0] for item in self._items]) if len(self._items) > 1 else self._items[0][0]
        rows = torch.cat([item[1] + at for item, at in zip(self._items, offsets, strict=False)])
        owners, targets = (torch.cat([item[k] for item in self._items]) for k in (2, 3))
        self._items = []
        self.totals.index_add_(0, owners, self.reads.logprobs(states, rows, targets).to(self.totals.dtype))


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
        head = model.get_output_embeddings() if head_only else None
        if head_only and head is None:
            raise TypeError(f"{type(model).__name__} has no output embeddings")
        self.reads: Reads = HeadLogProbs(head) if head_only else GivenLogits()
        self.head = self.reads.head
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
        # float32 terms added in float64 (MPS has none): the sum adds no rounding of its own
        wide = torch.float32 if torch.device(self.device).type == "mps" else torch.float64
        totals = torch.zeros(len(sequences), dtype=wide, device=self.device)
        waiting = [{sid for sid, _ in plan} for plan in plans]
        with torch.inference_mode():
            for chunk in chunks:
                pending = Pending(self.reads, totals)
                cache, last = self._prefix_pass([prefixes[p] for p in chunk])
                rows = sorted(((row, sid) for row, p in enumerate(chunk) for sid in members[p]),
                              key=lambda rs: sequences[rs[1]][1])
                # every option's first token is read at its context's last position
                context_rows, sids = (torch.tensor(x, device=self.device) for x in zip(*rows, strict=True))
                firsts = torch.tensor([sequences[sid][0][-sequences[sid][1]] for _, sid in rows], device=self.device)
                pending.add(last, context_rows, sids, firsts)
                for start in range(0, len(rows), self.batch_size):
                    self._continue(rows[start:start + self.batch_size], cache, sequences, pending)
                pending.flush()
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

    def _prefix_pass(self, prefixes: list[tuple[int, ...]]):
        """(the cache of these same-length contexts, what the head reads at their last positions)."""
        torch = self._torch
        ids = torch.tensor(prefixes, dtype=torch.long, device=self.device)
        cache, states = self._forward(ids, torch.ones_like(ids), None, last_only=True)
        return cache, states[:, -1]

    def _continue(self, rows: list[tuple[int, int]], cache, sequences: Sequences, pending: Pending) -> None:
        """Run the continuations ``rows`` (row of their context in ``cache``, sequence id) on the
        contexts' cache and queue their tokens after the first (the context's last position read
        the first) on ``pending``."""
        torch = self._torch
        continuations = [sequences[sid][0][-sequences[sid][1]:] for _, sid in rows]
        width = max(len(c) for c in continuations) - 1
        if width == 0:  # one-token continuations: the context's last position read them
            return
        ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        targets = np.zeros((len(rows), width), dtype=np.int64)
        valid = np.zeros((len(rows), width), dtype=bool)
        for i, tokens in enumerate(continuations):
            ids[i, :len(tokens) - 1] = tokens[:-1]
            targets[i, :len(tokens) - 1] = tokens[1:]
            valid[i, :len(tokens) - 1] = True
        past = copy.deepcopy(cache)  # the next rows of this chunk continue from the same contexts
        past.reorder_cache(torch.tensor([row for row, _ in rows], device=self.device))
        seen = torch.from_numpy(valid).to(self.device)
        attention = torch.cat([torch.ones((len(rows), past.get_seq_length()), dtype=torch.long, device=self.device),
                               seen.long()], dim=1)
        _, states = self._forward(torch.from_numpy(ids).to(self.device), attention, past, last_only=False)
        owners = torch.tensor([sid for _, sid in rows], device=self.device)[:, None].expand(-1, width)[seen]
        scored = states[seen]  # the head runs at these positions only
        pending.add(scored, torch.arange(len(scored), device=self.device), owners,
                    torch.from_numpy(targets).to(self.device)[seen])
