"""Tiny masked LMs built in the tests and saved/loaded through the public transformers path."""

from __future__ import annotations

from pathlib import Path

WORDS = ["an", "a", "the", "is", "than", "and", "he", "she", "man", "woman", "boy", "girl", "car", "bus",
         "larger", "smaller", "taller", "shorter", "above", "below", "inside", "beside", "bigger", "ant",
         "bird", "cup", "bottle", "house", "plane", "human", "dog", "much", "usually", "in", "general",
         "compared", "to", ",", ".", "drives", "washes"]


def tiny_wordpiece_bert(path: Path, extra_pieces=("##er", "##est", "hug", "tin", "##ier")) -> Path:
    """A BERT with a hand-made WordPiece vocabulary (hidden size 32, 2 layers)."""
    from spatialprobe import tasks
    from spatialprobe.tiny.text import bert

    objects = [o for level in tasks.get("size").levels for o in level]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(WORDS + objects), *extra_pieces]
    return bert(path, vocab=vocab)


def tiny_bpe_roberta(path: Path) -> Path:
    """A RoBERTa with a byte-level BPE tokenizer trained here on a few sentences."""
    from spatialprobe.tiny.text import roberta

    corpus = [" ".join(WORDS)] * 3 + ["An ant is smaller than a bird.", "A house is larger than a cup.",
                                      "A man drives the car. He is inside the car."]
    return roberta(path, texts=corpus, vocab_size=700, toolkit=False, repeat=1)


def set_output_bias(path: Path, token_logits: dict[str, float]) -> None:
    """Zero the output projection so logits equal the bias everywhere, then raise chosen tokens.

    The model then predicts the same known distribution at every position, whatever the input.
    """
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForMaskedLM.from_pretrained(path)
    head = model.get_output_embeddings()
    with torch.no_grad():
        head.weight.zero_()  # tied to the input embeddings: the model then ignores its input
        head.bias.zero_()
        for token, logit in token_logits.items():
            index = tokenizer.convert_tokens_to_ids(token)
            assert index != tokenizer.unk_token_id, token
            head.bias[index] = logit
    model.save_pretrained(path)


def tiny_distilbert(path: Path, tokenizer_dir: Path) -> Path:
    """A random 1-layer DistilBERT (its head is three modules, not one) with ``tokenizer_dir``'s tokenizer."""
    from spatialprobe.tiny.text import distilbert

    return distilbert(path, tokenizer_dir)
