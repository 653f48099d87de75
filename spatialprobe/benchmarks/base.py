"""What a source is: its items, each worded for every way a model can be asked, and what the
benchmark itself declares (label vocabulary, clusters, folds, answer prior, official metrics,
hooks).

Wordings (an adapter lists those it understands in ``wordings``, next to ``protocols``; the run
takes the first of the adapter's that the source's items offer):

* ``question`` - a chat turn: the question with the instruction and, for multiple choice, the
  lettered options; the options are the replies (``Yes``/``No``, the option texts). Multimodal LLMs.
* ``short`` - the bare question, its passage apart, the options answer words (``yes``/``no``):
  reading-comprehension QA (T5/UnifiedQA) and VQA classifiers (ViLT, BLIP).
* ``contrastive`` - one sentence per option, scored against the image (CLIP, SigLIP): VSR's caption
  and its negation, a SpatialMQA option in its template.
* ``cloze`` - a sentence with the option in a blank (masked LMs).

Every wording's options map to labels of the source's one vocabulary (``Wording.labels``), so the
same item gives the same row (key, gold, pred, clusters) whatever the model family.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling

if TYPE_CHECKING:
    from spatialprobe.benchmarks.local_copy import Records

WORDINGS = ("question", "short", "contrastive", "cloze")
"""Every wording a source may offer, in the order the docstring describes them."""


@dataclass(frozen=True)
class Wording:
    """One way to put an item to a model: ``prompt + option + suffix`` per option."""

    prompt: str
    """The question (chat turn, bare question), or the text before the option (``contrastive``, ``cloze``)."""
    options: tuple[str, ...]
    """What the model scores or names: replies, answer words or whole sentences."""
    labels: tuple[str, ...]
    """``labels[i]``: the source's label ``options[i]`` means."""
    suffix: str = ""
    """Text after the option (``contrastive``/``cloze`` templates); ``""`` for a question."""
    passage: str = ""
    """Supporting text for reading-comprehension QA; ``""`` when there is none."""
    target: str = ""
    """Where set, what is scored for option ``i`` is this text after ``contexts[i]`` (its
    likelihood given the context: EWoK's minimal pairs), by likelihood only; ``""``: the options."""
    contexts: tuple[str, ...] = ()
    """With ``target``: per option, the context the target is scored after."""


@dataclass(frozen=True)
class SourceItem:
    """One item as its source words it (``question``, ``options``, ``labels``: its ``question`` wording)."""

    key: str
    """Stable within the source: the row's ``instance_id`` and the cache key's tail."""
    question: str
    """The text the model is asked (its options appended where the benchmark letters them)."""
    options: tuple[str, ...]
    """What is scored by likelihood, or read from a reply: option texts, or the letters of a lettered item."""
    labels: tuple[str, ...]
    """``labels[i]`` is the label ``options[i]`` means."""
    gold: str
    """The right label (one of ``labels``; a number's text for an item without options)."""
    image: str | None
    """The item's own image (a path), or None where it has none."""
    objects: tuple[str, ...]
    """What its image shows (never shown to it under ``shuffled``)."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Row fields: the resampling clusters (``obj_a``/``obj_b``, ``image``) and groups."""
    wordings: Mapping[str, Wording] = field(default_factory=dict)
    """Its other wordings by name (``short``, ``contrastive``, ``cloze``)."""
    images: tuple[str, ...] = ()
    """Further images of the same item (several images of one scenario), voted over (:func:`vote`)."""
    fact: tuple[str, str, str] | None = None
    """The canonical spatial fact (subject, relation, object), where the item states one."""
    views: tuple[str, ...] = ()
    """Images shown together with ``image`` in the same question (BLINK's multi-view items,
    MMSI-Bench): unlike ``images``, not voted over but asked at once; ``()`` for one image."""

    def wording(self, name: str) -> Wording | None:
        """The item in wording ``name``, or None where the source does not offer it."""
        if name == "question" and name not in self.wordings:  # a source may word it itself (EWoK's target)
            return Wording(self.question, self.options, self.labels)
        return self.wordings.get(name)

    def offered(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(("question", *self.wordings)))


