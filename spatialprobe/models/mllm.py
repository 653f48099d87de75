"""Multimodal chat LLMs: any ``AutoModelForImageTextToText`` checkpoint with its ``AutoProcessor``.

LLaVA (1.5, NeXT, OneVision), Qwen2-VL/2.5-VL, Idefics3/SmolVLM, PaliGemma, Gemma 3, Mllama
(Llama 3.2 Vision), InternVL (HF format): the adapter speaks the one vocabulary of
:mod:`spatialprobe.models.base`.

* **Prompt.** The processor's own chat template writes the prompt: one user turn holding
  ``{"type": "image"}`` and the text when the request has an image, the text alone when it has
  none (the blind ``none`` condition), then the generation prompt. A template that already writes
  the BOS token (Llama 3.2 Vision) is encoded without the tokenizer's special tokens, so the ids
  never start with a double BOS.
* :meth:`MultimodalLLM.generate`: batched, left padding, greedy (``do_sample=False``, one beam),
  so deterministic given the weights and the device's kernels; the new tokens only, decoded
  without special tokens, stripped, cut at the request's first ``stop`` string.
* :meth:`MultimodalLLM.score`: each option's log-likelihood as the assistant's reply,
  ``log p(option + suffix | prompt, image)``, the sum of its tokens' log-probabilities read at the
  positions before them (lm-eval's ``loglikelihood``); see :mod:`spatialprobe.models.mllm_score`
  for the reply's tokens, the shared prompt pass and ``normalize``.
* **Precision.** float32 on the CPU; on CUDA the weights load in bfloat16 (float16 where the GPU
  lacks it), the ``multimodal LLM adapter`` row of :data:`spatialprobe.loading.CUDA_DEFAULTS`.
* ``device_map="auto"`` (``--device-map auto``, with ``--max-memory``): accelerate spreads a
  checkpoint larger than one GPU over every visible GPU, then the CPU and the disk
  (:mod:`spatialprobe.sharding`); it is where the model runs, not what it computes, so it is
  reported under :meth:`MultimodalLLM.runtime`, never in :meth:`describe`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from spatialprobe.errors import ModelLoadError, UsageError
from spatialprobe.fingerprints import weights_hash
from spatialprobe.loading import dtype_name, load_pretrained, resolve_device, resolve_precision
from spatialprobe.models.base import Declared, GenerateRequest, Option, Progress, ScoreRequest, cut
from spatialprobe.models.mllm_score import NORMALIZE, PROMPT_CACHE, OptionScorer
from spatialprobe.models.seeded_sampling import DESCRIBED
from spatialprobe.registry import component
from spatialprobe.sharding import asked, input_device, load_sharded

COMPONENT = "multimodal LLM adapter"
"""This adapter's row of :data:`spatialprobe.loading.CUDA_DEFAULTS`."""


@component("model", "hf-mllm",
           "any AutoModelForImageTextToText chat checkpoint (LLaVA, Qwen2.5-VL, SmolVLM, Llama 3.2 Vision, ...)")
