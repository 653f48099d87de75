"""Back-translated prompt and answer candidates (English -> German -> English).

The paper used the WMT19 news translation models of Ng et al. (2019); transformers ships the
same models as FSMT (``facebook/wmt19-en-de``, ``facebook/wmt19-de-en``).

Templates are not translated with their ``[A]``-style placeholders (translation mangles them).
Instead the hand-written template is filled with an example instance and its gold answer word,
e.g. "An ant is smaller than a bird."; each back-translation is mapped back by replacing the
example's noun phrases and the answer word with their placeholders. A candidate that lost a
placeholder or the answer word is dropped, and duplicates are removed; the hand-written
template always comes first.

Answer words are back-translated in the same example sentence: a candidate that keeps the text
around the answer gives the word in its place; translations of the word alone add more. Only
single words are kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from spatialprobe import tasks
from spatialprobe.prompts.templates import MASK, Candidates, manual, render
from spatialprobe.records import Dataset, Instance
from spatialprobe.tasks.levels import with_article


class Translator(Protocol):
    def translate(self, texts: Sequence[str], n: int) -> list[list[str]]:
        """The ``n`` best translations of each text, best first."""


class FSMTTranslator:
    """A transformers FSMT (WMT19) model with beam search returning n-best lists."""

    def __init__(self, model: str, device: str = "auto", max_new_tokens: int = 64):
        from transformers import FSMTForConditionalGeneration, FSMTTokenizer

        from spatialprobe.loading import load_pretrained, resolve_device

        self.device = resolve_device(device)
        self.tokenizer = load_pretrained(FSMTTokenizer, model, "the translation tokenizer")
        self.model = load_pretrained(FSMTForConditionalGeneration, model, "the translation model", dtype="fp32")
        self.model.eval().to(self.device)
        self.max_new_tokens = max_new_tokens

    def translate(self, texts: Sequence[str], n: int) -> list[list[str]]:
        import torch

        batch = self.tokenizer(list(texts), return_tensors="pt", padding=True).to(self.device)
        with torch.inference_mode():
            out = self.model.generate(**batch, num_beams=max(n, 2), num_return_sequences=n,
                                      max_new_tokens=self.max_new_tokens, early_stopping=True)
        decoded = self.tokenizer.batch_decode(out, skip_special_tokens=True)
        return [decoded[i * n:(i + 1) * n] for i in range(len(texts))]


def round_trip(sentences: Sequence[str], forward: Translator, backward: Translator, n: int) -> list[list[str]]:
    """For each sentence, back-translations ordered by (German rank + English rank), deduplicated."""
    german = forward.translate(sentences, n)
    results = []
    for options in german:
        english = backward.translate(options, n)
        ranked = sorted(((i + j, text.strip()) for i, texts in enumerate(english) for j, text in enumerate(texts)),
                        key=lambda pair: pair[0])
        results.append(list(dict.fromkeys(text for _, text in ranked if text)))
    return results


def _example(dataset: Dataset) -> Instance:
    """An instance whose objects are single words, for clean alignment."""
    for inst in dataset.instances:
        if " " not in inst.obj_a and " " not in inst.obj_b:
            return inst
    return dataset.instances[0]


def _to_template(text: str, inst: Instance, answer: str, task: str) -> str | None:
    mapping = ([(inst.text.strip(), "[SCENARIO]"), (inst.pronoun, "[PRONOUN]"), (inst.obj_b, "[OBJECT]")]
               if not tasks.get(task).is_comparison else
               [(with_article(inst.obj_a), "[A]"), (with_article(inst.obj_b), "[B]")])
    mapping.append((answer, MASK))
    for phrase, placeholder in mapping:
        pattern = re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)", flags=re.IGNORECASE)
        if len(pattern.findall(text)) != 1:
            return None
        text = pattern.sub(placeholder, text)
    return text if all(p in text for p in tasks.get(task).placeholders) else None


def template_candidates(dataset: Dataset, forward: Translator, backward: Translator, n: int = 10) -> list[str]:
    base = manual(dataset.task)
    template, inst = base.templates[0], _example(dataset)
    sentence = render(template, inst, inst.label)
    found = [t for t in (_to_template(c, inst, inst.label, dataset.task)
                         for c in round_trip([sentence], forward, backward, n)[0]) if t]
    return list(dict.fromkeys([template, *found]))[:n]


def answer_candidates(dataset: Dataset, forward: Translator, backward: Translator, n: int = 10) -> dict[str, list[str]]:
    template = manual(dataset.task).templates[0]
    out = {}
    for label in dataset.labels:
        inst = next((i for i in dataset.instances if i.label == label), _example(dataset))
        sentence = render(template, inst, label)
        head, _, tail = sentence.partition(label)
        words: list[str] = [label]
        words.extend(candidate[len(head):len(candidate) - len(tail)]
                     for candidate in round_trip([sentence], forward, backward, n)[0]
                     if candidate.lower().startswith(head.lower()) and candidate.lower().endswith(tail.lower()))
        words.extend(round_trip([label], forward, backward, n)[0])
        cleaned = (w.strip().strip(".,;:!?\"'").lower() for w in words)
        out[label] = list(dict.fromkeys(w for w in cleaned if w and re.fullmatch(r"[a-z-]+", w)))[:n]
    return out


def backtranslate(dataset: Dataset, forward: Translator, backward: Translator, n: int = 10,
                  source: str = "backtranslate") -> Candidates:
    return Candidates(dataset.task, tuple(template_candidates(dataset, forward, backward, n)),
                      {k: tuple(v) for k, v in answer_candidates(dataset, forward, backward, n).items()},
                      source)
