"""Tiny vision-language models and data for the VL tests (built here, loaded via from_pretrained)."""

from __future__ import annotations

import json
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
    """A ViLT masked-LM (or single-image classifier) with a BERT word-piece tokenizer, saved."""
    import torch
    from transformers import (
        BertTokenizerFast,
        ViltConfig,
        ViltForImagesAndTextClassification,
        ViltForMaskedLM,
        ViltImageProcessorPil,
        ViltProcessor,
    )

    torch.manual_seed(0)
    write_vocab(directory / "tok")
    tokenizer = BertTokenizerFast.from_pretrained(str(directory / "tok"))
    config = ViltConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, image_size=image_size,
                        patch_size=16, max_position_embeddings=40, num_images=1,
                        max_image_length=-1, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    if classifier:
        config.num_labels = 2
        config.id2label = {0: "False", 1: "True"}
        config.label2id = {"False": 0, "True": 1}
        model = ViltForImagesAndTextClassification(config)
    else:
        model = ViltForMaskedLM(config)
    image_processor = ViltImageProcessorPil(size={"shortest_edge": image_size}, size_divisor=16)
    processor = ViltProcessor(image_processor=image_processor, tokenizer=tokenizer)
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    return directory


def tiny_clip(directory: Path):
    """A CLIP model with a character-level BPE tokenizer, saved with its processor."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    torch.manual_seed(0)
    directory.mkdir(parents=True, exist_ok=True)
    chars = list("abcdefghijklmnopqrstuvwxyz.,'/?0123456789-")
    tokens = ["<|startoftext|>", "<|endoftext|>"] + chars + [c + "</w>" for c in chars]
    (directory / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}))
    (directory / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(directory / "vocab.json"), str(directory / "merges.txt"))
    config = CLIPConfig(
        text_config={"vocab_size": len(tokens), "hidden_size": 16, "intermediate_size": 32,
                     "num_hidden_layers": 1, "num_attention_heads": 2,
                     "max_position_embeddings": 77, "bos_token_id": 0, "eos_token_id": 1,
                     "pad_token_id": 1},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 32, "patch_size": 16},
        projection_dim=8)
    CLIPModel(config).save_pretrained(directory)
    image_processor = CLIPImageProcessor(size={"shortest_edge": 32},
                                         crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(directory)
    return directory


def solid_image(path: Path, color=(200, 30, 30), size: int = 40) -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (size, size), color).save(path)
    return path


LLAVA_WORDS = ["left", "<pad>", "<unk>", "<s>", "</s>", "<image>", "right", "of", "in", "front",
               "behind", "below", "on/above", "answer", ":", "?", "the", "is", "where"]


def tiny_llava(directory: Path, always_left: bool = False):
    """A LLaVA image-text-to-text model (CLIP vision + Llama text) with a word-level tokenizer.

    ``always_left``: zero the output layer, so every logit ties and greedy decoding emits
    token 0, ``left``, at every step.
    """
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    vocab = {w: i for i, w in enumerate(LLAVA_WORDS)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>",
                                        bos_token="<s>", eos_token="</s>")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    config = LlavaConfig(
        vision_config={"model_type": "clip_vision_model", "hidden_size": 16, "intermediate_size": 32,
                       "num_hidden_layers": 1, "num_attention_heads": 2, "image_size": 32,
                       "patch_size": 16},
        text_config={"model_type": "llama", "vocab_size": len(LLAVA_WORDS), "hidden_size": 16,
                     "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                     "num_key_value_heads": 2, "max_position_embeddings": 256, "pad_token_id": 1,
                     "bos_token_id": 3, "eos_token_id": 4},
        image_token_index=vocab["<image>"], vision_feature_layer=-1)
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config)
    if always_left:
        with torch.no_grad():
            model.get_output_embeddings().weight.zero_()
    model.save_pretrained(directory)
    image_processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=16,
                   vision_feature_select_strategy="default", image_token="<image>",
                   num_additional_image_tokens=1).save_pretrained(directory)
    return directory
