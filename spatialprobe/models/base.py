"""The one vocabulary every model adapter speaks, as lm-eval's ``LM`` has: requests in, a list out.

* :meth:`Model.score` takes :class:`ScoreRequest` records and returns, for each, one number per
  option, aligned with ``request.options``: the option's log-likelihood given the context (and the
  image, for a model that sees one), or the model's own score where it has no likelihood (a VQA
  classifier's logit, a contrastive model's similarity). Higher is better; the numbers of the
  options of one request are comparable. What exactly the number is, the adapter's
  ``describe()`` says (e.g. the masked LM's mean log-probability of a word's pieces, the causal
  LM's summed log-likelihood of the continuation).
* :meth:`Model.generate` takes :class:`GenerateRequest` records and returns one text per request
  (greedy decoding, so the same weights give the same text).

An adapter lists what it answers in ``protocols`` (``("score",)``, ``("generate",)`` or both) and
declares the settings it is built with in ``options`` (name -> :class:`Option`), so the CLI's
``--scorer-arg key=value`` is checked against the declaration (:mod:`spatialprobe.models.options`).
Each adapter also declares (:class:`Declared`) which checkpoints it accepts (read from their
``config.json``), whether it sees images, the GPUs one worker needs, and its own fingerprint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable


@dataclass(frozen=True)
class ScoreRequest:
    """One context and the options to score in it: ``prefix + option + suffix``.

    For a cloze prompt the option fills the blank (``An ant is`` [larger] `` than a bird.``); for
    a question the prefix is the question (the user's turn, for a chat model), the suffix is
    empty and the options are the candidate replies.
    """

    prefix: str
    """Text before the option: the cloze prompt's start, or the question."""
    suffix: str
    """Text after the option (keeps its leading space); ``""`` for a question."""
    options: tuple[str, ...]
    """The options to score, e.g. ``("larger", "smaller")`` or ``("yes", "no")``."""
    image: Any = None
    """The image the model sees (a PIL image or a path), for models that see one; ``None``: none."""
    passage: str = ""
    """Supporting text the question is about (reading-comprehension QA); ``""`` when there is none."""


@dataclass(frozen=True)
class GenerateRequest:
    """One prompt to answer in free text."""

    prompt: str
    """The user's message (a chat model wraps it in its chat template)."""
    image: Any = None
    """The image the model sees (a PIL image or a path); ``None``: none."""
    max_new_tokens: int = 16
    """At most this many new tokens; decoding is greedy (``do_sample=False``, one beam)."""
    stop: tuple[str, ...] = ()
    """The reply is cut at the first of these strings (lm-eval's ``until``)."""
    temperature: float = 0.0
    """0: greedy; above 0: sampled at this temperature, by an adapter that declares ``samples``."""
    seed: int | None = None
    """With a temperature: the seed of this reply's draw, so it is the same whatever batch it is in."""


def cut(text: str, stop: Sequence[str]) -> str:
    """``text`` up to the first of the ``stop`` strings (lm-eval's ``until``), stripped."""
    ends = [text.find(s) for s in stop if s and s in text]
    return (text[:min(ends)] if ends else text).strip()


Progress = Callable[[int], None]
"""Called with the number of requests just finished, for progress bars."""


@dataclass(frozen=True)
class Option:
    """One setting a component takes: its type, default, allowed values and a one-line help."""

    type: Callable[[Any], Any]
    """``str``, ``int``, ``float``, ``bool``, or a function: how a ``--scorer-arg key=value``
    string (or a recorded value) is read into the setting."""
    default: Any
    help: str = ""
    choices: tuple[Any, ...] = ()
    """The allowed values; empty: any value of ``type``."""


@runtime_checkable
class Model(Protocol):
    """A model adapter. ``score`` and/or ``generate``, as ``protocols`` says."""

    name: str
    protocols: ClassVar[tuple[str, ...]]
    options: ClassVar[Mapping[str, Option]]

    def describe(self) -> dict[str, Any]:
        """Model id, weights fingerprint and settings, for the run's configuration."""


@runtime_checkable
class Scorer(Protocol):
    """A model that answers :meth:`score` (every cloze scorer)."""

    name: str

    def describe(self) -> dict[str, Any]:
        """Model id, weights hash and settings, for the run's configuration."""

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        """One score per option of each request, aligned with ``request.options``."""


@runtime_checkable
class Generator(Protocol):
    """A model that answers :meth:`generate`."""

    name: str

    def describe(self) -> dict[str, Any]:
        """Model id, weights fingerprint and settings, for the run's configuration."""

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None
                 ) -> list[str]:
        """The reply to each request, in request order, stripped of the prompt."""


