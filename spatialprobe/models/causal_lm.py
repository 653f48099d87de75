"""Multiple-choice scoring with any transformers causal LM (GPT-2, Llama, Qwen, Mistral, ...).

How a request is scored (see :mod:`spatialprobe.models.base`):

* The candidate sentence is ``prefix + word + suffix``. What is scored is the **continuation**
  ``word + suffix`` given the context ``prefix``, as lm-evaluation-harness scores a choice given
  its context. A causal LM reads the word *before* the second object (``An ant is [larger] than a
  bird.``), so the word's own probability cannot depend on the bird: only the suffix carries the
  comparison, which is why it is part of what is scored. The prefix's own probability is the
  same for every word of a request, so leaving it out changes no ``sum`` ranking.
* ``normalize``: ``sum`` (default; lm-eval's ``acc``) is the continuation's log-likelihood;
  ``token`` divides it by its number of tokens; ``char`` by its number of characters
  (lm-eval's ``acc_norm``).
* Context and continuation are split as lm-eval splits them: trailing spaces of the context move
  to the continuation, the whole text is encoded once, and the continuation is what follows the
  context's tokens. The tokenizer's own leading special tokens (e.g. Llama's ``<s>``) are kept;
  a tokenizer that adds none gets its BOS token (GPT-2's ``<|endoftext|>``) so the first word
  has a context.
* ``format="chat"``: the prefix is the user's message; it is wrapped in the tokenizer's chat
  template with the generation prompt, and each word is scored as the assistant's reply.
* Speed: the options of a request share its context, so the context is run **once**
  (:mod:`.causal_prefix`): one pass over each distinct context, whose last position gives the
  first continuation token's log-probability and whose key/value cache the options continue
  from, batched over options and requests. The context's tokens are exactly the ids of the
  whole-sentence encoding above (the encoding keeps the context's own tokens), so this is the
  same computation, equal up to float rounding. A model that returns no cache, or whose cached
  scores differ from the full pass on a probe sentence at load time, is scored with one full
  pass per distinct sentence, as before (sorted by length and batched).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from spatialprobe.errors import UsageError
from spatialprobe.loading import ModelLoadError, load_pretrained, resolve_device, resolve_precision
from spatialprobe.models.base import Declared, Option, Progress, ScoreRequest
from spatialprobe.models.lm_weights import load_lm
from spatialprobe.registry import component

NORMALIZE = ("sum", "token", "char")
FORMATS = ("plain", "chat")


@component("model", "hf-causal",
           "any transformers AutoModelForCausalLM checkpoint: answer + rest of sentence log-likelihood")
class CausalLMScorer(Declared):
    """Scores requests with ``AutoModelForCausalLM.from_pretrained(model)``."""
    specificity: ClassVar[int] = 70

    @classmethod
    def accepts(cls, config: Mapping[str, Any]) -> bool:
        """A causal head (``*ForCausalLM``, ``*LMHeadModel``), or, without architectures, a
        ``model_type`` transformers maps to a causal LM and not to a masked LM."""
        from spatialprobe.models.base import architectures, model_type
        from spatialprobe.models.choice import CAUSAL_SUFFIXES, causal_only_type

        found = architectures(config)
        return any(a.endswith(CAUSAL_SUFFIXES) for a in found) or (not found and causal_only_type(model_type(config)))


    name = "hf-causal"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("cloze",)
    options: ClassVar[dict[str, Option]] = {
        "normalize": Option(str, "sum", "sum (log-likelihood), token (per token) or char (per character)",
                            NORMALIZE),
        "format": Option(str, "plain", "plain (cloze sentences) or chat (the question in the chat template)",
                         FORMATS)}
    shards: ClassVar[bool] = True
    """Takes ``device_map``/``max_memory`` (:mod:`spatialprobe.sharding`)."""

    def __init__(self, model: str, device: str = "auto", batch_size: int = 64, normalize: str = "sum",
                 format: str = "plain", precision: str = "auto", model_obj=None, tokenizer=None,
                 bos: bool = True, device_map: str | None = None, max_memory: dict[str, str] | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if normalize not in NORMALIZE:
            raise UsageError(f"--normalize must be one of {', '.join(NORMALIZE)}, not {normalize!r}.")
        if format not in FORMATS:
            raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {format!r}.")
        self.model_name, self.normalize, self.format = model, normalize, format
        dtype = resolve_precision(precision, resolve_device(device), "text scorers")
        self.batch_size = batch_size
        self.tokenizer = tokenizer or load_pretrained(AutoTokenizer, model, "the tokenizer of")
        if format == "chat" and not getattr(self.tokenizer, "chat_template", None):
            raise ModelLoadError(f"The tokenizer of {model!r} has no chat template, so --format chat "
                                 "cannot wrap the question; use --format plain.")
        self.model, self.device, self.sharded, self.half, self._weights_hash = load_lm(
            AutoModelForCausalLM, model, "the causal LM", dtype, resolve_device(device), device_map, max_memory,
            model_obj)
        self._torch = torch
        # bos=False conditions a non-empty context on itself alone, as lm-eval's hf model does by
        # default (no BOS): the likelihood protocol then gives lm-eval's loglikelihood exactly
        self._head, self.bos = self._leading_tokens(), bos
        from spatialprobe.models.causal_prefix import SharedPrefix

        self._shared = SharedPrefix.checked(self)  # None: this model is scored by full passes

    def describe(self) -> dict[str, Any]:
        return {"scorer": self.name, "model": self.model_name, "weights_sha256": self._weights_hash,
                "device": str(self.device), "half": self.half, "batch_size": self.batch_size,
                "normalize": self.normalize, "format": self.format, **({} if self.bos else {"bos": False}),
                "score": {"sum": "log-likelihood", "token": "mean log-likelihood per token",
                          "char": "log-likelihood per character"}[self.normalize]
                + (" of the answer as the assistant's reply to the chat-templated question"
                   if self.format == "chat" else " of the answer word and the rest of the sentence "
                   "given the text before it")}

    # -- tokenization --------------------------------------------------------------------------
    def _leading_tokens(self) -> list[int]:
        """What goes before a plain context: the tokenizer's own leading special tokens, else BOS."""
        plain = self.tokenizer("a", add_special_tokens=False)["input_ids"]
        full = self.tokenizer("a")["input_ids"]
        at = next((i for i in range(len(full)) if full[i:i + len(plain)] == plain), 0)
        if at:
            return list(full[:at])
        bos = self.tokenizer.bos_token_id
        if bos is None:
            bos = self.tokenizer.eos_token_id
        return [] if bos is None else [bos]

    def context_text(self, request: ScoreRequest) -> str:
        if self.format == "plain":
            return request.prefix
        if request.suffix.strip():
            raise UsageError("--format chat scores the reply to a question; the request has text after "
                             f"the answer ({request.suffix!r}).")
        messages = [{"role": "user", "content": request.prefix.strip()}]
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def encode(self, context: str, continuation: str) -> tuple[tuple[int, ...], int]:
        """(token ids of context + continuation, number of continuation tokens), split as lm-eval does."""
        return self.encode_all([(context, continuation)])[0]

    def encode_all(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[tuple[int, ...], int]]:
        """:meth:`encode` of each (context, continuation) pair; the tokenizer is called once for
        the distinct contexts and once for the distinct sentences (a batch call gives the ids of
        one call per text, with Python's overhead paid once)."""
        split = []
        for context, continuation in pairs:  # trailing spaces of the context go to the continuation
            spaces = len(context) - len(context.rstrip())
            split.append((context[:-spaces], context[-spaces:] + continuation) if spaces else (context, continuation))
        contexts = list(dict.fromkeys(c for c, _ in split if c))
        sentences = list(dict.fromkeys(c + k for c, k in split))
        left_of = dict(zip(contexts, self._tokenize(contexts), strict=True))
        whole_of = dict(zip(sentences, self._tokenize(sentences), strict=True))
        # a chat template writes its own special tokens as text; a plain context gets ours
        head = self._head if self.format == "plain" else []
        out = []
        for context, continuation in split:
            left, whole = left_of.get(context, []), whole_of[context + continuation]
            lead = head if self.bos or not left else []  # an empty context still needs something
            if whole[:len(left)] != left:  # a token crosses the boundary: keep the context's own tokens
                whole = left + self._tokenize([continuation])[0]
            n = len(whole) - len(left)
            if n == 0:
                raise UsageError(f"The tokenizer of {self.model_name!r} turns {continuation!r} into no tokens.")
            ids = lead + list(whole)
            if len(ids) == n:
                raise UsageError(f"{self.model_name!r}: nothing to condition {continuation!r} on (its "
                                 "tokenizer has no BOS token and the context is empty).")
            out.append((tuple(ids), n))
        return out

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        return [list(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]] if texts else []

    # -- scoring -------------------------------------------------------------------------------
    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        pairs: list[tuple[str, str]] = []
        plans: list[list[tuple[int, int]]] = []  # per request: (sequence index, characters) per word
        for req in requests:
            context = self.context_text(req)
            continuations = [word + req.suffix if self.format == "plain" else word for word in req.options]
            plans.append([(len(pairs) + i, len(c)) for i, c in enumerate(continuations)])
            pairs.extend((context, c) for c in continuations)
        seq_index: dict[tuple[tuple[int, ...], int], int] = {}
        ids_of = [seq_index.setdefault(key, len(seq_index)) for key in self.encode_all(pairs)]
        plans = [[(ids_of[at], chars) for at, chars in plan] for plan in plans]
        keys = list(seq_index)
        if self._shared is not None:
            sums = self._shared.logprobs(keys, progress, plans)
        else:
            sums = self._continuation_logprobs(keys, progress, plans)
        if not all(math.isfinite(total) for total in sums):
            hint = ("half precision overflowed: use --device cpu" if self.half
                    else "the model's logits are not finite")
            raise RuntimeError(f"{self.model_name!r} gave a log-likelihood that is not a number ({hint}).")
        return [tuple(self._normalized(sums[sid], keys[sid][1], chars) for sid, chars in plan)
                for plan in plans]

    def _normalized(self, total: float, tokens: int, chars: int) -> float:
        if self.normalize == "token":
            return total / tokens
        if self.normalize == "char":
            return total / max(chars, 1)
        return total

    def _continuation_logprobs(self, sequences: list[tuple[tuple[int, ...], int]], progress,
                               plans: list[list[tuple[int, int]]]) -> list[float]:
        """Sum of log p(token | tokens before it) over each sequence's continuation tokens."""
        from spatialprobe.models.causal_prefix import finished

        torch = self._torch
        pad = self.tokenizer.pad_token_id
        pad = pad if pad is not None else 0
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i][0]))
        totals = [math.nan] * len(sequences)
        waiting = [{sid for sid, _ in plan} for plan in plans]
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                width = max(len(sequences[i][0]) for i in batch)
                ids = torch.full((len(batch), width), pad, dtype=torch.long)
                attention = torch.zeros((len(batch), width), dtype=torch.long)
                for row, i in enumerate(batch):
                    ids[row, :len(sequences[i][0])] = torch.tensor(sequences[i][0])
                    attention[row, :len(sequences[i][0])] = 1
                logits = self.model(input_ids=ids.to(self.device),
                                    attention_mask=attention.to(self.device)).logits
                for row, i in enumerate(batch):
                    tokens, n = sequences[i]
                    at = torch.arange(len(tokens) - n - 1, len(tokens) - 1, device=logits.device)
                    logprobs = torch.log_softmax(logits[row, at].float(), dim=-1)
                    targets = torch.tensor(tokens[-n:], device=logits.device)
                    totals[i] = float(logprobs.gather(1, targets[:, None]).sum())
                if progress:  # requests whose last sequence was in this batch
                    progress(finished(waiting, batch))
        return totals
