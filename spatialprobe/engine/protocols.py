"""Two answer protocols, side by side: the options' likelihood, and the parsed generation.

A task puts each item to a model as a :class:`Question`: the user's turn (the question, worded by
the task's file) and the options that answer it. Then

* ``likelihood``: the model scores every option as the reply to the question
  (:meth:`~spatialprobe.models.base.Scorer.score`); the answer is the best-scored option (the
  first of equal ones). Nothing is parsed, so nothing fails; the choice does not depend on the
  order the options come in.
* ``generate``: the model answers in free text (:meth:`~spatialprobe.models.base.Generator.generate`,
  greedy), and :func:`spatialprobe.readers.option_parser.parse_answer` maps the reply to an option
  (option letter, option text, yes/no words, the benchmark's lenient rule) or to a parse failure,
  which counts as wrong and is reported as its own rate.
* ``both``: the two, on the same items; the run reports both results, how often they agree, and
  the paired test between them (:func:`spatialprobe.metrics.protocol_comparison.protocol_comparison`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spatialprobe.errors import UsageError
from spatialprobe.models.base import GenerateRequest, ScoreRequest
from spatialprobe.readers.option_parser import Lenient, parse_answer

PROTOCOLS = ("likelihood", "generate", "both")
"""What ``--protocol`` takes."""
_METHOD = {"likelihood": "score", "generate": "generate"}


@dataclass(frozen=True)
class Question:
    """One item as a question to a chat model."""

    prompt: str
    """The user's turn: the question, with the options listed where the task's wording lists them."""
    options: tuple[str, ...]
    """The replies that answer it, each meaning one label of the task."""
    image: Any = None
    """The image shown with the question (a PIL image or a path), a tuple of them shown together
    (a multi-view item; only a model whose ``multi_image`` is true takes one); ``None``: a text-only turn."""
    suffix: str = ""
    """Text after each option (a contrastive or cloze template's end); ``""`` for a question."""
    passage: str = ""
    """Supporting text for reading-comprehension QA; ``""`` when there is none."""
    target: str = ""
    """Where set, option ``i`` is answered by the likelihood of this text after ``contexts[i]``
    (one request per option: ``contexts[i] + " "`` then ``target``); ``""``: the options are scored."""
    contexts: tuple[str, ...] = ()
    """With ``target``: per option, the context the target is scored after."""
    seed: int | None = None
    """The seed of a sampled reply (``--temperature``, :mod:`spatialprobe.engine.repeated_sampling`); None: greedy."""


def protocols_of(protocol: str) -> tuple[str, ...]:
    """The protocols ``--protocol`` runs: ``both`` is likelihood and generate, in that order."""
    if protocol not in PROTOCOLS:
        raise UsageError(f"--protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}.")
    return ("likelihood", "generate") if protocol == "both" else (protocol,)


def check_protocol(model: Any, protocol: str) -> tuple[str, ...]:
    """The protocols to run; one sentence where the model cannot answer one of them."""
    wanted = protocols_of(protocol)
    offers = tuple(getattr(model, "protocols", ())) or tuple(m for m in ("score", "generate")
                                                             if callable(getattr(model, m, None)))
    missing = [p for p in wanted if _METHOD[p] not in offers]
    if missing:
        name = getattr(model, "name", type(model).__name__)
        can = " or ".join(p for p, m in _METHOD.items() if m in offers) or "neither protocol"
        raise UsageError(f"the {name} model cannot answer by --protocol {protocol} (it has no "
                         f"{'/'.join(_METHOD[p] for p in missing)}); it answers by {can}.")
    return wanted


def ask(model: Any, questions: Sequence[Question], protocol: str, max_new_tokens: int = 16,
        lenient: Lenient | None = None, temperature: float = 0.0) -> list[dict[str, Any]]:
    """Each question's answers by the protocols ``protocol`` names, as JSON-ready dicts:

    ``{"likelihood": {"scores": [...], "option": str}, "generate": {"reply": str, "option": str |
    None, "rule": str}}`` (only the protocols asked for; a sampled reply also has its ``seed``). A
    batch goes to the model in one call per protocol; the adapter batches inside. ``temperature``
    above 0 samples each reply with its question's ``seed``."""
    wanted = check_protocol(model, protocol)
    answers: list[dict[str, Any]] = [{} for _ in questions]
    if "generate" in wanted and any(q.target for q in questions):
        raise UsageError("these items score each option in a context of its own: they are answered by "
                         "--protocol likelihood, not by a generated reply.")
    if "likelihood" in wanted:
        scores = _scores(model, questions)
        for answer, q, row in zip(answers, questions, scores, strict=True):
            values = [float(s) for s in row]
            best = values.index(max(values))  # ties: the first
            answer["likelihood"] = {"scores": values, "option": q.options[best]}
    if "generate" in wanted:
        replies = model.generate([GenerateRequest(q.prompt, q.image, max_new_tokens, temperature=temperature,
                                                  seed=q.seed) for q in questions])
        for answer, q, reply in zip(answers, questions, replies, strict=True):
            parsed = parse_answer(reply, q.options, lenient)
            answer["generate"] = {"reply": reply, "option": parsed.option, "rule": parsed.rule}
            if temperature:
                answer["generate"]["seed"] = q.seed
    return answers


def _scores(model: Any, questions: Sequence[Question]) -> Sequence[Sequence[float]]:
    """Each question's option scores in one ``score`` call: a question with a ``target`` is one
    request per option (the target after the option's context), gathered back in option order."""
    if not any(q.target for q in questions):
        return model.score([ScoreRequest(q.prompt, q.suffix, q.options, q.image, q.passage) for q in questions])
    requests: list[ScoreRequest] = []
    spans: list[tuple[int, int]] = []
    for q in questions:
        if q.target:
            spans.append((len(requests), len(q.options)))
            requests += [ScoreRequest(c if c[-1:].isspace() else f"{c} ", q.suffix, (q.target,), q.image, q.passage)
                         for c in q.contexts]
        else:
            spans.append((len(requests), 0))
            requests.append(ScoreRequest(q.prompt, q.suffix, q.options, q.image, q.passage))
    flat = model.score(requests)
    if len(flat) != len(requests):
        raise ValueError(f"the model answered {len(flat)} of {len(requests)} score requests")
    return [[float(row[0]) for row in flat[start:start + n]] if n else [float(s) for s in flat[start]]
            for start, n in spans]
