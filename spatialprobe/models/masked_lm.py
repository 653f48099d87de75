"""Cloze scoring with any transformers masked LM (BERT, RoBERTa, ALBERT, DeBERTa, ...).

How a request is scored (see :mod:`spatialprobe.models.base`):

* The words of a request are grouped by their number of word pieces ``n``. For each group the
  prompt is encoded once with ``n`` consecutive mask tokens, so **one forward pass reads every
  answer of that length**. Most answer sets are single pieces: one pass per filled prompt.
* A word's score is the mean over its pieces of ``log p(piece_j | mask_j)``, all pieces read from
  the same pass (the pieces are predicted independently, as LAMA-style probes do).
* Tokenizers that mark a leading space (RoBERTa's byte-level BPE ``Ġ``, SentencePiece ``▁``) get
  the word tokenized with the space it has in the sentence: ``" larger"`` after ``"is "``. The
  prefix and suffix are encoded separately around the masks, so no piece crosses the mask.
* Identical encoded sequences are computed once; sequences are sorted by length and batched.
* Speed: the text around the masks is tokenised in one batch call per ``score`` call
  (cached), all inputs are packed into one buffer that goes to the device once
  (:mod:`.mlm_batches`), the LM head runs at the mask positions only, and the log-probabilities
  the answers need are gathered on the device and copied back once: this code waits for the
  device once per call (transformers' attention-mask check still reads the mask on the host in
  every forward pass).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from spatialprobe.errors import UsageError
from spatialprobe.loading import ModelLoadError, load_pretrained, resolve_device, resolve_precision
from spatialprobe.models.base import Declared, Option, Progress, ScoreRequest
from spatialprobe.models.lm_weights import load_lm
from spatialprobe.models.mlm_batches import Packed, pack
from spatialprobe.registry import component


@component("model", "hf-mlm",
           "any transformers AutoModelForMaskedLM checkpoint or local directory (converted VinVL too)")
class MaskedLMScorer(Declared):
    """Scores cloze requests with ``AutoModelForMaskedLM.from_pretrained(model)``."""
    specificity: ClassVar[int] = 80
    fallback: ClassVar[bool] = True

    @classmethod
    def accepts(cls, config: Mapping[str, Any]) -> bool:
        """A masked-LM head (``*ForMaskedLM``), ViLT's aside (the vilt adapter's)."""
        from spatialprobe.models.base import architectures, model_type

        return model_type(config) != "vilt" and any(a.endswith("ForMaskedLM") for a in architectures(config))


    name = "hf-mlm"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("cloze",)
    options: ClassVar[dict[str, Option]] = {}
    shards: ClassVar[bool] = True
    """Takes ``device_map``/``max_memory`` (:mod:`spatialprobe.sharding`)."""

    def __init__(self, model: str, device: str = "auto", batch_size: int = 64,
                 precision: str = "auto", model_obj=None, tokenizer=None,
                 device_map: str | None = None, max_memory: dict[str, str] | None = None):
        import torch
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self.model_name = model
        dtype = resolve_precision(precision, resolve_device(device), "text scorers")
        self.batch_size = batch_size
        self.tokenizer = tokenizer or load_pretrained(AutoTokenizer, model, "the tokenizer of")
        if self.tokenizer.mask_token_id is None:
            raise ModelLoadError(f"{model!r} has no mask token: it is not a masked language model.")
        self._mask_id = self.tokenizer.mask_token_id  # read once: the attribute lookup is slow
        self.model, self.device, self.sharded, self.half, self._weights_hash = load_lm(
            AutoModelForMaskedLM, model, "the masked LM", dtype, resolve_device(device), device_map, max_memory,
            model_obj)
        self._torch = torch
        self._piece_cache: dict[tuple[str, bool], list[int]] = {}
        self._segment_cache: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
        self._layouts: dict[tuple[tuple[str, ...], bool], _Layout] = {}
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
                raise UsageError(f"The tokenizer of {self.model_name!r} turns {word!r} into no tokens.")
            self._piece_cache[key] = list(ids)
        return self._piece_cache[key]

    def _encode(self, prefix: str, n_masks: int, suffix: str) -> tuple[int, ...]:
        left, right = self._segments(prefix, suffix)
        head, tail = self._special_tokens()
        return (*head, *left, *(self._mask_id,) * n_masks, *right, *tail)

    def _segments(self, prefix: str, suffix: str) -> tuple[list[int], list[int]]:
        """Token ids of the text before and after the mask, encoded separately (cached)."""
        key = (prefix, suffix)
        if key not in self._segment_cache:
            self._tokenize_segments([key])
        return self._segment_cache[key]

    def _tokenize_segments(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Put the (prefix, suffix) pairs not yet cached into the cache, in ONE tokenizer call: a
        fast tokenizer encodes a batch in parallel in Rust, and Python pays its overhead once."""
        missing = list(dict.fromkeys(key for key in pairs if key not in self._segment_cache))
        if not missing:
            return
        if len(self._segment_cache) + len(missing) > 100_000:
            self._segment_cache.clear()
        texts = [p.rstrip() for p, _ in missing if p.strip()] + [s for _, s in missing if s.strip()]
        encoded = iter(self._tokenize_batch(texts) if texts else [])
        lefts = [list(next(encoded)) if p.strip() else [] for p, _ in missing]
        rights = [list(next(encoded)) if s.strip() else [] for _, s in missing]
        self._segment_cache.update(zip(missing, zip(lefts, rights, strict=True), strict=True))

    def _tokenize_batch(self, texts: list[str]) -> list[list[int]]:
        """``tokenizer(texts, add_special_tokens=False)["input_ids"]``. A fast tokenizer's Rust
        backend is called directly when it is set up as that call would set it (no truncation,
        no padding): the same ids, without building offsets and masks we do not read (2-3x faster)."""
        backend = getattr(self.tokenizer, "backend_tokenizer", None) if self.tokenizer.is_fast else None
        if (backend is None or backend.truncation is not None or backend.padding is not None
                or getattr(backend, "encode_special_tokens", False)
                != bool(getattr(self.tokenizer, "split_special_tokens", False))):
            return self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        encode = getattr(backend, "encode_batch_fast", backend.encode_batch)  # tokenizers < 0.21: no _fast
        return [e.ids for e in encode(texts, add_special_tokens=False)]

    def _special_tokens(self) -> tuple[list[int], list[int]]:
        """The ids the tokenizer puts before and after a single sequence ([CLS] ... [SEP])."""
        if not hasattr(self, "_specials"):
            plain = self.tokenizer("a", add_special_tokens=False)["input_ids"]
            full = self.tokenizer("a")["input_ids"]
            at = next(i for i in range(len(full)) if full[i:i + len(plain)] == plain)
            self._specials = (list(full[:at]), list(full[at + len(plain):]))
        return self._specials

    def _layout(self, words: tuple[str, ...], after_space: bool) -> _Layout:
        key = (words, after_space)
        if key not in self._layouts:
            self._layouts[key] = _Layout.of([self.word_pieces(w, after_space) for w in words])
        return self._layouts[key]

    # -- scoring -------------------------------------------------------------------------------
    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        # 1. plan: one sequence per (request, piece count); identical sequences share a pass
        groups, sequences = self._plan(requests)
        out: list[tuple[float, ...]] = [() for _ in requests]
        if not sequences:
            return out
        # 2. run: every read (sequence, mask, vocabulary id) gathered on the device, copied once
        reads = [(sids[:, layout.read_group].ravel(), np.tile(layout.read_mask, len(rs)),
                  np.tile(layout.read_vocab, len(rs))) for layout, rs, sids in groups]
        read_seq, read_mask, read_vocab = (np.concatenate(column) for column in zip(*reads, strict=True))
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        packed = pack(sequences, read_seq, read_mask, read_vocab, [sids for _, _, sids in groups],
                      self.batch_size, pad_id, self._mask_id)
        values = np.empty(len(read_vocab), dtype=np.float32)
        values[packed.read_order] = self._gather(packed, progress)
        # 3. read: mean log-probability of each word's pieces (float32, as the scores always were)
        offset = 0
        for layout, rs, _ in groups:
            block = values[offset:offset + len(rs) * len(layout.read_vocab)].reshape(len(rs), -1)
            offset += block.size
            means = layout.sums(block) / layout.word_pieces
            for r, row in zip(rs, means.tolist(), strict=True):
                out[r] = tuple(row)
        return out

    def _plan(self, requests: Sequence[ScoreRequest]):
        """Groups of requests that read the same words the same way, as (layout, request indices,
        sequence ids: one row per request, one column per piece count), and the distinct sequences."""
        self._tokenize_segments([(req.prefix, req.suffix) for req in requests])
        seq_index: dict[tuple[int, ...], int] = {}
        groups: dict[tuple[tuple[str, ...], bool], tuple[_Layout, list[int], list[tuple[int, ...]]]] = {}
        for r, req in enumerate(requests):
            if not req.options:
                continue
            after_space = bool(req.prefix.strip()) and req.prefix[-1:].isspace()
            layout = self._layout(req.options, after_space)
            sids = tuple(seq_index.setdefault(self._encode(req.prefix, n, req.suffix), len(seq_index))
                         for n in layout.piece_counts)
            _, indices, rows = groups.setdefault((req.options, after_space), (layout, [], []))
            indices.append(r)
            rows.append(sids)
        planned = [(layout, indices, np.array(rows, dtype=np.int64)) for layout, indices, rows in groups.values()]
        return planned, list(seq_index)

    def _gather(self, packed: Packed, progress: Progress | None) -> np.ndarray:
        """Log-probability of every read, batch by batch, into one device buffer read back once."""
        torch = self._torch
        ids, attention, positions, rows, vocab = (
            self._to_device(a) for a in (packed.ids, packed.attention, packed.mask_positions,
                                         packed.read_rows, packed.read_vocab))
        with torch.inference_mode():
            out = torch.empty(len(packed.read_vocab), dtype=torch.float32, device=self.device)
            for b in packed.batches:
                block = slice(b.token_start, b.token_start + b.rows * b.width)
                logits = self._logits_at(ids[block].view(b.rows, b.width), attention[block].view(b.rows, b.width),
                                         positions[b.mask_start:b.mask_end])
                logprobs = torch.log_softmax(logits.float(), dim=-1)
                reads = slice(b.read_start, b.read_end)
                out[reads] = logprobs[rows[reads], vocab[reads]]
                if progress:
                    progress(b.done)  # known on the host: no wait for the device
            return out.cpu().numpy()

    def _to_device(self, array: np.ndarray):
        tensor = self._torch.from_numpy(array)
        if self.device.type == "cuda":
            tensor = tensor.pin_memory()  # lets the copy run asynchronously
        return tensor.to(self.device, non_blocking=True)

    def _find_head(self):
        """The LM head as one module, so it runs at the mask positions only (it is ~10% of a
        BERT-large pass when applied everywhere). Checked against the full forward pass on a
        probe sentence; models whose head is not one module keep the full pass."""
        torch = self._torch
        if self.sharded:  # the full pass: accelerate's hooks return its logits on the input device
            return None
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

    def _logits_at(self, ids, attention, positions):
        """Logits at ``positions`` (flat ``row * width + column`` indices): the head runs there only."""
        if self._head is None:
            return self.model(input_ids=ids, attention_mask=attention).logits.flatten(0, 1)[positions]
        hidden = self.model.base_model(input_ids=ids, attention_mask=attention)[0]
        return self._head(hidden.flatten(0, 1)[positions])


