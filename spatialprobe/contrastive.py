"""One adapter for transformers' contrastive image-text models: CLIP, LAION CLIPs, SigLIP, SigLIP 2.

The family is read from the checkpoint's configuration (``model_type`` in config.json), never
from its name, so a SigLIP saved in a directory called "clip-..." is still a SigLIP. A family
fixes what differs between them:

* the similarity the model was trained with: CLIP's ``logit_scale * cos`` compared across the
  texts of an image (softmax), SigLIP's ``logit_scale * cos + logit_bias`` judged pair by pair
  (sigmoid);
* the text padding: CLIP pads to the longest text (its attention mask hides the padding),
  SigLIP was trained on texts padded to the full length, and its scores assume that;
* the pixel input: a normalised image for CLIP and SigLIP, a sequence of patches with a mask
  and the patch grid for SigLIP 2 (NaFlex).

open_clip checkpoints are left out: open_clip needs torchvision, which the CPU install does not
carry. The LAION CLIPs published in transformers format load as ``CLIPModel`` and are covered.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spatialprobe.loading import ModelLoadError, load_pretrained, resolve_device

OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


@dataclass(frozen=True)
class Family:
    model_class: str
    """The transformers class that loads the checkpoint."""
    activation: str
    """``softmax`` (over the texts of one image) or ``sigmoid`` (each image-text pair alone)."""
    pad_to_max_length: bool
    """Texts padded to the text model's full length, as the family was trained."""
    default_mean: tuple[float, float, float]
    """Image statistics when the checkpoint has no image processor configuration."""
    default_std: tuple[float, float, float]
    patches: bool = False
    """Pixels go in as a patch sequence with a mask and a grid (SigLIP 2's NaFlex)."""


FAMILIES = {
    "clip": Family("CLIPModel", "softmax", False, OPENAI_CLIP_MEAN, OPENAI_CLIP_STD),
    "siglip": Family("SiglipModel", "sigmoid", True, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
    "siglip2": Family("Siglip2Model", "sigmoid", True, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5),
                      patches=True),
}
"""Contrastive families by ``model_type``; SigLIP 2 only where the installed transformers has it."""


def model_type(name_or_path: str) -> str:
    """The ``model_type`` of a checkpoint's configuration."""
    from transformers import AutoConfig

    return str(load_pretrained(AutoConfig, name_or_path, "the model configuration of").model_type)


def is_contrastive(name_or_path: str) -> bool:
    """True for a checkpoint of a contrastive image-text family this adapter knows."""
    return model_type(name_or_path) in FAMILIES


def family_of(name_or_path: str) -> tuple[str, Family]:
    kind = model_type(name_or_path)
    family = FAMILIES.get(kind)
    if family is None:
        raise ModelLoadError(f"{name_or_path!r} is a {kind!r} checkpoint, not a contrastive "
                             f"image-text model; use one of the families {', '.join(FAMILIES)}.")
    import transformers

    if not hasattr(transformers, family.model_class):
        raise ModelLoadError(f"{name_or_path!r} is a {kind} checkpoint, but the installed "
                             f"transformers {transformers.__version__} has no {family.model_class}; "
                             "upgrade transformers.")
    return kind, family


def _pooled(output):
    """transformers 5 returns a model output from ``get_*_features``; older ones a tensor."""
    return output if hasattr(output, "norm") else output.pooler_output


def _unit(x):
    x = x.float()
    return x / x.norm(dim=-1, keepdim=True)


