"""Tiny untrained image-text models: contrastive dual encoders (CLIP, SigLIP), ViLT (masked LM,
VQA, image-text classifier) and BLIP-VQA, each saved with its processor built here: the
tokenizer from :mod:`spatialprobe.tiny.vocab`, the image processor from its class with explicit
sizes (no download, no ../shared)."""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.tiny import vocab as vocabularies

BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def clip(folder: Path, seed: int = 0, hidden: int = 32, image_size: int = 32, patch: int = 16,
         max_length: int = 77, projection: int = 16, processor: bool = True, tokenizer: Any = None) -> Path:
    """A CLIP with ``tokenizer`` or one of one token per byte (any text) and, with ``processor``, its
    image processor (``image_size`` pixels, centre-cropped); without, a tokenizer-only folder
    (VQGAN+CLIP guidance)."""
    import torch
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor

    tokenizer = tokenizer or vocabularies.clip_characters(folder, max_length)
    torch.manual_seed(seed)
    config = CLIPConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": hidden, "intermediate_size": 2 * hidden,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": max_length,
                     "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
                     "pad_token_id": tokenizer.eos_token_id},
        vision_config={"hidden_size": hidden, "intermediate_size": 2 * hidden, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": image_size, "patch_size": patch},
        projection_dim=projection)
    CLIPModel(config).save_pretrained(str(folder))
    if processor:
        images = pil_variant("CLIPImageProcessor")(size={"shortest_edge": image_size},
                                    crop_size={"height": image_size, "width": image_size})
        CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(str(folder))
    return folder


def char_tokenizer(max_length: int, characters: str = string.ascii_letters + string.digits + string.punctuation + " "
                   ) -> Any:
    """A character-level fast tokenizer (SigLIP's own needs sentencepiece): ``<pad>``, ``<unk>``,
    ``</s>``, then one token per character of ``characters``."""
    specials = ["<pad>", "<unk>", "</s>"]
    return vocabularies.word_level([*specials, *dict.fromkeys(characters)], split="chars", pad_token="<pad>",
                                   eos_token="</s>", model_max_length=max_length)


def siglip(folder: Path, seed: int = 0, version: int = 1, characters: str | None = None) -> Path:
    """A SigLIP (or SigLIP 2) with 16x16 images in 8x8 patches and a character tokenizer, saved with
    its processor; the logit scale and bias are moved off their zero init so both count in the scores."""
    import torch
    import transformers

    tokenizer = char_tokenizer(64) if characters is None else char_tokenizer(64, characters)
    torch.manual_seed(seed)
    name = "Siglip" if version == 1 else "Siglip2"
    text = {"vocab_size": len(tokenizer), "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
            "num_attention_heads": 2, "max_position_embeddings": 64, "projection_size": 16, "pad_token_id": 0,
            "bos_token_id": None, "eos_token_id": 2}
    vision = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
              "patch_size": 8}
    vision.update({"image_size": 16} if version == 1 else {"num_patches": 4})
    config = getattr(transformers, f"{name}Config")(text_config=text, vision_config=vision)
    model = getattr(transformers, f"{name}Model")(config)
    with torch.no_grad():
        model.logit_scale.fill_(1.2)
        model.logit_bias.fill_(-0.7)
    model.save_pretrained(str(folder))
    images: Any
    if version == 1:
        from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

        images = SiglipImageProcessorPil(size={"height": 16, "width": 16})
    else:
        from transformers.models.siglip2.image_processing_pil_siglip2 import Siglip2ImageProcessorPil

        images = Siglip2ImageProcessorPil(max_num_patches=4, patch_size=8)
    getattr(transformers, f"{name}Processor")(image_processor=images, tokenizer=tokenizer).save_pretrained(str(folder))
    return folder


