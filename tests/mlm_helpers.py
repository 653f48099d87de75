"""Tiny masked LMs built in the tests and saved/loaded through the public transformers path."""

from __future__ import annotations

from pathlib import Path

WORDS = ["an", "a", "the", "is", "than", "and", "he", "she", "man", "woman", "boy", "girl", "car", "bus",
         "larger", "smaller", "taller", "shorter", "above", "below", "inside", "beside", "bigger", "ant",
         "bird", "cup", "bottle", "house", "plane", "human", "dog", "much", "usually", "in", "general",
         "compared", "to", ",", ".", "drives", "washes"]


def tiny_wordpiece_bert(path: Path, extra_pieces=("##er", "##est", "hug", "tin", "##ier")) -> Path:
    """A BERT with a hand-made WordPiece vocabulary (hidden size 32, 2 layers)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    from spatialprobe import tasks

    SIZE_LEVELS = tasks.get("size").levels

    objects = [o for level in SIZE_LEVELS for o in level]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(WORDS + objects), *extra_pieces]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab=str(path / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    BertForMaskedLM(config).save_pretrained(path)
    return path


def tiny_bpe_roberta(path: Path) -> Path:
    """A RoBERTa with a byte-level BPE tokenizer trained here on a few sentences."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    corpus = [" ".join(WORDS)] * 3 + ["An ant is smaller than a bird.", "A house is larger than a cup.",
                                      "A man drives the car. He is inside the car."]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=700, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(path))
    tokenizer = RobertaTokenizerFast(vocab=str(path / "vocab.json"), merges=str(path / "merges.txt"))
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=2, intermediate_size=64, max_position_embeddings=80,
                           pad_token_id=tokenizer.pad_token_id)
    RobertaForMaskedLM(config).save_pretrained(path)
    return path


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
    import torch
    from transformers import AutoTokenizer, DistilBertConfig, DistilBertForMaskedLM

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    DistilBertForMaskedLM(DistilBertConfig(vocab_size=len(tok), dim=32, n_layers=1, n_heads=2,
                                           hidden_dim=64, max_position_embeddings=64)).save_pretrained(path)
    tok.save_pretrained(path)
    return path
