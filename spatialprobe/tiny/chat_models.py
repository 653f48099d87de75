"""Tiny untrained multimodal chat models (``AutoModelForImageTextToText``).

* :func:`llava`: a LLaVA (CLIP vision tower + Llama text model) built here entirely: a byte-level
  BPE learnt from the toolkit's texts with ``<image>`` added, a LLaVA-1.5-style chat template and a
  CLIP image processor of 32 pixels (4 image tokens).
* :func:`from_genuine`: any family whose genuine configuration and processor files the user has
  (e.g. ``../shared/models/llava-1.5-7b-hf``, configs without weights), shrunk by the recipe of
  :func:`shrink` (vocabulary, special and image token ids, image and patch sizes stay, so the real
  processor, chat template and image-token count go through) and saved with the processor files.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

from spatialprobe.tiny import vocab as vocabularies
from spatialprobe.tiny.image_text import pil_variant

LLAVA_TEMPLATE = ("{% for message in messages %}{% if message['role'] == 'user' %}USER: {% else %}ASSISTANT: "
                  "{% endif %}{% if message['content'] is string %}{{ message['content'] }}{% else %}"
                  "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>\n{% else %}"
                  "{{ part['text'] }}{% endif %}{% endfor %}{% endif %}{% if message['role'] == 'user' %} "
                  "{% else %}</s>{% endif %}{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}")
"""LLaVA-1.5's prompt shape: ``USER: <image>\\nQUESTION ASSISTANT:``."""

TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2}
"""The language model's sizes in :func:`shrink`."""