def bert_tokenizer(folder: Path, words: Sequence[str] | None = None, **special: str) -> Any:
    """A BERT word-piece tokenizer: ``words`` (in order), or the toolkit's (:func:`.vocab.wordpiece_file`)."""
    from transformers import BertTokenizerFast  # type: ignore[attr-defined]

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "vocab.txt"
    if words is None:
        vocabularies.wordpiece_file(folder)
    else:
        path.write_text("\n".join(words) + "\n", encoding="utf-8")
    return BertTokenizerFast(vocab=str(path), do_lower_case=True, **special)


def vilt(folder: Path, seed: int = 0, head: str = "mlm", words: Sequence[str] | None = None, hidden: int = 32,
         image_size: int = 32, max_positions: int = 40, answers: Sequence[str] = ("no", "yes"),
         pil: bool = True, wire: Any = None) -> Path:
    """A 1-layer ViLT: ``head`` ``mlm`` (masked LM), ``vqa`` (answer classes ``answers``) or
    ``classifier`` (True/False of an image and a text), with a BERT tokenizer (``words`` or the
    toolkit's) and a ViLT image processor of ``image_size`` pixels (``pil``: the Pillow one);
    ``wire(model)`` may change the weights before saving."""
    import torch
    import transformers
    from transformers import ViltConfig, ViltProcessor

    tokenizer = bert_tokenizer(folder, words)
    torch.manual_seed(seed)
    config = ViltConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=2 * hidden, image_size=image_size, patch_size=16,
                        max_position_embeddings=max_positions, num_images=1, max_image_length=-1,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    labels = {"mlm": None, "vqa": list(answers), "classifier": ["False", "True"]}[head]
    if labels is not None:
        config.num_labels, config.id2label = len(labels), dict(enumerate(labels))
        config.label2id = {label: i for i, label in enumerate(labels)}
    model_class = {"mlm": "ViltForMaskedLM", "vqa": "ViltForQuestionAnswering",
                   "classifier": "ViltForImagesAndTextClassification"}[head]
    model = getattr(transformers, model_class)(config)
    if wire is not None:
        wire(model)
    model.save_pretrained(folder)
    image_class = pil_variant("ViltImageProcessor") if pil else transformers.ViltImageProcessor
    images = image_class(size={"shortest_edge": image_size}, size_divisor=16)
    ViltProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def blip_vqa(folder: Path, words: Sequence[str], seed: int = 0, image_size: int = 32,
             answer_bias: Mapping[str, float] | None = None) -> Path:
    """A 1-layer BLIP-VQA with a BERT tokenizer of ``words`` (``[DEC]`` its start of answer, as in
    Salesforce/blip-vqa-base); with ``answer_bias`` its answer decoder outputs those fixed logits."""
    import torch
    from transformers import BlipConfig, BlipForQuestionAnswering, BlipImageProcessor, BlipProcessor

    tokenizer = bert_tokenizer(folder, words, bos_token="[DEC]")
    images = BlipImageProcessor(size={"height": image_size, "width": image_size})
    BlipProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    small = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
    config = BlipConfig(
        text_config=dict(vocab_size=len(words), bos_token_id=words.index("[DEC]"), pad_token_id=0,
                         sep_token_id=words.index("[SEP]"), eos_token_id=words.index("[SEP]"),
                         encoder_hidden_size=32, max_position_embeddings=64, **small),
        vision_config=dict(image_size=image_size, patch_size=16, **small), projection_dim=32)
    torch.manual_seed(seed)
    model = BlipForQuestionAnswering(config)
    if answer_bias is not None:
        head = model.text_decoder.cls.predictions
        with torch.no_grad():
            head.decoder.weight.zero_()
            head.bias.zero_()
            for word, value in answer_bias.items():
                head.bias[words.index(word)] = value
    model.save_pretrained(folder)
    return folder


def pil_variant(name: str) -> Any:
    """The image processor class ``name``, its Pillow variant where transformers has one (the
    default needs torchvision, and warns before falling back to the Pillow one without it)."""
    import transformers

    return getattr(transformers, f"{name}Pil", None) or getattr(transformers, name)
