"""What a judge rule is: a :class:`JudgeRule` record, its :class:`Mode`\\ s and its benchmark's
:class:`Score`, plus the ordinary judgement of an image (two boxes, the geometry, the best label).

A rule answers for each image *A relative to B*. Its geometry is a pure function that returns
``(value, explanation)``: a position rule scores one relation in ``[0, 1]``
(``geometry(box_a, box_b, relation, **thresholds)``) and the best-scoring label wins
(:func:`~spatialprobe.detectors.rules.classify_position`); a comparison rule (size, height) answers
``geometry(box_a, depth_a, box_b, depth_b, labels=...)``. A :class:`Mode` says which boxes of the
detector's list that geometry reads; a rule that reads more than one box per object, or a depth
map, gives its mode an ``image`` judgement of its own.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spatialprobe.detectors.base import Detection, best_per_object
from spatialprobe.detectors.rules import classify_position
from spatialprobe.errors import UsageError

MODES = ("reference", "corrected")
DEFAULT_MODE = "corrected"
Geometry = Callable[..., tuple[Any, str]]
Pick = Callable[[Sequence[Detection], str, str], tuple[Detection | None, Detection | None]]


@dataclass(frozen=True)
class Image:
    """One image as a rule judges it."""

    detections: Sequence[Detection]
    """Every box the detector found in it, in the detector's order."""
    depth: Any
    """Its depth map (larger = farther), where the rule reads depth; else None."""
    obj_a: str
    """Object A of its prompt (the rule answers A relative to B)."""
    obj_b: str
    """Object B of its prompt."""
    gold: str | None
    """The relation its prompt asks, which a benchmark's own score judges; None where not known."""
    labels: tuple[str, ...]
    """The task's labels: the answers the rule chooses among."""
    thresholds: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """The thresholds given with ``--rule-arg`` (without the score's cuts); the rest keep their defaults."""
    depth_region: str = "release"
    """Comparison rules: the pixels a box's mean depth averages (``rules.depth_region``)."""


def best_first(detections: Sequence[Detection], a: str, b: str) -> tuple[Detection | None, Detection | None]:
    """The highest-confidence box of each object; exact ties keep the first (the release's ``>``)."""
    best = best_per_object(detections, [a, b])
    return best[a], best[b]


def best_last(detections: Sequence[Detection], a: str, b: str) -> tuple[Detection | None, Detection | None]:
    """The highest-confidence box of each object; exact ties keep the last (GenEval's reversed argsort)."""
    best = best_per_object(detections, [a, b], ties="last")
    return best[a], best[b]


@dataclass(frozen=True)
class Mode:
    """One version of a rule (``--mode``): which boxes it reads and the geometry that judges them."""

    geometry: Geometry
    """The pure function that judges two boxes (see the module): thresholds are its keyword arguments."""
    boxes: Pick = best_first
    """Which detection of each object the geometry reads (None: the object was not found)."""
    takes_thresholds: bool = True
    """Whether ``--rule-arg`` thresholds apply in this mode (a peer's fixed comparisons take none)."""
    image: Callable[[Mode, Image], dict[str, Any]] | None = None
    """The whole judgement of an image, for a rule that reads more than a box per object or a depth
    map; None: :func:`judge_pair` (two boxes, the geometry, the best-scoring label)."""
    follows: str = ""
    """The code this mode computes, as its repository and path (``spatialprobe ls``, the docs)."""

    def judge(self, image: Image) -> dict[str, Any]:
        """One image's row: boxes and scores of both objects, ``pred`` (None: not recognized), why."""
        return (self.image or judge_pair)(self, image)


@dataclass(frozen=True)
class Score:
    """A benchmark's own score of a rule: how that benchmark turns its images into one number."""

    metric: str
    """Its name in ``summary.json``'s metrics (the judge table's headline)."""
    field: str
    """The row field (``predictions.jsonl``) holding each image's value for its gold relation."""
    how: str
    """The registered statistic that combines the images: ``share`` (of correct images) or ``mean``."""
    words: str
    """Its line in ``table.md``, ``{n}`` standing for the number of images."""
    digits: int = 1
    """Decimals shown in ``table.md``."""
    unit: str = "%"
    """Unit shown after the value (``%`` for a share, none for a 0-1 mean)."""
    of_row: Callable[[Mapping[str, Any], str, Mapping[str, Any]], Any] | None = None
    """``of_row(row, relation, args)``: an image's value from its finished row (the two best boxes
    and scores), its relation and :meth:`JudgeRule.benchmark_args`; None where the mode's image
    judgement writes ``field`` itself (it needs more than the row keeps)."""
    cuts: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """Arguments only this score reads (``--rule-arg``), each a number in [0, 1], with defaults."""
    prompt_metric: str | None = None
    """Its prompt-level score on the benchmark's own prompt file (``synthesize --benchmark``)."""
    prompt_words: str | None = None
    """The prompt-level score's line in ``table.md``."""

    def lines(self) -> tuple[tuple[str, str, int, str], ...]:
        """``(metric, words, digits, unit)`` of each number it reports, image level first."""
        found = [(self.metric, self.words, self.digits, self.unit)]
        if self.prompt_metric is not None:
            found.append((self.prompt_metric, str(self.prompt_words), self.digits, self.unit))
        return tuple(found)