def llava(folder: Path, seed: int = 0, tokenizer: Any = None, chat_template: str | None = LLAVA_TEMPLATE,
          vocab_size: int = 3000, wire: Any = None) -> Path:
    """A LLaVA of 1-layer CLIP vision (32 px, 16 px patches) and 1-layer Llama text (hidden 16),
    with ``tokenizer`` (a fast tokenizer holding ``<image>``) or a byte-level BPE learnt here;
    ``wire(model)`` may change the weights before saving."""
    import torch
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    if tokenizer is None:
        tokenizer = _bpe_tokenizer(folder / "bpe", vocab_size)
    image_token = tokenizer.convert_tokens_to_ids("<image>")
    config = LlavaConfig(
        vision_config={"model_type": "clip_vision_model", "hidden_size": 16, "intermediate_size": 32,
                       "num_hidden_layers": 1, "num_attention_heads": 2, "image_size": 32, "patch_size": 16},
        text_config={"model_type": "llama", "vocab_size": len(tokenizer), "hidden_size": 16, "intermediate_size": 32,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
                     "max_position_embeddings": 2048, "pad_token_id": tokenizer.pad_token_id,
                     "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id},
        image_token_index=image_token, vision_feature_layer=-1)
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config)
    if wire is not None:
        wire(model)
    model.save_pretrained(folder)
    images = pil_variant("CLIPImageProcessor")(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    LlavaProcessor(image_processor=images, tokenizer=tokenizer, patch_size=16, vision_feature_select_strategy="default",
                   image_token="<image>", num_additional_image_tokens=1,
                   chat_template=chat_template).save_pretrained(folder)
    return folder


def _bpe_tokenizer(scratch: Path, vocab_size: int, bos: str = "<s>", eos: str = "</s>",
                   extra: dict[str, str] | None = None) -> Any:
    """A fast byte-level BPE tokenizer learnt from the toolkit's texts (:func:`~spatialprobe.tiny.vocab.byte_bpe`)
    with ``<unk>``, ``bos``, ``eos``, ``<pad>`` and the named ``extra`` tokens (``image_token``: ``<image>``)."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    extra = {"image_token": "<image>", **(extra or {})}
    specials = list(dict.fromkeys(["<unk>", bos, eos, "<pad>", *extra.values()]))
    vocab, merges = vocabularies.byte_bpe(scratch, vocab_size, specials)
    backend = ByteLevelBPETokenizer(str(vocab), str(merges))
    shutil.rmtree(scratch)
    return PreTrainedTokenizerFast(tokenizer_object=backend._tokenizer, unk_token="<unk>", bos_token=bos,
                                   eos_token=eos, pad_token="<pad>", extra_special_tokens=extra)


SMOLVLM_TEMPLATE = ("<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
                    "{% if message['content'][0]['type'] == 'image' %}:{% else %}: {% endif %}"
                    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}"
                    "{% elif part['type'] == 'image' %}<image>{% endif %}{% endfor %}<end_of_utterance>\n"
                    "{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}")
"""SmolVLM's prompt shape: ``<|im_start|>User:<image>QUESTION<end_of_utterance>\nAssistant:``."""


def smolvlm(folder: Path, seed: int = 0, vocab_size: int = 3000) -> Path:
    """A SmolVLM (Idefics3: a SigLIP-style vision tower, pixel shuffle by 2, Llama text; 1 layer each,
    hidden 16): 32-pixel images of 16-pixel patches, one image token each, no image splitting, with a
    byte-level BPE learnt here and SmolVLM's chat template."""
    import torch
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor

    tokenizer = _bpe_tokenizer(folder / "bpe", vocab_size, "<|im_start|>", "<end_of_utterance>",
                               {"fake_image_token": "<fake_token_around_image>", "global_image_token": "<global-img>",
                                "end_of_utterance_token": "<end_of_utterance>"})
    config = Idefics3Config(
        text_config={"model_type": "llama", "vocab_size": len(tokenizer), "hidden_size": 16, "intermediate_size": 32,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
                     "max_position_embeddings": 2048, "pad_token_id": tokenizer.pad_token_id,
                     "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 16},
        scale_factor=2, image_token_id=tokenizer.convert_tokens_to_ids("<image>"))
    torch.manual_seed(seed)
    Idefics3ForConditionalGeneration(config).save_pretrained(folder)
    images = pil_variant("Idefics3ImageProcessor")(size={"longest_edge": 32}, max_image_size={"longest_edge": 32},
                                                   do_image_splitting=False)
    Idefics3Processor(image_processor=images, tokenizer=tokenizer, image_seq_len=1,
                      chat_template=SMOLVLM_TEMPLATE).save_pretrained(folder)
    return folder


def shrink(family: str, config: Any, tiles: int = 4) -> Any:
    """The shrink recipe for ``family`` (``llava``, ``smolvlm``, ``mllama``, ``qwen2.5-vl``)
    applied to a deep copy of its genuine config."""
    cfg = copy.deepcopy(config)
    text, vision = cfg.text_config, cfg.vision_config
    for key, value in TEXT.items():
        setattr(text, key, value)
    if hasattr(text, "head_dim"):
        text.head_dim = 16
    if family in ("llava", "smolvlm"):
        vision.update({"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                       **({"projection_dim": 32} if family == "llava" else {})})
    elif family == "mllama":
        text.num_hidden_layers, text.cross_attention_layers = 4, [1, 3]
        vision.update({"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 4,
                       "num_global_layers": 2, "attention_heads": 4, "intermediate_layers_indices": [1, 3],
                       "vision_output_dim": 96})
        if tiles != 4:
            vision.update({"max_num_tiles": tiles, "supported_aspect_ratios": [[1, 1]]})
    elif family == "qwen2.5-vl":
        text.max_window_layers = 2
        text.rope_parameters["mrope_section"] = [2, 3, 3]
        vision.update({"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4,
                       "out_hidden_size": 64, "fullatt_block_indexes": [1]})
        cfg.tie_word_embeddings = text.tie_word_embeddings = False  # a head of its own (tests bias it)
    else:
        raise ValueError(f"no shrink recipe for {family!r}; there are: llava, smolvlm, mllama, qwen2.5-vl")
    return cfg


def from_genuine(family: str, genuine: Path, folder: Path, seed: int = 0, tiles: int = 4, split: bool = True,
                 wire: Any = None) -> Path:
    """A tiny random ``family`` model shrunk from ``genuine``'s config (:func:`shrink`), saved in
    ``folder`` with ``genuine``'s processor and tokenizer files; ``wire(model)`` may change the
    weights before saving.

    ``tiles``: Mllama's most image tiles (the real 4, or 1: the vision tower then attends over
    1,601 patches instead of 6,404; the processor's ``max_image_tiles`` set to match). ``split``:
    SmolVLM's image splitting (off, an image is its 64-token global view instead of 4x4 tiles + 1)."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    from spatialprobe.loading import load_pretrained

    torch.manual_seed(seed)
    genuine_config = load_pretrained(AutoConfig, str(genuine), "the genuine configuration of")
    model = AutoModelForImageTextToText.from_config(shrink(family, genuine_config, tiles))
    if wire is not None:
        wire(model)
    model.save_pretrained(folder)
    for path in genuine.iterdir():  # the genuine processor and tokenizer files
        if path.suffix in (".json", ".jinja", ".model", ".txt") and path.name != "config.json" \
                and not path.name.startswith("LICENSE"):
            shutil.copy(path, folder / path.name)
    light = {"mllama": {"max_image_tiles": tiles}, "smolvlm": {"do_image_splitting": split}}.get(family)
    if light and (tiles != 4 or not split):
        settings = json.loads((folder / "preprocessor_config.json").read_text(encoding="utf-8"))
        settings.update(light)
        (folder / "preprocessor_config.json").write_text(json.dumps(settings), encoding="utf-8")
    return folder
