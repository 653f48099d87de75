"""Option scoring for multimodal chat LLMs: the log-likelihood of each option as the reply.

* **The reply's tokens** are split from the prompt as lm-eval splits a continuation from its
  context: the reply follows the prompt text (after one space when the generation prompt ends
  without whitespace, as ``ASSISTANT:`` does; directly after ``assistant\\n``); prompt + reply is
  encoded once and the reply is what follows the prompt's tokens (the reply's own tokens when a
  token crosses the boundary).
* **Score** = the sum of ``log p(token | everything before it)`` over the reply's tokens, read at
  the positions before them (lm-eval's ``loglikelihood``). ``normalize``: ``sum`` (lm-eval's
  ``acc``), ``token`` (divided by the reply's number of tokens), ``char`` (divided by its number
  of characters, the option + suffix as given: lm-eval's ``acc_norm``).
* **Shared prompt** (``prompt_cache on``): one forward pass over the batch's prompts (the image
  tokens are the expensive part) gives every option's first token; its key/value cache is then
  expanded over the options (``Cache.reorder_cache`` with each option's request index) and one
  more pass over the options' remaining tokens gives the rest. Options of one token each (yes/no)
  need no second pass. Mllama's cross-attention mask is extended over the new tokens as
  ``generate`` extends it.
* **One row per option** (``prompt_cache off``): the processor encodes prompt + reply with the
  image, one row per option, left-padded; the reply is the rows' last tokens. Every family works
  this way; it encodes the image once per option.
* ``auto``: the shared prompt for the families whose equality with one row per option is tested
  (LLaVA, Idefics3/SmolVLM, Mllama); one row per option otherwise (Qwen2-VL/2.5-VL keep their
  multimodal rotary offsets per batch row inside the model, which an expanded cache does not
  follow).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from spatialprobe.errors import ModelLoadError

NORMALIZE = ("sum", "token", "char")
PROMPT_CACHE = ("auto", "on", "off")
SHARED_PROMPT_TYPES = frozenset({"llava", "idefics3", "smolvlm", "mllama"})
"""``model_type`` values for which ``prompt_cache auto`` shares the prompt's pass (tested)."""

Encode = Callable[[Sequence[str], Sequence[Any] | None], Any]
"""The adapter's processor call: texts and their images (or None) -> a left-padded batch."""


