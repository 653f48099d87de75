"""Tiny untrained text models: masked LMs (BERT, RoBERTa, DistilBERT), a causal LM with a chat
template (GPT-2) and a seq2seq model (T5), each saved with ``save_pretrained`` and its tokenizer
built here (:mod:`spatialprobe.tiny.vocab`), so they load through the public transformers path."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spatialprobe.tiny import vocab as vocabularies

CHAT_TEMPLATE = ("{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
                 "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}")
"""A small chat template (role: content lines, then the assistant's turn)."""


def bert(folder: Path, seed: int = 0, vocab: Sequence[str] | None = None, hidden: int = 32, layers: int = 2,
         heads: int = 2, intermediate: int = 64, max_positions: int = 64) -> Path:
    """A BERT masked LM with a WordPiece vocabulary: ``vocab`` (its tokens in order) or the
    toolkit's words whole (:func:`~spatialprobe.tiny.vocab.wordpiece_file`)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast  # type: ignore[attr-defined]

    folder.mkdir(parents=True, exist_ok=True)
    if vocab is None:
        vocabularies.wordpiece_file(folder)
    else:
        (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab=str(folder / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate,
                        max_position_embeddings=max_positions)
    BertForMaskedLM(config).save_pretrained(folder)
    return folder


def roberta(folder: Path, seed: int = 0, texts: Sequence[str] = (), vocab_size: int = 3000, toolkit: bool = True,
            repeat: int = 2) -> Path:
    """A RoBERTa masked LM with a byte-level BPE learnt from the toolkit's texts (with ``toolkit``)
    and ``texts`` (:func:`~spatialprobe.tiny.vocab.byte_bpe`)."""
    import torch
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    vocab, merges = vocabularies.byte_bpe(folder, vocab_size, specials, texts, toolkit, repeat)
    tokenizer = RobertaTokenizerFast(vocab=str(vocab), merges=str(merges))
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = RobertaConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=2, intermediate_size=64, max_position_embeddings=80,
                           pad_token_id=tokenizer.pad_token_id)
    RobertaForMaskedLM(config).save_pretrained(folder)
    return folder


def distilbert(folder: Path, tokenizer_folder: Path, seed: int = 0) -> Path:
    """A 1-layer DistilBERT masked LM (its head is three modules, not one) with ``tokenizer_folder``'s tokenizer."""
    import torch
    from transformers import AutoTokenizer, DistilBertConfig, DistilBertForMaskedLM

    from spatialprobe.loading import load_pretrained

    tokenizer = load_pretrained(AutoTokenizer, str(tokenizer_folder), "the tokenizer of")
    torch.manual_seed(seed)
    DistilBertForMaskedLM(DistilBertConfig(vocab_size=len(tokenizer), dim=32, n_layers=1, n_heads=2, hidden_dim=64,
                                           max_position_embeddings=64)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def gpt2_config(tokenizer: Any, positions: int = 64) -> Any:
    from transformers import GPT2Config

    return GPT2Config(vocab_size=len(tokenizer), n_positions=positions, n_embd=64, n_layer=2, n_head=2,
                      bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)


def gpt2(folder: Path, seed: int = 0, chat_template: str | None = CHAT_TEMPLATE, vocab_size: int = 3000,
         positions: int = 512, texts: Sequence[str] = (), toolkit: bool = True, repeat: int = 2) -> Path:
    """A GPT-2 causal LM with a byte-level BPE learnt from the toolkit's texts (with ``toolkit``) and
    ``texts``, and ``chat_template`` (asked plainly or, ``--scorer-arg format=chat``, as a chat model)."""
    import torch
    from transformers import GPT2LMHeadModel, GPT2TokenizerFast  # type: ignore[attr-defined]

    vocab, merges = vocabularies.byte_bpe(folder, vocab_size, ["<|endoftext|>"], texts, toolkit, repeat)
    tokenizer = GPT2TokenizerFast(vocab=str(vocab), merges=str(merges))
    if chat_template:
        tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    GPT2LMHeadModel(gpt2_config(tokenizer, positions)).save_pretrained(folder)
    return folder


def t5(folder: Path, texts: Sequence[str] = (), d_model: int = 32, seed: int = 0, toolkit: bool = True) -> Path:
    """A 1-layer T5 whose word-level tokenizer knows every word of ``texts`` (and, with ``toolkit``,
    of the toolkit's texts) plus yes/no."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    specials = ["<pad>", "</s>", "<unk>"]
    known = specials + [w for w in vocabularies.words([*texts, "yes no \\n"], toolkit) if w not in specials]
    tokenizer = vocabularies.word_level(known, lowercase=True, post=("</s>", 1), pad_token="<pad>", eos_token="</s>")
    torch.manual_seed(seed)
    config = T5Config(vocab_size=len(known), d_model=d_model, d_kv=8, d_ff=2 * d_model, num_layers=1,
                      num_decoder_layers=1, num_heads=4, pad_token_id=0, eos_token_id=1, dropout_rate=0.0)
    config.decoder_start_token_id = 0  # a generation setting T5Config's signature does not name
    tokenizer.save_pretrained(folder)
    T5ForConditionalGeneration(config).save_pretrained(folder)
    return folder
