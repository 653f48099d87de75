"""Yes/no answerers: a text QA model (T5 / UnifiedQA) and VQA models (ViLT, BLIP).

Every answerer takes a batch and returns one :class:`Answer` per question.

- **Text (T5, UnifiedQA).** The input is written as UnifiedQA was trained:
  ``"<question> \\n <context>"`` with a literal backslash-n separator, lower-cased
  (allenai/unifiedqa README); without a context, just the question. The answer is read from the
  decoder's likelihood: ``yes_score`` is the summed log-probability of the target sequence
  ``yes</s>`` and ``no_score`` that of ``no</s>``; the higher one is the answer. No text is
  generated, so the model cannot answer anything but yes or no.
- **ViLT-VQA.** The classifier's logit of the ``yes`` and ``no`` answer classes; by default the
  answer is whichever is higher (restricted), with ``full_vocab`` the argmax over all classes.
- **BLIP-VQA.** The answer decoder's summed log-probability of ``[DEC] yes [SEP]`` vs
  ``[DEC] no [SEP]`` (restricted), or the generated answer with ``full_vocab``.

Devices and precision follow :mod:`spatialprobe.loading`: ``auto`` picks CUDA when available; on
CUDA the VQA models hold float16 weights and the text models bfloat16 where the GPU has it (T5
overflows in float16), else float16.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spatialprobe.loading import device_name, dtype_name, load_pretrained, resolve_precision


@dataclass(frozen=True)
class Answer:
    """A model's answer to one yes/no question."""

    answer: str
    """The answer: ``yes``/``no``, or any vocabulary answer when taking the full-vocabulary argmax."""
    yes_score: float
    """Score of ``yes`` (log-probability or logit, by model)."""
    no_score: float
    """Score of ``no``."""


def _dtype(device: str, prefer_bf16: bool = False) -> Any:
    """The answerer's weights' dtype under :mod:`spatialprobe.loading`'s rule.

    ``prefer_bf16``: bfloat16 where the GPU has it. T5 checkpoints were trained in bfloat16 and
    overflow in float16 (T5 v1.1 / Flan-T5 give inf/NaN scores), so the text answerer asks for it.
    """
    return resolve_precision("auto", device, "t5 answerer" if prefer_bf16 else "vqa answerers")


def unifiedqa_input(question: str, context: str = "", lowercase: bool = True) -> str:
    text = f"{question} \\n {context}" if context else question
    return text.lower() if lowercase else text


class T5YesNo:
    """Any ``AutoModelForSeq2SeqLM`` checkpoint (T5, UnifiedQA, Flan-T5) answering yes or no."""

    name = "t5"

    def __init__(self, model: str, device: str = "auto", batch_size: int = 16,
                 use_context: bool = True, lowercase: bool = True):
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        self.model_id, self.device = model, device_name(device)
        self.tokenizer = load_pretrained(AutoTokenizer, model, "the tokenizer of")
        self.model = load_pretrained(AutoModelForSeq2SeqLM, model, "the text QA model",
                                     dtype=_dtype(self.device, prefer_bf16=True))
        self.model.to(self.device).eval()
        self.batch_size, self.use_context, self.lowercase = batch_size, use_context, lowercase
        targets = self.tokenizer(["yes", "no"], padding=True, return_tensors="pt")
        self._targets = targets.input_ids.masked_fill(targets.attention_mask == 0, -100)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_id,
                "input_format": "unifiedqa: '<question> \\n <context>'" + (", lower-cased" if self.lowercase else ""),
                "use_context": self.use_context, "score": "summed log-prob of 'yes</s>' vs 'no</s>'",
                "dtype": dtype_name(self.model.dtype)}

    def _scores(self, texts: list[str]):
        import torch

        enc = self.tokenizer(texts, padding=True, truncation=True, return_tensors="pt").to(self.device)
        encoder_outputs = self.model.get_encoder()(input_ids=enc.input_ids,
                                                   attention_mask=enc.attention_mask)
        columns = []
        for target in self._targets:
            labels = target.unsqueeze(0).repeat(len(texts), 1).to(self.device)
            decoder_input_ids = self.model.prepare_decoder_input_ids_from_labels(labels=labels)
            logits = self.model(encoder_outputs=encoder_outputs, attention_mask=enc.attention_mask,
                                decoder_input_ids=decoder_input_ids).logits.float()
            logp = torch.log_softmax(logits, dim=-1)
            token = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            columns.append((token * (labels != -100)).sum(-1))
        return torch.stack(columns, dim=-1).cpu().tolist()

    def answer(self, questions: Sequence[str], contexts: Sequence[str] | None = None) -> list[Answer]:
        import torch

        contexts = contexts if (contexts is not None and self.use_context) else [""] * len(questions)
        texts = [unifiedqa_input(q, c, self.lowercase) for q, c in zip(questions, contexts, strict=True)]
        out = []
        with torch.no_grad():
            for start in range(0, len(texts), self.batch_size):
                for yes, no in self._scores(texts[start:start + self.batch_size]):
                    out.append(Answer("yes" if yes >= no else "no", yes, no))
        return out