@dataclass(frozen=True)
class Official:
    """A benchmark's official metrics: summary name -> statistic of
    :data:`spatialprobe.metrics.weighted.STATISTICS`, on the row field ``pred``, overall and
    broken down by each row field in ``groups`` (rows whose field is empty count in no group).

    The source's ``official`` declarations are the one list of what it reports: the run's table,
    ``report``'s columns, the paired test of ``report A B`` and ``compare``'s headline (the first
    metric) read it. Each metric is measured under the source's official reader (``pred``: its
    reading; another field: what :attr:`Source.matching` derives from it) and again under
    ``strict`` as ``strict_<name>`` (on ``<pred>_strict``), unless it reads no answer (:attr:`reads`)."""

    metrics: Mapping[str, str]
    groups: tuple[str, ...] = ()
    pred: str = "pred"
    only: str | None = None
    """A row field that must be true for a row to count (COMFORT's 36 scored points of a sweep); None: every row."""
    reads: bool = True
    """Whether the metric reads the model's answers; False: a baseline of the items alone (MindCube's
    chance and frequency), measured once, with no ``strict_`` twin."""


Matching = Callable[[SourceItem, "str | None", "str | None"], dict[str, Any]]
"""A source's hook: (item, the generated reply or None, the label a reader read) -> extra row
fields (SITE's term of the chance-adjusted accuracy, a numeric item's MRA); called once per reader
(the official one and ``strict``), so the fields must follow from the label alone - a reply is
read by a registered reader (:attr:`Source.reader`), never by the hook."""


@dataclass(frozen=True)
class Source:
    """Where the items come from and how they are resampled and scored."""

    name: str
    """Its registered name (``task``, ``vsr``, ``spatialmqa``, ``qa``)."""
    task: str
    """What the run's summary names as its task (a probe task, a benchmark's name or subset)."""
    dataset: str
    """name@content-version of the items."""
    labels: tuple[str, ...]
    """The one label vocabulary of gold and predictions."""
    items: tuple[SourceItem, ...]
    spec: Resampling
    """The cluster declaration its intervals and paired tests resample."""
    folds: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    """Per fold (dev item keys, test item keys); empty: every item is tested once, pooled."""
    prior_labels: tuple[str, ...] | None = None
    """Gold labels of a training split (the answer prior) where the source has one."""
    prior_by: str = "label"
    """What the answer prior answers every item with: the most frequent gold ``label``, or (``position``:
    which-one questions whose options are the item's own names) the option at the gold's most frequent
    position (``option 1``, ``option 2``, ...)."""
    lenient: Callable[[str, Sequence[str]], str | None] | None = None
    """The benchmark's lenient parse of a generated reply (SpatialMQA), the parser's last rule."""
    reader: str = "toolkit"
    """Its official reader (:mod:`spatialprobe.readers`, by registered name): its authors' code,
    transcribed; ``toolkit`` where the authors publish none. Every source is also read by ``strict``."""
    details: Mapping[str, Any] = field(default_factory=dict)
    official: tuple[Official, ...] = ()
    """Its official metrics; empty: accuracy and macro-F1 of ``pred`` (over folds where it has them)."""
    matching: Matching | None = None
    """Extra row fields from each answer (the statistics of ``official`` may read them)."""
    combine: Callable[[Sequence[str], Sequence[str]], str | None] | None = None
    """The benchmark's own way from an item's generated replies (one per image) and its labels to one
    label, where it has one (image QA's runs of the retired kind's ``--full-vocab``: the most frequent
    reply, any word counted); None: the replies parsed to labels and voted over (:func:`vote`)."""
    scored: Callable[[SourceItem, Sequence[float]], dict[str, Any]] | None = None
    """Extra row fields from an item's option scores (likelihood protocol): GenEval 2's Soft-TIFA
    mass on the right answer."""
    extras: Callable[[Any, Mapping[str, Any]], None] | None = None
    """Files beyond the table, written from the run folder and its summary (VSR's plot)."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """What rebuilds it (:func:`spatialprobe.engine.rebuild.rebuild_source`): ``name`` plus the module's own keys."""
    variants: Mapping[str, str] = field(default_factory=dict)
    """The robustness protocols the benchmark itself declares: protocol name (``flip``, ``pair``,
    ``set``, ``sweep``, ``circular``) -> the row field whose value groups the items that must all be
    right for the group to count (consistent accuracy beside the vanilla one). Empty: none."""
    sampling: str = "mean"
    """How an item asked several times (``--samples K``) is scored: ``mean`` (every metric over all
    samples: the mean over samples, OmniSpatial's rule) or ``vote`` (the most frequent answer of its
    samples), :mod:`spatialprobe.engine.repeated_sampling`."""
    question_free: str | None = None
    """The first label of a comparison whose options are the items' own objects (size, height:
    "which is larger, A or B?"): a model that scores them is also asked each item's options
    without the question, and its choices' consistency under this label is reported beside the
    question-free ones (:mod:`spatialprobe.engine.question_free`); None: not asked."""

    def offered(self) -> tuple[str, ...]:
        """The wordings every item offers."""
        if not self.items:
            return ("question",)
        common = set(self.items[0].offered())
        for item in self.items[1:]:
            common &= set(item.offered())
        return tuple(w for w in self.items[0].offered() if w in common)


