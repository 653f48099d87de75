"""Yes/no answerers: a text QA model (T5 / UnifiedQA) and VQA models (ViLT, BLIP).

Each is a ``model`` adapter (:mod:`spatialprobe.models.base`): ``score(requests)`` gives one
number per option of each :class:`ScoreRequest` (the question is its ``prefix``, a text QA
context its ``passage``), and the VQA models ``generate(requests)`` their free answer. ``answer``
is the yes/no question asked through ``score``: one :class:`Answer` per question.

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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from spatialprobe.errors import UsageError
from spatialprobe.loading import device_name, dtype_name, load_pretrained, resolve_precision
from spatialprobe.models.base import Declared, GenerateRequest, Option, Progress, ScoreRequest, cut
from spatialprobe.registry import component

YES_NO = ("yes", "no")


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


@component("model", "t5", "T5/UnifiedQA seq2seq checkpoint; each option scored by decoder likelihood")
class T5YesNo(Declared):
    """Any ``AutoModelForSeq2SeqLM`` checkpoint (T5, UnifiedQA, Flan-T5): each option's decoder
    log-likelihood (``option</s>``) given the UnifiedQA-style input."""
    specificity: ClassVar[int] = 60

    @classmethod
    def accepts(cls, config: Mapping[str, Any]) -> bool:
        """A sequence-to-sequence checkpoint (T5, UnifiedQA, ...)."""
        from transformers.models.auto.modeling_auto import MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES

        from spatialprobe.models.base import model_type

        return model_type(config) in MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES


    name = "t5"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("short",)
    options: ClassVar[dict[str, Option]] = {
        "use_context": Option(bool, True, "write the question's context after it (UnifiedQA style)"),
        "lowercase": Option(bool, True, "lower-case the input, as UnifiedQA was trained")}

    def __init__(self, model: str, device: str = "auto", batch_size: int = 16,
                 use_context: bool = True, lowercase: bool = True):
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        self.model_id, self.device = model, device_name(device)
        self.tokenizer = load_pretrained(AutoTokenizer, model, "the tokenizer of")
        self.model = load_pretrained(AutoModelForSeq2SeqLM, model, "the text QA model",
                                     dtype=_dtype(self.device, prefer_bf16=True))
        self.model.to(self.device).eval()
        self.batch_size, self.use_context, self.lowercase = batch_size, use_context, lowercase

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_id,
                "input_format": "unifiedqa: '<question> \\n <context>'" + (", lower-cased" if self.lowercase else ""),
                "use_context": self.use_context, "score": "summed log-prob of 'yes</s>' vs 'no</s>'",
                "dtype": dtype_name(self.model.dtype)}

    def _targets(self, options: Sequence[str]):
        targets = self.tokenizer(list(options), padding=True, return_tensors="pt")
        return targets.input_ids.masked_fill(targets.attention_mask == 0, -100)

    def _scores(self, texts: list[str], targets):
        import torch

        enc = self.tokenizer(texts, padding=True, truncation=True, return_tensors="pt").to(self.device)
        encoder_outputs = self.model.get_encoder()(input_ids=enc.input_ids,
                                                   attention_mask=enc.attention_mask)
        columns = []
        for target in targets:
            labels = target.unsqueeze(0).repeat(len(texts), 1).to(self.device)
            decoder_input_ids = self.model.prepare_decoder_input_ids_from_labels(labels=labels)
            logits = self.model(encoder_outputs=encoder_outputs, attention_mask=enc.attention_mask,
                                decoder_input_ids=decoder_input_ids).logits.float()
            logp = torch.log_softmax(logits, dim=-1)
            token = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            columns.append((token * (labels != -100)).sum(-1))
        return torch.stack(columns, dim=-1).cpu().tolist()

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        """Summed log-probability of ``option</s>`` for each option; batches of one option set."""
        def rows(targets: Any, chunk: list[int]) -> list[list[float]]:
            return self._scores([unifiedqa_input(requests[i].prefix, requests[i].passage if self.use_context
                                                 else "", self.lowercase) for i in chunk], targets)

        return _scored_by_options(requests, self._targets, rows, self.batch_size, progress)

    def answer(self, questions: Sequence[str], contexts: Sequence[str] | None = None) -> list[Answer]:
        contexts = contexts if contexts is not None else [""] * len(questions)
        requests = [ScoreRequest(q, "", YES_NO, passage=c) for q, c in zip(questions, contexts, strict=True)]
        return [yes_no(row) for row in self.score(requests)]


def yes_no(row: Sequence[float], word: str | None = None) -> Answer:
    """The :class:`Answer` of a (yes, no) score pair; ``word``: a free answer instead of the higher."""
    yes, no = float(row[0]), float(row[1])
    return Answer(word if word is not None else ("yes" if yes >= no else "no"), yes, no)


def _by_options(requests: Sequence[ScoreRequest]) -> dict[tuple[str, ...], list[int]]:
    """Request indices grouped by their options, in first-seen order (one batch scores one set)."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, request in enumerate(requests):
        groups.setdefault(tuple(request.options), []).append(i)
    return groups