class _VQAModel:
    """A VQA checkpoint in float16 on CUDA (:func:`_dtype`), with its processor."""

    model_class = ""
    """The transformers class that loads it."""
    truncate = False

    def __init__(self, model: str, processor, device: str):
        import transformers

        self.model_id, self.processor, self.device = model, processor, device
        self.model = load_pretrained(getattr(transformers, self.model_class), model,
                                     f"the {self.model_class} model", dtype=_dtype(device))
        self.model.to(device).eval()

    def _encode(self, images, questions: Sequence[str]):
        enc = self.processor(images=list(images), text=list(questions), return_tensors="pt",
                             padding=True, truncation=self.truncate).to(self.device)
        enc["pixel_values"] = enc["pixel_values"].to(self.model.dtype)  # float16 on CUDA
        return enc


class ViltVQA(_VQAModel):
    """``ViltForQuestionAnswering``: logits over the answer classes of its ``id2label``."""

    name, model_class, truncate = "vilt", "ViltForQuestionAnswering", True

    def __init__(self, model: str, processor, device: str):
        super().__init__(model, processor, device)
        config = self.model.config
        self.id2label = {int(k): str(v) for k, v in (config.id2label or {}).items()}
        label2id = {str(k).lower(): int(v) for k, v in (config.label2id or {}).items()}
        if "yes" not in label2id or "no" not in label2id:
            raise ValueError(f"{model}: its answer classes (config.label2id) lack 'yes' or 'no'.")
        self.yes_id, self.no_id = label2id["yes"], label2id["no"]

    def answer(self, images, questions: Sequence[str], full_vocab: bool = False) -> list[Answer]:
        import torch

        enc = self._encode(images, questions)
        with torch.no_grad():
            logits = self.model(**enc).logits.float().cpu()
        out = []
        for row in logits:
            yes, no = float(row[self.yes_id]), float(row[self.no_id])
            word = (self.id2label[int(row.argmax())] if full_vocab
                    else ("yes" if yes >= no else "no"))
            out.append(Answer(str(word), yes, no))
        return out


class BlipVQA(_VQAModel):
    """``BlipForQuestionAnswering``: the answer decoder's likelihood of yes/no, or its generation."""

    name, model_class = "blip", "BlipForQuestionAnswering"

    def __init__(self, model: str, processor, device: str):
        from transformers import PretrainedConfig

        super().__init__(model, processor, device)
        tok, text_config = processor.tokenizer, self.model.config.text_config
        assert isinstance(text_config, PretrainedConfig)  # BlipConfig turns a dict into BlipTextConfig
        self._targets = [[text_config.bos_token_id, *tok(word, add_special_tokens=False).input_ids,
                          text_config.sep_token_id] for word in ("yes", "no")]

    def _target_scores(self, enc):
        import torch

        m = self.model
        image_embeds = m.vision_model(pixel_values=enc.pixel_values).last_hidden_state
        image_mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
        question = m.text_encoder(input_ids=enc.input_ids, attention_mask=enc.attention_mask,
                                  encoder_hidden_states=image_embeds,
                                  encoder_attention_mask=image_mask)[0]
        columns = []
        for target in self._targets:
            ids = torch.tensor([target] * len(enc.input_ids), device=image_embeds.device)
            logits = m.text_decoder(input_ids=ids, encoder_hidden_states=question,
                                    encoder_attention_mask=enc.attention_mask).logits.float()
            logp = torch.log_softmax(logits[:, :-1], dim=-1)
            columns.append(logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).sum(-1))
        return torch.stack(columns, dim=-1).cpu().tolist()

    def answer(self, images, questions: Sequence[str], full_vocab: bool = False) -> list[Answer]:
        import torch

        enc = self._encode(images, questions)
        with torch.no_grad():
            scores = self._target_scores(enc)
            words = None
            if full_vocab:
                generated = self.model.generate(input_ids=enc.input_ids, pixel_values=enc.pixel_values,
                                                attention_mask=enc.attention_mask, max_new_tokens=10)
                words = self.processor.batch_decode(generated, skip_special_tokens=True)
        return [Answer(words[i].strip() if words else ("yes" if yes >= no else "no"), yes, no)
                for i, (yes, no) in enumerate(scores)]


VQA_ADAPTERS = {"vilt": ViltVQA, "blip": BlipVQA}


def load_vqa(model: str, device: str = "auto"):
    """A VQA answerer for ``model``, chosen by its config's ``model_type``."""
    from transformers import AutoConfig, AutoProcessor

    device = device_name(device)
    config = load_pretrained(AutoConfig, model, "the configuration of")
    processor = load_pretrained(AutoProcessor, model, "the processor of")
    adapter = VQA_ADAPTERS.get(config.model_type)
    if adapter is None:
        raise ValueError(f"{model}: model type {config.model_type!r} has no VQA adapter; "
                         f"supported: {', '.join(sorted(VQA_ADAPTERS))}.")
    return adapter(model, processor, device)