def vote(labels_per_image: Sequence[str | None], scores: Sequence[Sequence[float]] | None,
         options: Sequence[str], labels: Sequence[str]) -> str | None:
    """One answer from an item's several images: the options' scores averaged (the best, the first
    of equal ones) where the model scored them, else the most frequent answer (ties: the first in
    alphabetical order), as image QA has always combined them."""
    if scores:
        mean = [sum(row[i] for row in scores) / len(scores) for i in range(len(options))]
        return labels[mean.index(max(mean))]
    counts: dict[str, int] = {}
    for label in labels_per_image:
        if label is not None:
            counts[label] = counts.get(label, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] if counts else None


def given(settings: Mapping[str, Any], needs: str | None = None) -> dict[str, Any]:
    """What a benchmark module is built from, whether ``settings`` come from ``spatialprobe bench``
    (``data`` a path) or from a run's config (``data`` recorded as ``{"file", "version"}``):
    ``data``, ``images``, ``split``, ``subset``, ``limit``, the module's ``options`` and the
    ``wording`` asked (``--wording``: one of the module's ``WORDINGS``; None: the toolkit's).
    ``needs``: for a module that reads a local copy, the sentence that refuses it without ``--data``
    (what the copy is)."""
    data = settings.get("data")
    if isinstance(data, Mapping):
        data = data.get("file")
    if data is None and needs is not None:
        raise UsageError(needs)
    return {"data": str(data) if data is not None else None, "images": settings.get("images"),
            "split": settings.get("split"), "subset": settings.get("subset"), "limit": settings.get("limit"),
            "options": dict(settings.get("options") or {}), "wording": settings.get("wording")}


def recorded(name: str, found: Mapping[str, Any], data: str, version: str, **more: Any) -> dict[str, Any]:
    """The ``source`` settings a benchmark module records: :func:`given`'s keys with the data's path
    resolved (a folder or file; ``hf:NAME`` as named) and its content version, plus ``more``."""
    from pathlib import Path

    path = data if data.startswith("hf:") else str(Path(data).resolve())
    images = found.get("images")
    return {"name": name, "data": {"file": path, "version": version},
            "images": str(Path(images).resolve()) if images else None, "split": found.get("split"),
            "subset": found.get("subset"), "limit": found.get("limit"), "options": dict(found.get("options") or {}),
            **({"wording": found["wording"]} if found.get("wording") else {}), **more}


def copy_source(name: str, found: Mapping[str, Any], records: Records, items: Sequence[SourceItem],
                labels: tuple[str, ...], spec: Resampling, details: Mapping[str, Any] | None = None,
                **declared: Any) -> Source:
    """Benchmark ``name``'s Source of ``items`` read from the user's copy (``records``; ``found``:
    :func:`given`'s): task ``name``, dataset ``name@`` the copy's content version, the settings
    :func:`recorded` from ``found``, details counting the copy's questions (and ``details``);
    ``declared``: the module's other Source fields (``official``, ``reader``, ``matching``, ...)."""
    return Source(name, name, f"{name}@{records.version}", labels, tuple(items), spec,
                  settings=recorded(name, found, found["data"], records.version),
                  details={"total": len(records.rows), "what": "questions", **(details or {})}, **declared)