def _scored_by_options(requests: Sequence[ScoreRequest], targets_of: Callable[[tuple[str, ...]], Any],
                       rows: Callable[[Any, list[int]], Sequence[Sequence[float]]], batch_size: int | None = None,
                       progress: Progress | None = None) -> list[tuple[float, ...]]:
    """Each request's option scores, gradients off: the requests grouped by their options
    (:func:`_by_options`), each set's targets made once (``targets_of``), then ``rows(targets,
    indices)`` for batches of at most ``batch_size`` of its requests (None: all at once)."""
    import torch

    out: list[tuple[float, ...]] = [()] * len(requests)
    with torch.no_grad():
        for options, indices in _by_options(requests).items():
            targets, step = targets_of(options), batch_size or len(indices)
            for start in range(0, len(indices), step):
                chunk = indices[start:start + step]
                for i, row in zip(chunk, rows(targets, chunk), strict=True):
                    out[i] = tuple(row)
                if progress:
                    progress(len(chunk))
    return out


class _VQAModel(Declared):
    """A VQA checkpoint in float16 on CUDA (:func:`_dtype`), with its processor."""
    sees_images: ClassVar[bool] = True


    model_class = ""
    """The transformers class that loads it."""
    truncate = False
    protocols: ClassVar[tuple[str, ...]] = ("score", "generate")
    wordings: ClassVar[tuple[str, ...]] = ("short",)
    options: ClassVar[dict[str, Option]] = {}

    def __init__(self, model: str, device: str = "auto", processor=None):
        import transformers
        from transformers import AutoProcessor

        self.model_id, self.device = model, device_name(device)
        self.processor = processor or load_pretrained(AutoProcessor, model, "the processor of")
        self.model = load_pretrained(getattr(transformers, self.model_class), model,
                                     f"the {self.model_class} model", dtype=_dtype(self.device))
        self.model.to(self.device).eval()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model_id, "dtype": dtype_name(self.model.dtype)}

    def _encode(self, images, questions: Sequence[str]):
        enc = self.processor(images=list(images), text=list(questions), return_tensors="pt",
                             padding=True, truncation=self.truncate).to(self.device)
        enc["pixel_values"] = enc["pixel_values"].to(self.model.dtype)  # float16 on CUDA
        return enc

    def _requests(self, requests) -> tuple[list[Any], list[str]]:
        from spatialprobe.vision import open_image

        missing = [i for i, r in enumerate(requests) if r.image is None]
        if missing:
            raise UsageError(f"the {self.name} model answers questions about an image; request "
                             f"{missing[0]} has none.")
        return [open_image(r.image) for r in requests], [getattr(r, "prefix", None) or r.prompt
                                                         for r in requests]

    def answer(self, images, questions: Sequence[str], full_vocab: bool = False) -> list[Answer]:
        """Yes or no (the higher score), or with ``full_vocab`` the free answer, for each question."""
        requests = [ScoreRequest(q, "", YES_NO, image) for image, q in zip(images, questions, strict=True)]
        words = self.generate([GenerateRequest(q, image) for image, q in zip(images, questions, strict=True)]
                              ) if full_vocab else [None] * len(requests)
        return [yes_no(row, word) for row, word in zip(self.score(requests), words, strict=True)]

    name = ""
    score: Any
    generate: Any


@component("model", "vilt-vqa",
           "ViltForQuestionAnswering; each option's answer-class logit, or the argmax class as text")