class ContrastiveModel:
    """A loaded contrastive image-text model with its family's rules; see :meth:`load`."""

    def __init__(self, name: str, kind: str, family: Family, model, tokenizer, image_processor,
                 device):
        import torch

        self.name, self.kind, self.family = name, kind, family
        self.model, self.tokenizer, self.image_processor = model, tokenizer, image_processor
        self.device = device
        mean = getattr(image_processor, "image_mean", None) or family.default_mean
        std = getattr(image_processor, "image_std", None) or family.default_std
        self.image_mean, self.image_std = tuple(map(float, mean)), tuple(map(float, std))
        self._mean = torch.tensor(self.image_mean, device=device).view(1, 3, 1, 1)
        self._std = torch.tensor(self.image_std, device=device).view(1, 3, 1, 1)
        self.image_size = self._image_size()

    @classmethod
    def load(cls, name_or_path: str, device: Any = "auto") -> ContrastiveModel:
        """The model, its tokenizer and (when the checkpoint has one) its image processor, on
        ``device``, in eval mode; the family comes from the checkpoint's configuration."""
        import transformers
        from transformers import AutoProcessor, AutoTokenizer

        name = str(name_or_path)
        kind, family = family_of(name)
        device = resolve_device(device) if isinstance(device, str) else device
        model_class = getattr(transformers, family.model_class)
        model = load_pretrained(model_class, name, f"the {kind} model", dtype="fp32").to(device).eval()
        try:  # a processor holds both; a tokenizer-only directory serves the guidance path
            processor = load_pretrained(AutoProcessor, name, f"the processor of the {kind} model")
        except (ModelLoadError, TypeError, ImportError):
            processor = None
        image_processor = getattr(processor, "image_processor", None)
        tokenizer = getattr(processor, "tokenizer", None)
        if tokenizer is None:
            try:
                tokenizer = load_pretrained(AutoTokenizer, name, f"the tokenizer of the {kind} model")
            except ImportError as err:  # SigLIP's tokenizer is sentencepiece's, an optional library
                raise ModelLoadError(f"The tokenizer of {name!r} needs a library that is not installed "
                                     f"({str(err).splitlines()[0]}); SigLIP's needs `pip install "
                                     "sentencepiece`.") from None
        return cls(name, kind, family, model, tokenizer, image_processor, device)

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "model_type": self.kind, "device": str(self.device),
                "similarity": self.similarity_rule(), "text_padding": self.text_padding(),
                "weights_revision": getattr(self.model.config, "_commit_hash", None)}

    def similarity_rule(self) -> str:
        if self.family.activation == "sigmoid":
            return "sigmoid(logit_scale * cos + logit_bias)"
        return "softmax over texts of logit_scale * cos"

    # ---- text ---------------------------------------------------------------------------------
    def max_text_length(self) -> int:
        limit = int(self.model.config.text_config.max_position_embeddings)
        return min(limit, int(getattr(self.tokenizer, "model_max_length", limit) or limit))

    def text_padding(self) -> dict[str, Any]:
        """Tokenizer arguments for the family's padding rule."""
        if self.family.pad_to_max_length:
            return {"padding": "max_length", "max_length": self.max_text_length()}
        return {"padding": True, "max_length": self.max_text_length()}

    def text_inputs(self, texts: Sequence[str]) -> dict[str, Any]:
        tokens = self.tokenizer(list(texts), truncation=True, return_tensors="pt", **self.text_padding())
        names = getattr(self.tokenizer, "model_input_names", None) or list(tokens)
        return {k: v.to(self.device) for k, v in tokens.items() if k in names}

    def text_features(self, texts: Sequence[str]):
        """Unit text embeddings (no gradient)."""
        import torch

        with torch.no_grad():
            return _unit(_pooled(self.model.get_text_features(**self.text_inputs(texts))))

    # ---- images -------------------------------------------------------------------------------
    def _image_size(self) -> int:
        vision = self.model.config.vision_config
        if self.family.patches:  # the largest square patch grid the model takes
            patches = int(getattr(self.image_processor, "max_num_patches", None) or vision.num_patches)
            return math.isqrt(patches) * int(vision.patch_size)
        for key in ("crop_size", "size"):
            size = getattr(self.image_processor, key, None) or {}
            if isinstance(size, dict) and "height" in size:
                return int(size["height"])
        return int(vision.image_size)

    def pixel_inputs(self, images) -> dict[str, Any]:
        """Differentiable preprocessing of images in [0, 1], (B, 3, S, S) at :attr:`image_size`:
        the model's normalisation, and for SigLIP 2 the processor's patch layout."""
        pixels = (images - self._mean.to(images.dtype)) / self._std.to(images.dtype)
        if not self.family.patches:
            return {"pixel_values": pixels}
        import torch

        p = int(self.model.config.vision_config.patch_size)
        b, c, h, w = pixels.shape
        # (C, H/p, p, W/p, p) -> (H/p * W/p, p * p * C), as the SigLIP 2 image processor lays it out
        patches = pixels.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1)
        patches = patches.reshape(b, (h // p) * (w // p), p * p * c)
        shapes = torch.tensor([[h // p, w // p]] * b, device=pixels.device)
        mask = torch.ones(patches.shape[:2], dtype=torch.long, device=pixels.device)
        return {"pixel_values": patches, "pixel_attention_mask": mask, "spatial_shapes": shapes}

    def image_features(self, images):
        """Unit embeddings of images in [0, 1] at :attr:`image_size`; keeps the gradient."""
        return _unit(_pooled(self.model.get_image_features(**self.pixel_inputs(images))))

    def processed_image_features(self, images: Sequence[Any]):
        """Unit embeddings of PIL images through the checkpoint's own image processor."""
        import torch

        if self.image_processor is None:
            raise ModelLoadError(f"{self.name!r} has no image processor configuration "
                                 "(preprocessor_config.json or processor_config.json); save the "
                                 "model's processor with it.")
        inputs = self.image_processor(images=list(images), return_tensors="pt")
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with torch.no_grad():
            return _unit(_pooled(self.model.get_image_features(**inputs)))

    # ---- similarity ---------------------------------------------------------------------------
    def logits(self, image_features, text_features):
        """(images, texts) logits as the model computes them: ``logit_scale.exp() * cos``, plus
        ``logit_bias`` for SigLIP."""
        scale = self.model.logit_scale.float().exp()
        logits = scale * image_features.float() @ text_features.float().t()
        bias = getattr(self.model, "logit_bias", None)
        return logits + bias.float() if bias is not None else logits

    def probabilities(self, logits):
        """The trained similarity: softmax over each image's texts (CLIP) or a sigmoid per pair."""
        return logits.sigmoid() if self.family.activation == "sigmoid" else logits.softmax(dim=-1)

    def scores(self, images: Sequence[Any], texts: Sequence[str]):
        """(images, texts) logits for PIL images, as ``model(**processor(...)).logits_per_image``."""
        return self.logits(self.processed_image_features(images), self.text_features(texts))