@dataclass(frozen=True)
class JudgeRule:
    """A judge rule: everything the judge run, its table and the CLI know about it.

    Called, the record is its corrected geometry, so it is a position judge wherever one is asked
    for (``classify_position(registry.lookup("position-judge", name), ...)``)."""

    name: str
    """As ``--rule`` names it and ``config.json`` records it (a comparison rule: its formula)."""
    tasks: tuple[str, ...]
    """The tasks whose images it judges."""
    corrected: Mode
    """``--mode corrected`` (the default): the rule as this toolkit computes it."""
    reference: Mode | None = None
    """``--mode reference``: the peer's code, quirks included; None: no reference (refused); the
    ``corrected`` mode itself where the rule is its peer's code in both modes."""
    thresholds: tuple[str, ...] = ()
    """The geometry's keyword arguments ``--rule-arg`` may set; defaults are the geometry's own."""
    default_for: tuple[str, ...] = ()
    """The tasks it judges when no ``--rule`` is given."""
    judges: str = "2-D relations"
    """What it judges, for messages (``vdg judges 2-D relations only``)."""
    reads_depth: bool = False
    """Whether it reads a depth map (``--depth``, ``--depth-model`` and ``--depth-arg`` apply)."""
    depth_region: bool = False
    """Whether ``--depth-region`` chooses the pixels its mean box depth averages."""
    score: Score | None = None
    """Its benchmark's own score, the headline of its table; None: ISM accuracy leads."""

    def __call__(self, box_a: Any, box_b: Any, relation: str, **thresholds: Any) -> tuple[float, str]:
        return self.corrected.geometry(box_a, box_b, relation, **thresholds)

    @property
    def same_in_modes(self) -> bool:
        """True where the reference is the corrected mode (the rule is its peer's code)."""
        return self.reference is self.corrected

    def mode(self, name: str) -> Mode:
        """The mode called ``name``; refused where the rule has none by that name."""
        if name == "corrected":
            return self.corrected
        if name == "reference" and self.reference is not None:
            return self.reference
        if name == "reference":
            raise UsageError(f"--rule {self.name} has no reference mode; use --mode corrected.")
        raise UsageError(f"--mode must be one of {', '.join(MODES)}, not {name!r}.")

    def defaults(self) -> dict[str, Any]:
        """Each threshold with its default (the corrected geometry's), in its signature's order."""
        params = inspect.signature(self.corrected.geometry).parameters
        return {name: p.default for name, p in params.items() if name in self.thresholds
                and p.default is not inspect.Parameter.empty}

    def geometry_args(self, rule_args: Mapping[str, Any]) -> dict[str, Any]:
        """The rule arguments its geometry takes (the score's cuts left out)."""
        cuts = self.score.cuts if self.score else {}
        return {k: v for k, v in rule_args.items() if k not in cuts}

    def benchmark_args(self, rule_args: Mapping[str, Any]) -> dict[str, Any]:
        """What its benchmark score reads, defaults filled in ({} for a rule without a score)."""
        if self.score is None:
            return {}
        return {**self.defaults(), **self.score.cuts, **rule_args}


# ---- the ordinary judgement of an image ----------------------------------------------------------

def pair_row(det_a: Detection | None, det_b: Detection | None) -> dict[str, Any]:
    """A row's boxes and scores of the two objects (pred None until a rule answers)."""
    return {"found_a": det_a is not None, "found_b": det_b is not None,
            "box_a": list(det_a.box) if det_a else None, "box_b": list(det_b.box) if det_b else None,
            "score_a": det_a.score if det_a else None, "score_b": det_b.score if det_b else None,
            "pred": None}


def unrecognized(row: dict[str, Any], names: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The row of an image missing a box of some object (it gets the seeded guess later)."""
    row["explanation"] = f"not recognized: no box for {', '.join(n for n, d in names if d is None)}"
    return row


def classified(row: dict[str, Any], geometry: Geometry, box_a: Any, box_b: Any, labels: Sequence[str],
               **kwargs: Any) -> dict[str, Any]:
    """The best-scoring label. A rule that finds no relation cannot answer: the image counts as
    not recognized (it gets the seeded guess on the whole set), as the released code leaves such
    images out, rather than adding a "none" class to the task's labels and to macro-F1."""
    pred, why = classify_position(geometry, box_a, box_b, labels, **kwargs)
    row["pred"] = None if pred == "none" else pred
    row["explanation"] = f"not recognized: {why}" if pred == "none" else why
    return row


def judge_pair(mode: Mode, image: Image) -> dict[str, Any]:
    """The ordinary judgement: the mode's box of each object, then the best-scoring label."""
    det_a, det_b = mode.boxes(image.detections, image.obj_a, image.obj_b)
    row = pair_row(det_a, det_b)
    if det_a is None or det_b is None:
        return unrecognized(row, ((image.obj_a, det_a), (image.obj_b, det_b)))
    thresholds = image.thresholds if mode.takes_thresholds else {}
    return classified(row, mode.geometry, det_a.box, det_b.box, image.labels, **thresholds)