class ViltVQA(_VQAModel):
    """``ViltForQuestionAnswering``: each option's logit among its answer classes (``label2id``);
    ``generate`` answers the argmax class."""
    specificity: ClassVar[int] = 10
    model_types: ClassVar[tuple[str, ...]] = ("vilt",)

    @classmethod
    def prefers(cls, config: Mapping[str, Any]) -> bool:
        """First for a ViLT with a question-answering head (``ViltForQuestionAnswering``)."""
        from spatialprobe.models.base import architectures

        return any(a.endswith("ForQuestionAnswering") for a in architectures(config))


    name, model_class, truncate = "vilt-vqa", "ViltForQuestionAnswering", True

    def __init__(self, model: str, device: str = "auto", processor=None):
        super().__init__(model, device, processor)
        config = self.model.config
        self.id2label = {int(k): str(v) for k, v in (config.id2label or {}).items()}
        self.label2id = {str(k).lower(): int(v) for k, v in (config.label2id or {}).items()}

    def _logits(self, requests):
        import torch

        images, questions = self._requests(requests)
        with torch.no_grad():
            return self.model(**self._encode(images, questions)).logits.float().cpu()

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        unknown = sorted({o for r in requests for o in r.options if o.lower() not in self.label2id})
        if unknown:
            raise UsageError(f"the vilt-vqa model {self.model_id} has no answer class {unknown[0]!r} "
                             "(its config.label2id).")
        out = [tuple(float(row[self.label2id[o.lower()]]) for o in r.options)
               for r, row in zip(requests, self._logits(requests), strict=True)] if requests else []
        if progress:
            progress(len(requests))
        return out

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[str]:
        out = [self.id2label[int(row.argmax())] for row in self._logits(requests)] if requests else []
        if progress:
            progress(len(requests))
        return out


@component("model", "blip", "BlipForQuestionAnswering; each option by answer-decoder likelihood, or generation")
class BlipVQA(_VQAModel):
    """``BlipForQuestionAnswering``: each option's answer-decoder log-likelihood, or its generation."""
    specificity: ClassVar[int] = 20
    model_types: ClassVar[tuple[str, ...]] = ("blip",)

    name, model_class = "blip", "BlipForQuestionAnswering"

    def _targets(self, options: Sequence[str]) -> list[list[int]]:
        from transformers import PretrainedConfig

        tok, text_config = self.processor.tokenizer, self.model.config.text_config
        assert isinstance(text_config, PretrainedConfig)  # BlipConfig turns a dict into BlipTextConfig
        return [[text_config.bos_token_id, *tok(word, add_special_tokens=False).input_ids,
                 text_config.sep_token_id] for word in options]

    def _target_scores(self, enc, targets):
        import torch

        m = self.model
        image_embeds = m.vision_model(pixel_values=enc.pixel_values).last_hidden_state
        image_mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
        question = m.text_encoder(input_ids=enc.input_ids, attention_mask=enc.attention_mask,
                                  encoder_hidden_states=image_embeds,
                                  encoder_attention_mask=image_mask)[0]
        columns = []
        for target in targets:
            ids = torch.tensor([target] * len(enc.input_ids), device=image_embeds.device)
            logits = m.text_decoder(input_ids=ids, encoder_hidden_states=question,
                                    encoder_attention_mask=enc.attention_mask).logits.float()
            logp = torch.log_softmax(logits[:, :-1], dim=-1)
            columns.append(logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).sum(-1))
        return torch.stack(columns, dim=-1).cpu().tolist()

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        def rows(targets: list[list[int]], indices: list[int]) -> list[list[float]]:
            return self._target_scores(self._encode(*self._requests([requests[i] for i in indices])), targets)

        out = _scored_by_options(requests, self._targets, rows)
        if progress:
            progress(len(requests))
        return out

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[str]:
        import torch

        if not requests:
            return []
        enc = self._encode(*self._requests(requests))
        with torch.no_grad():
            generated = self.model.generate(input_ids=enc.input_ids, pixel_values=enc.pixel_values,
                                            attention_mask=enc.attention_mask,
                                            max_new_tokens=max(r.max_new_tokens for r in requests))
        if progress:
            progress(len(requests))
        texts = self.processor.batch_decode(generated, skip_special_tokens=True)
        return [cut(text, r.stop) for text, r in zip(texts, requests, strict=True)]


def load_vqa(model: str, device: str = "auto"):
    """A yes/no VQA answerer for ``model``, chosen by its configuration (:mod:`.choice`) among the
    adapters that see images and answer the short question."""
    from spatialprobe import registry
    from spatialprobe.models.choice import auto_model

    among = tuple(n for n in registry.names("model") if getattr(registry.lookup("model", n), "sees_images", False)
                  and "short" in getattr(registry.lookup("model", n), "wordings", ()))
    name, _ = auto_model(model, among, "qa image")
    answerer = registry.build("model", registry.Spec(name, {"model": model, "device": device}))
    labels = getattr(answerer, "label2id", None)
    if labels is not None and not set(YES_NO) <= set(labels):
        raise UsageError(f"{model}: its answer classes (config.label2id) lack 'yes' or 'no'.")
    return answerer
