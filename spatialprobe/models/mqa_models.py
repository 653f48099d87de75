"""The generate adapter, through the model vocabulary (:mod:`spatialprobe.models.base`).

* :class:`GenerativeAnswerer` - the ``generate`` adapter: any ``AutoModelForImageTextToText``
  checkpoint with its ``AutoProcessor``; the chat template when the processor has one, greedy
  decoding (``do_sample=False``, one beam), so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from spatialprobe.loading import autocast, device_name, load_pretrained
from spatialprobe.models.base import Declared, GenerateRequest, Option, Progress, cut
from spatialprobe.registry import component
from spatialprobe.vision import open_image

PROMPT = ("You are an expert in spatial relation reasoning. Look at the image and answer the "
          "question by choosing exactly one of the options. Reply with the option only, no "
          "explanation.\nQuestion: {question}\nOptions: {options}")


@component("model", "generate", "any AutoModelForImageTextToText checkpoint with its processor: greedy generation")
class GenerativeAnswerer(Declared):
    """A ``model`` adapter: ``generate(requests)`` answers each prompt (in the processor's chat
    template, the image in the user turn) by greedy decoding, one request at a time."""
    sees_images: ClassVar[bool] = True
    specificity: ClassVar[int] = 50

    @classmethod
    def accepts(cls, config: Mapping[str, Any]) -> bool:
        """An image-text-to-text checkpoint (``AutoModelForImageTextToText`` maps its ``model_type``)."""
        from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

        from spatialprobe.models.base import model_type

        return model_type(config) in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES


    kind = name = "generate"
    protocols: ClassVar[tuple[str, ...]] = ("generate",)
    wordings: ClassVar[tuple[str, ...]] = ("question",)
    not_asked: ClassVar[tuple[str, ...]] = ("prompt", "max_new_tokens")
    """Options of the earlier spatialmqa kind only: the ask kind words the question itself and
    takes --max-new-tokens."""
    options: ClassVar[dict[str, Option]] = {
        "prompt": Option(str, PROMPT, "the SpatialMQA instruction, with {question} and {options}"),
        "max_new_tokens": Option(int, 16, "at most this many generated tokens")}

    def __init__(self, model: str, device: str = "auto", prompt: str = PROMPT,
                 max_new_tokens: int = 16):
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.model_name = str(model)
        self.device = device_name(device)
        self.prompt = prompt
        self.max_new_tokens = max_new_tokens
        self.processor = load_pretrained(AutoProcessor, self.model_name, "processor")
        dtype = "checkpoint" if self.device.startswith("cuda") else "fp32"  # loading.CUDA_DEFAULTS
        self.model = load_pretrained(AutoModelForImageTextToText, self.model_name,
                                     "image-text-to-text model", dtype=dtype).to(self.device).eval()

    def describe(self) -> dict[str, Any]:
        return {"method": "generate", "model": self.model_name, "device": self.device,
                "prompt": self.prompt, "decoding": {"do_sample": False, "num_beams": 1,
                                                    "max_new_tokens": self.max_new_tokens},
                "weights_revision": getattr(self.model.config, "_commit_hash", None)}

    def _text(self, question: str, options: Sequence[str]) -> str:
        return self._wrap(self.prompt.format(question=question, options="; ".join(options)))

    def _wrap(self, text: str) -> str:
        """The user's message in the chat template with the image, or after the image token."""
        if getattr(self.processor, "chat_template", None):
            messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
            return self.processor.apply_chat_template(messages, add_generation_prompt=True)
        image_token = getattr(self.processor, "image_token", None)  # e.g. LLaVA's "<image>"
        text += "\nAnswer:"
        return f"{image_token}\n{text}" if image_token else text

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[str]:
        import torch

        out = []
        for request in requests:  # one at a time: no padding-side surprises
            inputs = self.processor(images=[open_image(request.image)], text=[self._wrap(request.prompt)],
                                    return_tensors="pt").to(self.device)
            with torch.no_grad(), autocast(self.device):
                generated = self.model.generate(**inputs, do_sample=False, num_beams=1,
                                                max_new_tokens=request.max_new_tokens)
            new_tokens = _new_tokens(generated[0], inputs["input_ids"][0])
            out.append(cut(self.processor.batch_decode([new_tokens], skip_special_tokens=True)[0],
                           request.stop))
            if progress:
                progress(1)
        return out

    def answer_batch(self, items: Sequence[tuple[Any, str, Sequence[str]]]) -> list[dict[str, Any]]:
        """(image, question, options) -> {"output": the generated text}."""
        requests = [GenerateRequest(self.prompt.format(question=q, options="; ".join(options)), image,
                                    self.max_new_tokens) for image, q, options in items]
        return [{"output": text} for text in self.generate(requests)]


def _new_tokens(generated, prompt_ids):
    """The generated continuation: decoder-only models echo the prompt first, encoder-decoder
    models (InstructBLIP/BLIP-2 with Flan-T5, ...) return only new tokens."""
    n = len(prompt_ids)
    if len(generated) >= n and bool((generated[:n] == prompt_ids.to(generated.device)).all()):
        return generated[n:]
    return generated
