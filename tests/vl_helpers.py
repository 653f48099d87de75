"""Tiny vision-language models and data for the VL tests (built here, loaded via from_pretrained)."""

from __future__ import annotations

from pathlib import Path

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["a", "an", "the", "is", "than", "larger", "smaller", "taller", "shorter", "ant", "bird",
         "cat", "dog", "on", "under", "left", "right", "of", "above", "below", "near", "far",
         "from", "not", "in", "front", "behind", "table", "car", ".", "##s", "big", "##ger"]


def shared_dir() -> Path:
    return Path(__file__).resolve().parents[1].parent / "shared"


def write_vocab(directory: Path, words=WORDS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "vocab.txt"
    path.write_text("\n".join(SPECIALS + list(words)) + "\n", encoding="utf-8")
    return path


def tiny_bert_config(vocab_size: int) -> dict:
    return {"vocab_size": vocab_size, "hidden_size": 16, "num_hidden_layers": 1,
            "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 64,
            "type_vocab_size": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
            "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def tiny_vilt(directory: Path, *, classifier: bool = False, image_size: int = 32):
    """A ViLT masked-LM (or single-image classifier) with a BERT word-piece tokenizer of :data:`WORDS`, saved."""
    from spatialprobe.tiny.image_text import vilt

    return vilt(directory, head="classifier" if classifier else "mlm", words=SPECIALS + WORDS, hidden=16,
                image_size=image_size, max_positions=40)


def tiny_clip(directory: Path):
    """A CLIP model with a character-level BPE tokenizer of lower-case letters, digits and a few
    marks, saved with its processor."""
    import json

    from transformers import CLIPTokenizer

    from spatialprobe.tiny.image_text import clip

    directory.mkdir(parents=True, exist_ok=True)
    chars = list("abcdefghijklmnopqrstuvwxyz.,'/?0123456789-")
    tokens = ["<|startoftext|>", "<|endoftext|>"] + chars + [c + "</w>" for c in chars]
    (directory / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}))
    (directory / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(directory / "vocab.json"), str(directory / "merges.txt"))
    return clip(directory, hidden=16, image_size=32, patch=16, max_length=77, projection=8, tokenizer=tokenizer)


def solid_image(path: Path, color=(200, 30, 30), size: int = 40) -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (size, size), color).save(path)
    return path


LLAVA_WORDS = ["left", "<pad>", "<unk>", "<s>", "</s>", "<image>", "right", "of", "in", "front",
               "behind", "below", "on/above", "answer", ":", "?", "the", "is", "where"]


def tiny_llava(directory: Path, always_left: bool = False):
    """A LLaVA image-text-to-text model (CLIP vision + Llama text) with a word-level tokenizer of
    :data:`LLAVA_WORDS` and no chat template.

    ``always_left``: zero the output layer, so every logit ties and greedy decoding emits
    token 0, ``left``, at every step.
    """
    import torch

    from spatialprobe.tiny.chat_models import llava
    from spatialprobe.tiny.vocab import word_level

    tokenizer = word_level(LLAVA_WORDS, split="whitespace-split", pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})

    def zero_head(model):
        with torch.no_grad():
            model.get_output_embeddings().weight.zero_()

    return llava(directory, tokenizer=tokenizer, chat_template=None, wire=zero_head if always_left else None)