@dataclass(frozen=True)
class _Layout:
    """How one request's answer words are read (the same for every request with the same words
    and the same space before the mask): one sequence per distinct piece count, one read per piece."""

    piece_counts: tuple[int, ...]
    """Distinct numbers of pieces, in first-seen order: column ``g`` of a request's sequence ids."""
    read_group: np.ndarray
    """Per read: which column (piece count) its sequence is."""
    read_mask: np.ndarray
    """Per read: which mask of its sequence (piece ``j`` sits at mask ``j``)."""
    read_vocab: np.ndarray
    word_starts: np.ndarray
    """Per word: its first read (a word's reads are consecutive)."""
    word_pieces: np.ndarray
    """Per word: its number of pieces (float32: the mean is taken in float32)."""

    def sums(self, reads: np.ndarray) -> np.ndarray:
        """Per row and word, the sum of the word's reads, added piece after piece (the order of
        ``sum()``: ``np.add.reduceat`` adds in another order and differs in the last bit)."""
        total = reads[:, self.word_starts]
        for j in range(1, int(self.word_pieces.max(initial=1))):
            longer = np.flatnonzero(self.word_pieces > j)
            total[:, longer] += reads[:, self.word_starts[longer] + j]
        return total

    @classmethod
    def of(cls, pieces: list[list[int]]) -> _Layout:
        counts = list(dict.fromkeys(len(p) for p in pieces))
        lengths = np.array([len(p) for p in pieces], dtype=np.int64)
        return cls(tuple(counts),
                   np.array([counts.index(len(p)) for p in pieces for _ in p], dtype=np.int64),
                   np.array([j for p in pieces for j in range(len(p))], dtype=np.int64),
                   np.array([v for p in pieces for v in p], dtype=np.int64),
                   np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths.astype(np.float32))
