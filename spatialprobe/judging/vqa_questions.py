"""The VQA judge's questions and how an answer is read from a multimodal LLM.

* **Questions** are data (``spatialprobe/data/vqa_questions.json``): one yes/no template per
  relation (``Is the {a} above the {b}?``), one for an object's presence (``Is there {a} in the
  image?``, VISOR's object accuracy), and a suffix (``Answer yes or no.``) after a space.
* **The answer's probability mass** is read as Soft-TIFA reads it (GenEval 2,
  facebookresearch/GenEval2; its code read in the fork Yiran-SUSTech/GenEval2-Yiran,
  ``evaluation.py`` @539b1c54 ``LocalVQAJudge.send_message_with_image``, ``benchmark_schema.py``
  @b226ce91 ``YES_VARIANTS``): the softmax of the
  logits of the first token the model would write after the chat template's generation prompt,
  summed over the tokens of the answer's variants (``Yes``, ``yes``, `` Yes``, `` yes`` and the
  same for no: its ``YES_VARIANTS``/``NO_VARIANTS``). A variant counts through its first token
  that is more than a space (a SentencePiece tokenizer writes `` Yes`` as ``▁`` + ``▁Yes``, and a
  lone ``▁`` would count for yes and for no alike) and only if that token is the whole word
  (``▁Yes``, ``Ġyes``, ``Yes``; not a piece such as ``Y``); each token id counts once (with
  SentencePiece ``yes`` and `` yes`` are the same ``▁yes``, which a loop over variants would add
  twice).
* ``yes_probability`` = mass(yes) / (mass(yes) + mass(no)): normalised over the two answers, so a
  model that spreads mass on other tokens (``Sure``, a newline) is read on the yes/no axis alone.
  GenEval 2 uses the unnormalised mass of the right answer; both are reported (``yes_mass``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from spatialprobe.errors import ModelLoadError, UsageError
from spatialprobe.tasks.levels import with_article

SPACE_MARKS = "▁Ġ \n\tĊ"
"""What a token carries for a leading space or newline (SentencePiece, byte-level BPE)."""


@lru_cache(maxsize=1)
def builtin() -> dict[str, Any]:
    """The built-in questions file, as data."""
    text = (resources.files("spatialprobe") / "data" / "vqa_questions.json").read_text("utf-8")
    return json.loads(text)


def templates_for(labels: Sequence[str]) -> dict[str, str]:
    """The question template of each label (a label without one is refused, naming it)."""
    relations = builtin()["relations"]
    missing = [label for label in labels if label not in relations]
    if missing:
        raise UsageError(f"the VQA judge has no question for {', '.join(map(repr, missing))} "
                         "(spatialprobe/data/vqa_questions.json).")
    return {label: relations[label] for label in labels}


def claim_question(template: str, a: str, b: str, suffix: str) -> str:
    """``Is the man above the bus? Answer yes or no.``"""
    return f"{template.format(a=a, b=b)} {suffix}".strip()


def object_question(template: str, name: str, suffix: str) -> str:
    """``Is there a dog in the image? Answer yes or no.``"""
    return f"{template.format(a=with_article(name))} {suffix}".strip()


@dataclass(frozen=True)
class AnswerTokens:
    """The token ids whose probability counts for yes and for no, and what each is."""

    yes: tuple[int, ...]
    no: tuple[int, ...]
    pieces: dict[str, list[str]]

    def word_of(self, token: int) -> str | None:
        return "yes" if token in self.yes else "no" if token in self.no else None

    @classmethod
    def of(cls, tokenizer, answers: Mapping[str, Sequence[str]]) -> AnswerTokens:
        ids = {word: whole_word_ids(tokenizer, word, variants) for word, variants in answers.items()}
        for word in ("yes", "no"):
            if not ids.get(word):
                raise ModelLoadError(f"The tokenizer writes none of {list(answers.get(word, []))} as "
                                     f"one token that is the word {word!r}; the VQA judge cannot read it.")
        pieces = {w: tokenizer.convert_ids_to_tokens(list(v)) for w, v in ids.items()}
        return cls(ids["yes"], ids["no"], pieces)


def whole_word_ids(tokenizer, word: str, variants: Sequence[str]) -> tuple[int, ...]:
    """The distinct first tokens (past any lone space) of ``variants`` that spell ``word`` whole."""
    found: list[int] = []
    for variant in variants:
        ids = tokenizer(variant, add_special_tokens=False)["input_ids"]
        pieces = tokenizer.convert_ids_to_tokens(ids)
        first = next((i for i, p in zip(ids, pieces, strict=True) if p.strip(SPACE_MARKS)), None)
        if first is None or first in found:
            continue
        if tokenizer.convert_ids_to_tokens(first).strip(SPACE_MARKS).casefold() == word:
            found.append(first)
    return tuple(found)


def answer_masses(adapter, questions: Sequence[str], images: Sequence[Any], tokens: AnswerTokens
                  ) -> list[tuple[float, float, str | None]]:
    """(mass on yes, mass on no, hard answer) of each question about its image: the softmax of the
    next-token logits after the chat template's generation prompt (left padding: the last
    position); the hard answer is the word of the most probable token (None: neither word).
    ``images`` are paths or PIL images, or all None (a text-only turn: the judge's blind floor)."""
    import torch

    out: list[tuple[float, float, str | None]] = []
    size = adapter.batch_size
    for start in range(0, len(questions), size):
        chunk = list(images[start:start + size])
        seen = chunk[0] is not None
        prompts = [adapter.chat_text(q, seen) for q in questions[start:start + size]]
        inputs = adapter.encode(prompts, chunk if seen else None)
        with torch.inference_mode():
            logits = adapter.model(**inputs).logits[:, -1].float()
        probs = torch.softmax(logits, dim=-1)
        yes = probs[:, list(tokens.yes)].sum(-1).tolist()
        no = probs[:, list(tokens.no)].sum(-1).tolist()
        top = [tokens.word_of(int(i)) for i in probs.argmax(-1).tolist()]
        out += list(zip(yes, no, top, strict=True))
    return out


def yes_probability(yes: float, no: float) -> float:
    """The mass on yes normalised over yes and no (0.5 where the model puts none on either)."""
    return yes / (yes + no) if yes + no > 0 else 0.5


def yes_rate(answers: Sequence[str | None]) -> dict[str, Any]:
    """The judge's yes-rate: of the questions asked, how many it answered yes (hard), in percent."""
    yes = sum(answer == "yes" for answer in answers)
    return {"yes": yes, "asked": len(answers), "percent": round(100.0 * yes / len(answers), 4) if answers else None}


def yes_rate_line(record: Mapping[str, Any] | None, only_claims: bool) -> str:
    """The table's line on the judge's yes-rate (empty for a run written before it was recorded).
    Where every question is a claim the prompt makes (``only_claims``), a judge that answers yes
    to everything scores 100, and the line says so."""
    if not record or record.get("percent") is None:
        return ""
    line = (f"The judge's yes-rate: {record['percent']:.1f} % ({record['yes']} of the {record['asked']} "
            "questions asked answered yes).")
    if only_claims:
        line += (" Every question asks a claim the prompt makes, so a judge that answers yes to everything "
                 "scores 100 here.")
    return f"\n{line}\n"
