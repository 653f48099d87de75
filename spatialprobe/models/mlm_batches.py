"""The host-side layout of one masked-LM scoring call: every input packed before the first pass.

:func:`pack` takes the distinct encoded sequences of a call and the *reads* the answers need
(sequence, which of its masks, vocabulary id), and lays everything out as flat numpy arrays that
go to the device once, so the loop over batches does no host work and waits for nothing:

* sequences sorted by length (stable: ties keep their first-seen order) and cut into batches of
  ``batch_size`` rows; each batch is padded to its longest sequence and stored as one contiguous
  (rows x width) block of a flat id buffer (and of a flat attention buffer);
* the position of every mask inside its block, row-major: the order ``hidden[ids == mask_id]``
  gives, so the LM head sees exactly the rows it saw when batches were built one by one;
* the reads sorted by batch, each as (mask row inside its batch, vocabulary id): a batch fills one
  contiguous slice of the output buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np


@dataclass(frozen=True)
class Batch:
    """One forward pass: where its inputs, masks and reads lie in the packed buffers."""

    rows: int
    width: int
    token_start: int
    """Offset of its (rows x width) block in ``Packed.ids`` and ``Packed.attention``."""
    mask_start: int
    mask_end: int
    read_start: int
    read_end: int
    done: int
    """Requests whose last sequence is in this batch (for progress bars)."""


@dataclass(frozen=True)
class Packed:
    ids: np.ndarray
    attention: np.ndarray
    mask_positions: np.ndarray
    """Per mask row: its flat position ``row * width + column`` inside its batch's block."""
    read_rows: np.ndarray
    """Per read, in batch order: the row of its mask among its batch's mask rows."""
    read_vocab: np.ndarray
    read_order: np.ndarray
    """``values[read_order] = gathered`` puts the gathered reads back in the caller's order."""
    batches: list[Batch]


def pack(sequences: Sequence[tuple[int, ...]], read_seq: np.ndarray, read_mask: np.ndarray,
         read_vocab: np.ndarray, request_seqs: Sequence[np.ndarray], batch_size: int,
         pad_id: int, mask_id: int) -> Packed:
    """Lay out ``sequences`` and the reads for batched passes.

    ``read_seq[k]``, ``read_mask[k]``, ``read_vocab[k]``: read ``k`` is the log-probability of
    vocabulary id ``read_vocab[k]`` at mask number ``read_mask[k]`` of sequence ``read_seq[k]``.
    ``request_seqs``: integer matrices whose rows are the sequences of one request (for progress).
    There is at least one sequence.
    """
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    order = np.argsort(lengths, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    sorted_lengths = lengths[order]
    tokens = np.fromiter(chain.from_iterable(sequences[i] for i in order), dtype=np.int64,
                         count=int(lengths.sum()))

    # batches: consecutive runs of batch_size sorted sequences, each as wide as its last one
    starts = np.arange(0, len(order), batch_size)
    rows = np.minimum(batch_size, len(order) - starts)
    widths = sorted_lengths[starts + rows - 1]
    block_start = np.concatenate(([0], np.cumsum(rows * widths)))
    batch_of = np.repeat(np.arange(len(starts)), rows)  # per sorted sequence
    row_of = np.arange(len(order)) - starts[batch_of]
    seq_dest = block_start[batch_of] + row_of * widths[batch_of]

    # tokens to their place in the blocks; padding stays pad_id with attention 0
    first_token = np.concatenate(([0], np.cumsum(sorted_lengths)[:-1]))
    dest = np.repeat(seq_dest, sorted_lengths) + np.arange(len(tokens)) - np.repeat(first_token, sorted_lengths)
    ids = np.full(int(block_start[-1]), pad_id, dtype=np.int64)
    attention = np.zeros(int(block_start[-1]), dtype=np.int64)
    ids[dest] = tokens
    attention[dest] = 1

    # masks: row-major within each block; a sequence's masks are consecutive mask rows
    is_mask = tokens == mask_id
    token_batch = np.repeat(batch_of, sorted_lengths)
    mask_positions = (dest - block_start[token_batch])[is_mask]
    masks_per_seq = np.add.reduceat(is_mask.astype(np.int64), first_token)
    first_mask = np.concatenate(([0], np.cumsum(masks_per_seq)))
    batch_mask_start = np.append(first_mask[starts], first_mask[-1])

    # reads: their global mask row, sorted (stable) so each batch reads one slice
    global_row = first_mask[position[read_seq]] + read_mask
    read_order = np.argsort(global_row, kind="stable")
    sorted_rows = global_row[read_order]
    read_bounds = np.searchsorted(sorted_rows, batch_mask_start)
    read_batch = np.searchsorted(batch_mask_start, sorted_rows, side="right") - 1
    read_rows = sorted_rows - batch_mask_start[read_batch]

    done = np.zeros(len(starts), dtype=np.int64)
    for seqs in request_seqs:
        if seqs.size:
            done += np.bincount(batch_of[position[seqs]].max(axis=1), minlength=len(starts))
    batches = [Batch(int(rows[b]), int(widths[b]), int(block_start[b]), int(batch_mask_start[b]),
                     int(batch_mask_start[b + 1]), int(read_bounds[b]), int(read_bounds[b + 1]), int(done[b]))
               for b in range(len(starts))]
    return Packed(ids, attention, mask_positions, read_rows, read_vocab[read_order], read_order, batches)
