"""Tiny causal LMs trained in the tests, with GPT-2's real byte-level BPE.

``../shared/models/roberta-base`` holds GPT-2's ``merges.txt`` and a ``vocab.json`` with the same
tokens, so ``GPT2TokenizerFast`` loads them as GPT-2's tokenizer (50,265 ids). A full softmax
over 50k ids is most of a tiny model's CPU time, so training uses an exact shortcut: the rows of
the (tied) embedding matrix of ids that never occur in the training text are zero, which makes
their logits exactly 0 everywhere, and the loss adds their ``(V - |used|) * exp(0)`` to the
softmax's denominator instead of computing them. The saved model is an ordinary
``GPT2LMHeadModel``; its full-vocabulary log-probabilities are the ones the loss trained.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from spatialprobe.tiny.text import CHAT_TEMPLATE, gpt2_config  # noqa: F401 (the tests import them from here)


def gpt2_tokenizer(shared: Path, chat_template: str | None = None):
    from transformers import GPT2TokenizerFast

    bpe = shared / "models" / "roberta-base"
    tokenizer = GPT2TokenizerFast(vocab=str(bpe / "vocab.json"), merges=str(bpe / "merges.txt"))
    if chat_template:
        tokenizer.chat_template = chat_template
    return tokenizer


def size_texts(tokenizer, chat: bool) -> list[str]:
    """Every size instance stated as a sentence (``An ant is smaller than a bird.``), and with
    ``chat`` also asked as the chat question with the larger object as the reply."""
    from spatialprobe.models import chat as chat_format
    from spatialprobe.prompts.templates import render
    from spatialprobe.tasks import data as task_data

    dataset = task_data.load("size")
    texts = [tokenizer.eos_token + render("[A] is [MASK] than [B].", inst, inst.label)
             for inst in dataset.instances]
    if chat:
        template = chat_format.question_template("size")
        cells = [(template, inst) for inst in dataset.instances]
        for request, inst in zip(chat_format.requests(cells, "size", dataset.labels), dataset.instances,
                                 strict=True):
            prompt = tokenizer.apply_chat_template([{"role": "user", "content": request.prefix}],
                                                   add_generation_prompt=True, tokenize=False)
            texts.append(prompt + request.options[dataset.labels.index(inst.label)])
    return texts


def untrained_gpt2(path: Path, tokenizer, zero_head: bool = True) -> Path:
    """The architecture untrained; with ``zero_head`` every logit is 0, so every token of every
    continuation has log-probability exactly ``-log V``."""
    import torch
    from transformers import GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(gpt2_config(tokenizer))
    if zero_head:
        with torch.no_grad():
            model.get_output_embeddings().weight.zero_()  # tied to the input embeddings
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def trained_gpt2(path: Path, tokenizer, texts: list[str], steps: int = 300, seed: int = 0,
                 lr: float = 1e-2) -> Path:
    """A 2-layer GPT-2 trained on ``texts`` (every token after the first is a target)."""
    import torch
    from transformers import GPT2LMHeadModel

    torch.manual_seed(seed)
    model = GPT2LMHeadModel(gpt2_config(tokenizer))
    encoded = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    used = sorted({i for ids in encoded for i in ids})
    position = {v: n for n, v in enumerate(used)}
    embeddings = model.get_output_embeddings().weight  # tied: input and output
    rows = torch.nn.Parameter(embeddings[used].detach().clone())  # the only rows that can change
    unused_mass = math.log(len(embeddings) - len(used))  # log of (V - |used|) logits of exactly 0
    others = [p for p in model.parameters() if p is not embeddings]
    optimizer = torch.optim.AdamW([*others, rows], lr=lr, weight_decay=0.0)
    rng = random.Random(seed)
    model.train()
    for _ in range(steps):
        batch = [[position[i] for i in encoded[rng.randrange(len(encoded))]] for _ in range(32)]
        width = max(map(len, batch))
        ids = torch.tensor([x + [0] * (width - len(x)) for x in batch])
        attention = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in batch])
        targets = torch.tensor([x[1:] + [-100] * (width - len(x)) for x in batch])
        hidden = model.transformer(inputs_embeds=rows[ids], attention_mask=attention).last_hidden_state
        logits = hidden[:, :-1] @ rows.T
        log_z = torch.logsumexp(torch.cat([logits, torch.full_like(logits[..., :1], unused_mass)], -1), -1)
        mask = targets >= 0
        picked = logits.gather(-1, targets.clamp(min=0)[..., None])[..., 0]
        loss = (log_z - picked)[mask].mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    with torch.no_grad():  # unused ids: zero rows, so logits of exactly 0 as the loss assumed
        embeddings.zero_()
        embeddings[used] = rows
    model.eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def tiny_bpe_gpt2(path: Path) -> Path:
    """A random 2-layer GPT-2 with a byte-level BPE trained here (no ../shared needed)."""
    from spatialprobe.tiny.text import gpt2

    corpus = ["An ant is smaller than a bird.", "A house is larger than a cup.",
              "A man drives the bus. He is inside the bus.", "bigger beside above below"]
    return gpt2(path, chat_template=None, vocab_size=400, positions=64, texts=corpus, toolkit=False, repeat=3)
