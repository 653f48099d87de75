"""Tiny Mask2Former and Grounding DINO checkpoints (Swin backbones from transformers, no timm),
saved and loaded through the public from_pretrained path; random weights, seconds on CPU."""

from __future__ import annotations

from pathlib import Path

COCO_THREE = {0: "person", 1: "motorcycle", 2: "bus"}


def _tiny_swin(out_features: list[str]):
    from transformers import SwinConfig

    return SwinConfig(image_size=32, patch_size=4, embed_dim=8, depths=[1, 1, 1, 1],
                      num_heads=[1, 1, 1, 1], window_size=2, out_features=out_features)


def tiny_mask2former(path: Path, predicted_class: int | None = None) -> Path:
    """A Mask2Former with a 4-stage Swin of width 8, 4 queries, classes 0 person, 1 motorcycle,
    2 bus; ``predicted_class`` set: every query predicts that class with probability ~1.

    Its pixel decoder's GroupNorm has 32 groups, so the feature widths are 32; the processor
    resizes the shortest edge to 64 (the coarsest level, 1/32, keeps 2x2 values for that GroupNorm
    on one image), each edge rounded up to a multiple of 32, and pads a batch to its largest.
    """
    import torch
    from transformers import Mask2FormerConfig, Mask2FormerForUniversalSegmentation, Mask2FormerImageProcessor

    config = Mask2FormerConfig(
        backbone_config=_tiny_swin(["stage1", "stage2", "stage3", "stage4"]), use_pretrained_backbone=False,
        feature_size=32, mask_feature_size=32, hidden_dim=32, encoder_feedforward_dim=32,
        dim_feedforward=32, encoder_layers=1, decoder_layers=2, num_attention_heads=2, num_queries=4,
        id2label=COCO_THREE, label2id={v: k for k, v in COCO_THREE.items()})
    torch.manual_seed(0)
    model = Mask2FormerForUniversalSegmentation(config)
    if predicted_class is not None:
        with torch.no_grad():
            model.class_predictor.weight.zero_()
            bias = torch.full((len(COCO_THREE) + 1,), -10.0)  # the last class is "no object"
            bias[predicted_class] = 10.0
            model.class_predictor.bias.copy_(bias)
    model.save_pretrained(path)
    Mask2FormerImageProcessor(size={"shortest_edge": 64, "longest_edge": 128}).save_pretrained(path)
    return path


GROUNDING_WORDS = ["cat", "dog", "traffic", "light", "man", "motorcycle", "airplane", "bus"]


def tiny_grounding_dino(path: Path) -> Path:
    """A Grounding DINO with a Swin of width 8, a 1-layer BERT of width 16 over a word-level vocab
    (``GROUNDING_WORDS``, ``.`` and BERT's specials), 5 queries, 32 text positions, 3 feature levels."""
    import torch
    from transformers import (
        BertConfig,
        BertTokenizer,
        GroundingDinoConfig,
        GroundingDinoForObjectDetection,
        GroundingDinoImageProcessor,
        GroundingDinoProcessor,
    )

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *GROUNDING_WORDS]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(str(path / "vocab.txt"))
    text = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=32)
    # two decoder layers: the box heads of layers 1.. are tied to layer 0's, which needs a second one
    config = GroundingDinoConfig(
        backbone_config=_tiny_swin(["stage2", "stage3", "stage4"]), text_config=text,
        use_timm_backbone=False, use_pretrained_backbone=False, d_model=32, encoder_layers=1,
        decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
        decoder_ffn_dim=32, num_queries=5, num_feature_levels=3, max_text_len=32, encoder_n_points=2,
        decoder_n_points=2)
    torch.manual_seed(0)
    GroundingDinoForObjectDetection(config).save_pretrained(path)
    # 64 px: the coarsest level (1/32) keeps 2x2 values for its 32-group GroupNorm on one image
    images = GroundingDinoImageProcessor(size={"shortest_edge": 64, "longest_edge": 128})
    GroundingDinoProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(path)
    return path