class OptionScorer:
    """Log-likelihoods of replies after chat prompts, with or without a shared prompt pass."""

    def __init__(self, model, tokenizer, encode: Encode, normalize: str = "sum", prompt_cache: str = "auto"):
        self.model, self.tokenizer, self.encode, self.normalize = model, tokenizer, encode, normalize
        model_type = getattr(model.config, "model_type", "")
        self.shares_prompt = prompt_cache == "on" or (prompt_cache == "auto" and model_type in SHARED_PROMPT_TYPES)
        self.keep = "logits_to_keep" in inspect.signature(model.forward).parameters

    def _forward(self, inputs, last: int, **kwargs):
        """(the model's output, its log-probabilities at the last ``last`` positions); only those
        logits are computed where the model takes ``logits_to_keep`` (the prompt's image tokens
        need no vocabulary-wide row)."""
        import torch

        out = self.model(**inputs, **kwargs, **({"logits_to_keep": last} if self.keep else {}))
        return out, torch.log_softmax(out.logits[:, -last:].float(), dim=-1)

    def reply_ids(self, prompt: str, reply: str) -> list[int]:
        """The reply's tokens after ``prompt``, split as lm-eval splits a continuation."""
        text = reply if not prompt or prompt[-1].isspace() else " " + reply
        left = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        whole = self.tokenizer(prompt + text, add_special_tokens=False)["input_ids"]
        ids = whole[len(left):] if whole[:len(left)] == left else \
            self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if not ids:
            raise ModelLoadError(f"The tokenizer turns the reply {reply!r} into no tokens.")
        return list(ids)

    def score(self, prompts: Sequence[str], images: Sequence[Any] | None,
              replies: Sequence[Sequence[str]]) -> list[tuple[float, ...]]:
        """Per prompt, each reply's (normalised) log-likelihood."""
        import torch

        ids = [[self.reply_ids(p, r) for r in rs] for p, rs in zip(prompts, replies, strict=True)]
        with torch.inference_mode():
            sums = self._shared(prompts, images, ids) if self.shares_prompt \
                else self._rows(prompts, images, replies, ids)
        out, at = [], 0
        for rs, tokens in zip(replies, ids, strict=True):
            out.append(tuple(self._normalized(sums[at + k], len(tokens[k]), len(r)) for k, r in enumerate(rs)))
            at += len(rs)
        return out

    def _normalized(self, total: float, tokens: int, chars: int) -> float:
        return total / {"sum": 1, "token": tokens, "char": max(chars, 1)}[self.normalize]

    # -- one row per option --------------------------------------------------------------------
    def _rows(self, prompts, images, replies, ids) -> list[float]:

        texts, pictures, wanted = [], [], []
        for i, (prompt, rs) in enumerate(zip(prompts, replies, strict=True)):
            for reply, tokens in zip(rs, ids[i], strict=True):
                texts.append(prompt + (reply if prompt[-1:].isspace() else " " + reply))
                pictures.append(None if images is None else images[i])
                wanted.append(tokens)
        inputs = self.encode(texts, None if images is None else pictures)
        last = max(len(tokens) for tokens in wanted) + 1
        logprobs = self._forward(inputs, last)[1]
        sums = []
        for row, tokens in enumerate(wanted):  # left padding: the reply is the row's last tokens
            n = len(tokens)
            got = inputs["input_ids"][row, -n:].tolist()
            if got != tokens:
                raise ModelLoadError(f"The processor encodes the reply as {got}, not {tokens}; "
                                     "use --scorer-arg prompt_cache=on.")
            picked = logprobs[row, -n - 1:-1].gather(1, inputs["input_ids"][row, -n:, None])
            sums.append(float(picked.sum()))
        return sums

    # -- the prompt's pass shared by its options -----------------------------------------------
    def _shared(self, prompts, images, ids) -> list[float]:
        import torch

        inputs = self.encode(prompts, images)
        out, first = self._forward(inputs, 1, use_cache=True)
        first = first[:, -1]
        rows = [i for i, tokens in enumerate(ids) for _ in tokens]
        flat = [t for tokens in ids for t in tokens]
        device = first.device
        index = torch.tensor(rows, device=device)
        sums = first[index, torch.tensor([t[0] for t in flat], device=device)].tolist()
        width = max(len(t) for t in flat) - 1
        if width == 0:  # every option is one token: the prompt's pass said everything
            return sums
        cache = out.past_key_values
        cache.reorder_cache(index)
        pad = self.tokenizer.pad_token_id or 0
        feed = torch.full((len(flat), width), pad, dtype=torch.long, device=device)
        mask = torch.zeros((len(flat), width), dtype=torch.long, device=device)
        for r, tokens in enumerate(flat):
            feed[r, :len(tokens) - 1] = torch.tensor(tokens[:-1], device=device)
            mask[r, :len(tokens) - 1] = 1
        prompt_mask = inputs["attention_mask"].index_select(0, index)
        extra = {}
        if "cross_attention_mask" in inputs:  # Mllama: the new tokens see the image as the last did
            cross = inputs["cross_attention_mask"].index_select(0, index)
            extra["cross_attention_mask"] = torch.cat([cross, cross[:, -1:].expand(-1, width, -1, -1)], 1)
        logprobs = self._forward({"input_ids": feed, "attention_mask": torch.cat([prompt_mask, mask], 1)},
                                 width, past_key_values=cache, use_cache=True, **extra)[1]
        targets = torch.cat([feed[:, 1:], torch.full((len(flat), 1), pad, device=device)], 1)
        for r, tokens in enumerate(flat):  # the targets: each row's tokens after the first
            targets[r, :len(tokens) - 1] = torch.tensor(tokens[1:], device=device)
        rest = (logprobs.gather(2, targets[..., None])[..., 0] * mask).sum(1)
        return [a + b for a, b in zip(sums, rest.tolist(), strict=True)]