class MultimodalLLM(Declared):
    """Scores and generates with ``AutoModelForImageTextToText.from_pretrained(model)``."""
    sees_images: ClassVar[bool] = True
    specificity: ClassVar[int] = 40
    judges_images: ClassVar[bool] = True
    samples: ClassVar[bool] = True
    sampler: ClassVar[str] = DESCRIBED
    """How it samples at a request's temperature: a generator per request seed (:mod:`.seeded_sampling`)."""
    multi_image: ClassVar[bool] = True
    """A request's image may be a tuple of images (a multi-view item), shown in one user turn."""

    @classmethod
    def accepts(cls, config: Mapping[str, Any]) -> bool:
        """An image-text-to-text checkpoint (``AutoModelForImageTextToText`` maps its ``model_type``)."""
        from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

        from spatialprobe.models.base import model_type

        return model_type(config) in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES


    name = "hf-mllm"
    protocols: ClassVar[tuple[str, ...]] = ("score", "generate")
    wordings: ClassVar[tuple[str, ...]] = ("question",)
    options: ClassVar[dict[str, Option]] = {
        "batch_size": Option(int, 8, "requests per forward pass (score) or per generate call"),
        "normalize": Option(str, "sum", "sum: log-likelihood (lm-eval acc); token: per token; "
                            "char: per character (lm-eval acc_norm)", NORMALIZE),
        "prompt_cache": Option(str, "auto", "share the prompt's pass across its options (on), one "
                               "padded row per option (off), or on for the families tested (auto)",
                               PROMPT_CACHE),
        "precision": Option(str, "auto", "auto: float32 on CPU, bfloat16 on CUDA",
                            ("auto", "fp32", "bf16", "fp16")),
    }
    shards: ClassVar[bool] = True
    """Takes ``device_map``/``max_memory`` (:mod:`spatialprobe.sharding`)."""

    def __init__(self, model: str, device: str = "auto", batch_size: int = 8, normalize: str = "sum",
                 prompt_cache: str = "auto", device_map: str | None = None,
                 max_memory: dict[str, str] | None = None, precision: str = "auto", model_obj=None,
                 processor=None):
        from transformers import AutoModelForImageTextToText, AutoProcessor

        for key, value in (("normalize", normalize), ("prompt_cache", prompt_cache), ("precision", precision)):
            if value not in self.options[key].choices:
                raise UsageError(f"--scorer-arg {key}={value} is not one of "
                                 f"{', '.join(self.options[key].choices)}.")
        if batch_size < 1:
            raise UsageError(f"--scorer-arg batch_size={batch_size}: it must be at least 1.")
        self.model_name, self.batch_size = str(model), batch_size
        self.device_map = device_map if asked(device_map) else None
        self.device = resolve_device(device)
        self.dtype = resolve_precision(precision, self.device, COMPONENT)
        self.processor = processor or _load_processor(AutoProcessor, self.model_name)
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.tokenizer.padding_side = "left"  # batched generation continues every row at its end
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if model_obj is None and self.device_map:
            self.model = load_sharded(AutoModelForImageTextToText, self.model_name, "the image-text-to-text model",
                                      self.dtype, self.device_map, max_memory, COMPONENT)
        else:
            self.model = model_obj or load_pretrained(AutoModelForImageTextToText, self.model_name,
                                                      "the image-text-to-text model", dtype=self.dtype)
            self.model.eval()
            if model_obj is None:
                self.model.to(self.device)
        self._weights = weights_hash(self.model_name)
        self.scorer = OptionScorer(self.model, self.tokenizer, self.encode, normalize, prompt_cache)

    @property
    def input_device(self):
        """Where inputs go: the input embedding's device (under ``device_map``, the device it runs
        on; looked up once, as it walks the model's modules)."""
        if not hasattr(self, "_input_device"):
            self._input_device = input_device(self.model) if self.device_map \
                else self.model.get_input_embeddings().weight.device
        return self._input_device

    def describe(self) -> dict[str, Any]:
        """What changes the numbers: model, weights, dtype, prompt format, scoring and decoding."""
        return {"scorer": self.name, "model": self.model_name, "weights_sha256": self._weights,
                "weights_revision": getattr(self.model.config, "_commit_hash", None),
                "model_type": self.model.config.model_type, "dtype": dtype_name(self.dtype),
                "prompt": "the processor's chat template: one user turn (image, then text), "
                          "generation prompt",
                "normalize": self.scorer.normalize,
                "score": {"sum": "log-likelihood", "token": "mean log-likelihood per token",
                          "char": "log-likelihood per character"}[self.scorer.normalize]
                + " of option + suffix as the assistant's reply",
                "decoding": {"do_sample": False, "num_beams": 1}}  # max_new_tokens: each request's

    def runtime(self) -> dict[str, Any]:
        """Where and how fast it runs (never changes a number beyond the kernels' rounding)."""
        return {"device": str(self.input_device), "device_map": self.device_map or "none",
                "batch_size": self.batch_size, "prompt_cache": self.scorer.shares_prompt}

    # -- prompts -------------------------------------------------------------------------------
    def chat_text(self, text: str, has_image: bool | int) -> str:
        """The chat-templated prompt of one user turn (with ``has_image`` image placeholders: one for True)."""
        content = [{"type": "image"}] * int(has_image) + [{"type": "text", "text": text}]
        messages = [{"role": "user", "content": content}]
        if getattr(self.processor, "chat_template", None) is None:
            raise UsageError(f"The processor of {self.model_name!r} has no chat template, so the "
                             "adapter cannot write its prompt.")
        return self.processor.apply_chat_template(messages, add_generation_prompt=True)

    def encode(self, texts: Sequence[str], images: Sequence[Any] | None):
        """The processor's batch (left-padded) for ``texts``, with ``images`` (one each) or none."""
        from spatialprobe.vision import open_image

        bos = self.tokenizer.bos_token
        special = not (bos and all(t.startswith(bos) for t in texts))  # the template wrote BOS itself
        kwargs: dict[str, Any] = {"text": list(texts), "padding": True, "return_tensors": "pt",
                                  "add_special_tokens": special}
        if images is not None:
            kwargs["images"] = [[open_image(i) for i in _shown(image)] for image in images]
        return self.processor(**kwargs).to(self.input_device)

    @staticmethod
    def _user_text(request: ScoreRequest) -> str:
        return f"{request.passage}\n\n{request.prefix}" if request.passage else request.prefix

    # -- the two protocols ---------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[str]:
        """The greedy reply to each request (batched by image presence, left-padded); a request
        with a temperature is sampled with its seed (:mod:`.seeded_sampling`)."""
        import torch
        from transformers import LogitsProcessorList

        from spatialprobe.models.seeded_sampling import seeded_sampler

        out: list[str] = [""] * len(requests)
        for batch in self._batches(requests):
            group = [requests[i] for i in batch]
            has_image = len(_shown(group[0].image))
            inputs = self.encode([self.chat_text(r.prompt, has_image) for r in group],
                                 [r.image for r in group] if has_image else None)
            limit = max(r.max_new_tokens for r in group)
            sampled = {"logits_processor": LogitsProcessorList([seeded_sampler(
                group[0].temperature, [r.seed for r in group])])} if group[0].temperature else {}
            with torch.inference_mode():
                generated = self.model.generate(**inputs, do_sample=False, num_beams=1, max_new_tokens=limit,
                                                pad_token_id=self.tokenizer.pad_token_id, **sampled)
            new = generated[:, inputs["input_ids"].shape[1]:]
            for i, request, ids in zip(batch, group, new, strict=True):
                text = self.tokenizer.decode(ids[:request.max_new_tokens], skip_special_tokens=True)
                out[i] = cut(text.strip(), request.stop)
            if progress:
                progress(len(batch))
        return out

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        """Each option's (normalised) log-likelihood as the reply, aligned with ``request.options``."""
        out: list[tuple[float, ...]] = [()] * len(requests)
        for batch in self._batches(requests):
            group = [requests[i] for i in batch]
            has_image = len(_shown(group[0].image))
            prompts = [self.chat_text(self._user_text(r), has_image) for r in group]
            images = [r.image for r in group] if has_image else None
            replies = [[o + r.suffix for o in r.options] for r in group]
            for i, scores in zip(batch, self.scorer.score(prompts, images, replies), strict=True):
                out[i] = scores
            if progress:
                progress(len(batch))
        return out

    def _batches(self, requests: Sequence[Any]) -> list[list[int]]:
        """Indices in batches of ``batch_size``, requests with and without an image kept apart (a
        processor takes images for every text of a call or for none)."""
        batches: list[list[int]] = []
        for count in sorted({len(_shown(r.image)) for r in requests}, reverse=True):  # as many images each
            ids = [i for i, r in enumerate(requests) if len(_shown(r.image)) == count]
            batches += [ids[s:s + self.batch_size] for s in range(0, len(ids), self.batch_size)]
        return batches


def _shown(image: Any) -> tuple[Any, ...]:
    """A request's images: none, its one image, or the tuple of a multi-view item's."""
    if image is None:
        return ()
    return tuple(image) if isinstance(image, tuple) else (image,)


def _load_processor(loader, model: str):
    """The checkpoint's processor; a package it needs and lacks (Qwen2-VL's video processor needs
    torchvision) is one sentence, not an import traceback."""
    try:
        return load_pretrained(loader, model, "the processor of")
    except ImportError as err:
        detail = " ".join(str(err).split())
        if "torchvision" in detail.lower():
            raise ModelLoadError(
                f"The processor of {model!r} needs torchvision, which no spatialprobe extra installs: install "
                "the torchvision build that matches your torch (the torch/torchvision pair pytorch.org lists "
                "for your platform and CUDA or CPU build, e.g. `pip install torch==X torchvision==Y` with both "
                "versions from that table), then run again.") from None
        raise ModelLoadError(f"The processor of {model!r} needs a package that is not installed: "
                             f"{detail.split('. ')[0].rstrip('.')}.") from None