class Declared:
    """What every model adapter declares about itself, read from its class (so a model deferred to
    a Ray cluster is never built to answer): :func:`spatialprobe.models.choice.adapters_for` asks
    each registered adapter whether it ``accepts`` a checkpoint's configuration, so no adapter name
    is written outside the registry and its class."""

    sees_images: ClassVar[bool] = False
    """Whether the model is shown the item's image."""
    gpus: ClassVar[int] = 1
    """GPUs one worker of this adapter needs (0: it computes on the CPU or elsewhere, a server)."""
    specificity: ClassVar[int] = 100
    """Among the adapters that accept one checkpoint, the lower comes first (the most specific)."""
    fallback: ClassVar[bool] = False
    """Whether ``--scorer auto`` falls back to it where no adapter accepts the configuration or it
    cannot be read (one adapter declares it: the masked LM, the seed paper's model)."""
    reads_config: ClassVar[bool] = True
    """Whether the checkpoint's ``config.json`` says if this adapter applies (:meth:`accepts`); an
    adapter that reads none (a model behind a server) is taken by name alone, ``--backend NAME``."""
    samples: ClassVar[bool] = False
    """Whether ``generate`` samples a request at its ``temperature`` with its ``seed`` (``--samples K
    --temperature T``); False: it decodes greedily only, and such a run is refused."""
    judges_images: ClassVar[bool] = False
    """Whether it answers a yes/no question about an image by its next-token probabilities, as the
    VQA judge reads a multimodal LLM (:mod:`spatialprobe.judging.vqa`)."""

    model_types: ClassVar[tuple[str, ...]] = ()
    """The ``model_type``s of the checkpoints it loads, where that says it (:meth:`accepts`)."""

    @classmethod
    def accepts(cls, config: Mapping[str, Any]) -> bool:
        """Whether a checkpoint of this ``config.json`` (``model_type``, ``architectures``) loads
        here; by default, whether its ``model_type`` is one of :attr:`model_types` (none declared:
        an adapter chosen only by ``--backend``)."""
        return model_type(config) in cls.model_types

    @classmethod
    def prefers(cls, config: Mapping[str, Any]) -> bool:
        """Whether this adapter comes before the others that accept ``config`` (ViLT's VQA head)."""
        return False

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the model this adapter answers with, as a run records it among its
        inputs (:func:`spatialprobe.fingerprints.identity_of`): ``model`` (its name or path) and
        ``fingerprint`` (its weights' content, :func:`spatialprobe.fingerprints.model_input`: a
        local folder's files hashed, a hub id's commit), with the revision asked for; ``{}`` where
        it runs no model."""
        from spatialprobe.fingerprints import model_input

        name = getattr(self, "model_name", None) or getattr(self, "model_id", None)
        if not name:
            return {}
        return {k: v for k, v in model_input("the model", str(name)).items() if k != "what"}


def model_type(config: Mapping[str, Any]) -> str:
    """A configuration's ``model_type`` ("" where it has none)."""
    return str(config.get("model_type") or "")


def architectures(config: Mapping[str, Any]) -> list[str]:
    """A configuration's ``architectures`` (empty where it has none)."""
    return [str(a) for a in config.get("architectures") or []]
