"""The probe run kind: dataset -> candidates -> cell scores -> per-fold selection -> metrics.

``run_probe`` is what ``spatialprobe probe`` calls. The run spine (:mod:`spatialprobe.runner`)
does the run plumbing; this module says only what a probe is: its items are the (template x
instance) cells, a batch is scored in one call of the scorer, and its metrics come from choosing
the best (template, answer set) on each fold's dev set and measuring on that fold's test set.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from spatialprobe import registry, tasks
from spatialprobe.errors import UsageError
from spatialprobe.metrics.classification import confusion
from spatialprobe.metrics.estimates import point_estimates
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.models import chat
from spatialprobe.probing.scores import cell_key, grid_from, score_cells
from spatialprobe.probing.selection import choose, predictions
from spatialprobe.prompts.templates import Candidates, check_labels
from spatialprobe.records import Dataset, Prediction
from spatialprobe.reports.tables import probe_table
from spatialprobe.runner import RUNTIME_KEYS, Evaluation, Item, RunKind, execute
from spatialprobe.runner.components import component
from spatialprobe.runner.folders import RunOut
from spatialprobe.runner.settings import NAMES_MODEL, OPTIONAL, models
from spatialprobe.tasks.data import make_folds
from spatialprobe.tiny import untrained

CELLS_PER_COMMIT = 512
"""Cells scored per scorer call and committed per transaction (a kill loses at most these)."""


@dataclass(frozen=True)
class ProbeSettings:
    """What decides a probe's numbers (and where it runs); dumped into ``config.json``."""

    model: str
    """Model name or path (``dummy`` for the untrained smoke scorer)."""
    folds: int = 5
    """Number of object-disjoint folds (at least 2: one chooses, the others test)."""
    seed: int = 0
    """Seed of the fold assignment (and of the dummy scorer)."""
    device: str = "auto"
    """``auto``, ``cpu`` or ``cuda`` (runtime: not part of the run's identity)."""
    batch_size: int = 64
    """Sequences per forward pass (runtime)."""
    scorer: str = "auto"
    """Registered scorer: ``auto`` picks ``dummy`` for the dummy model, else reads the checkpoint's
    configuration (:mod:`.scorer_choice`): ``vilt`` for ViLT, ``hf-causal`` for a causal LM,
    else ``hf-mlm`` (any masked LM, converted VinVL included; also when no config can be read)."""
    image: str | None = None
    """Vision-language scorers only: ``blank`` (default: a neutral gray image) or a synthesis run."""
    normalize: str | None = None
    """hf-causal only: ``sum`` (default), ``token`` or ``char`` (see :mod:`.causal_lm`)."""
    format: str = "plain"
    """``plain`` (cloze sentences) or ``chat`` (hf-causal only: the question in the chat template)."""
    scorer_args: Mapping[str, Any] = field(default_factory=dict)
    """The scorer's own options (``--scorer-arg key=value``), checked against what it declares
    (:mod:`spatialprobe.models.options`); ``image``, ``normalize`` and ``format`` are aliases."""
    device_map: str | None = None
    """``auto``: the model spread over devices (runtime, :mod:`spatialprobe.sharding`)."""
    max_memory: Mapping[str, str] | None = None
    """With ``device_map``: at most this much per device (runtime)."""


def scorer_choice(settings: ProbeSettings) -> tuple[str, str]:
    """(scorer name, why): ``auto`` reads the checkpoint's configuration (:mod:`.scorer_choice`)."""
    if settings.scorer != "auto":
        return settings.scorer, f"--scorer {settings.scorer}"
    from spatialprobe.models.choice import auto_scorer

    return auto_scorer(settings.model)


def scorer_name(settings: ProbeSettings) -> str:
    return scorer_choice(settings)[0]


ALIASES = (("image", None), ("normalize", None), ("format", "plain"))
"""The old per-scorer flags (setting, the value meaning "not given"): each is the option of that name."""


def scorer_spec(settings: ProbeSettings, name: str | None = None) -> registry.Spec:
    """The scorer as a spec: its declared options, given or default, are its identity's args; an
    option the chosen scorer does not declare is refused (:mod:`spatialprobe.models.options`)."""
    from spatialprobe.models import options

    name = name or scorer_name(settings)
    spread = options.sharding(name, settings.device, settings.device_map, settings.max_memory)
    given = dict(settings.scorer_args)
    for key, unset in ALIASES:
        value = getattr(settings, key)
        if value != unset:
            if key not in options.declared(name):
                flag = f"--{key}" if unset is None else f"--{key} {value}"  # --format chat, --image
                owners = options.owners(key)
                plural = "s" if len(owners) > 1 else ""
                raise UsageError(f"{flag} applies to the {' and '.join(owners)} scorer{plural} only; "
                                 f"the {name} scorer's options: {options.listing(name)}.")
            given.setdefault(key, value)
    if name == "dummy":
        if settings.device != "auto":
            raise UsageError(f"--device {settings.device} does not apply to the dummy scorer: it runs no model.")
        return registry.Spec("dummy", options.resolve(name, {"seed": settings.seed, **given}))
    args: dict[str, Any] = {"model": settings.model, "device": settings.device,
                            "batch_size": settings.batch_size}
    return registry.Spec(name, {**args, **spread, **options.resolve(name, given)})


def build_scorer(settings: ProbeSettings):
    return registry.build("model", scorer_spec(settings))


@dataclass(frozen=True)
class ScorerRecord:
    """The scorer a probe ran: registered name, arguments (runtime ones left out), weights."""

    name: str
    args: dict[str, Any] = field(metadata=models(model="the scorer's model"))
    weights_sha256: str | None = None


@dataclass(frozen=True)
class ProbeRunSettings:
    """What a probe run's ``config.json`` records (the probe's typed settings, see ``RunKind``)."""

    task: str
    model: str = field(metadata=NAMES_MODEL)
    dataset: dict[str, Any]
    """Where the instances come from (``datasets.sources``), their name, version and count."""
    candidates: Candidates
    scorer: ScorerRecord
    """The scorer (a command may give ``auto`` and the options as given; the run resolves them)."""
    folds: int
    seed: int
    device: str = "auto"
    batch_size: int = 64
    device_map: str | None = field(default=None, metadata=OPTIONAL)
    max_memory: dict[str, str] | None = field(default=None, metadata=OPTIONAL)


class ProbeRun(RunKind):
    """A probe as a run kind (see :class:`spatialprobe.runner.RunKind`)."""

    kind = "probe"
    Settings = ProbeRunSettings
    batch_size = CELLS_PER_COMMIT
    adapters: ClassVar[dict[str, str]] = {"model": "scorer"}
    """Its scorer's model input is what the scorer's own ``fingerprint()`` says."""

    def __init__(self, settings: ProbeRunSettings, dataset: Dataset | None = None, scorer: Any = None):
        """``dataset``: the instances themselves, where given in Python; else loaded from
        ``settings.dataset``. ``scorer``: a scorer object, where given in Python."""
        from spatialprobe.tasks.origin import load_source

        s, candidates = settings, settings.candidates
        dataset = dataset or load_source(s.dataset, s.task)
        args = {k: v for k, v in s.scorer.args.items() if k != "model"}
        probe = ProbeSettings(model=s.model, folds=s.folds, seed=s.seed, scorer=s.scorer.name,
                              format=args.pop("format", "plain"), scorer_args=args, device=s.device,
                              batch_size=s.batch_size, device_map=s.device_map, max_memory=s.max_memory)
        check_labels(candidates, dataset)
        if s.folds < 2:
            raise UsageError(f"--folds must be at least 2 (one fold chooses the prompt, the others "
                             f"test it); got {s.folds}.")
        self.dataset, self.candidates, self.probe = dataset, candidates, probe
        self.answer_sets = candidates.answer_sets(dataset.labels)
        self.words = tuple(dict.fromkeys(w for answers in self.answer_sets for w in answers))
        self.folds = make_folds(dataset, s.folds, s.seed)  # checked before any model loads
        empty = [f.index for f in self.folds if not f.dev or not f.test]
        if empty:
            raise UsageError(f"{dataset.name}: with --folds {s.folds}, fold(s) {empty} have no "
                             "dev or no test instances; use fewer folds.")
        self.chat = probe.format == "chat"
        if self.chat != (candidates.source == "chat"):
            raise UsageError("--format chat asks each task's own question (spatialprobe.models.chat); "
                             "its candidates come from there, and only there.")
        name, why = scorer_choice(probe)
        self.choice = {"scorer": name, "reason": why}
        self.spec_ = scorer_spec(probe, name)
        self.scorer = scorer or component("model", self.spec_)  # under --ray: loaded on the cluster only
        self.described = self.scorer.describe()
        spec_args = self.spec_.args
        self.settings = replace(
            s, task=dataset.task, dataset={**s.dataset, "name": dataset.name, "version": dataset.version,
                                           "instances": len(dataset)},
            scorer=ScorerRecord(self.spec_.name, {k: v for k, v in spec_args.items() if k not in RUNTIME_KEYS},
                                self.described.get("weights_sha256")),
            device_map=spec_args.get("device_map"), max_memory=spec_args.get("max_memory"))

    def items(self) -> list[Item]:
        return [Item(cell_key(t, inst.id), (t, inst))
                for t in self.candidates.templates for inst in self.dataset.instances]

    def compute(self, batch: Sequence[Item]) -> list[list[float]]:
        cells = [item.payload for item in batch]
        if self.chat:  # the options differ per instance; aligned with labels
            requests = chat.requests(cells, self.dataset.task, self.dataset.labels)
            return [[float(s) for s in scores] for scores in self.scorer.score(requests)]
        return score_cells(self.scorer, cells, self.words)

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        """Rows per fold and the whole set's rows; the metrics are those the Resamplings declare
        (accuracy and macro-F1 per fold, mean ± σ over folds; the whole set's), computed by the
        spine from the registered statistics (:mod:`spatialprobe.metrics.estimates`)."""
        dataset = self.dataset
        grid = grid_from(results, self.candidates.templates, dataset.instances, self.words)
        pred = predictions(grid, self.answer_sets)
        fold_rows, rows = self._folds(grid, pred)
        if self.chat:
            rows = self._chat_rows(rows)
        clusters = cluster_fields(dataset)
        whole_rows = [{"instance_id": inst.id, "obj_a": inst.obj_a, "obj_b": inst.obj_b, "gold": inst.label,
                       "pred": dataset.labels[p]} for inst, p in zip(dataset.instances, pred[0, 0], strict=True)]
        by_fold = Resampling(dataset.labels, clusters, group="fold", part="fold {}")
        whole_set = Resampling(dataset.labels, clusters, rows=whole_rows,
                               metrics={"whole_set_accuracy": "accuracy", "whole_set_macro_f1": "macro_f1"},
                               note="the whole set with the hand-written prompt, one row per instance")
        folds, whole = point_estimates(rows, by_fold), point_estimates(whole_rows, whole_set)
        for f in fold_rows:  # each fold's figures, as the metrics' breakdown holds them
            f.update({name: folds[name].breakdown[f"fold {f['fold']}"].mean for name in ("accuracy", "macro_f1")})
        details: dict[str, Any] = {
            "candidates": {"source": self.candidates.source, "templates": len(self.candidates.templates),
                           "answer_sets": len(self.answer_sets)},
            "folds": fold_rows,
            "whole_set": {"prompt": self.candidates.templates[0],
                          "answers": dict(zip(dataset.labels, self.answer_sets[0], strict=True)),
                          "accuracy": whole["whole_set_accuracy"].mean,
                          "macro_f1": whole["whole_set_macro_f1"].mean, "n": whole["whole_set_accuracy"].n},
            "confusion": confusion([r["gold"] for r in rows], [r["pred"] for r in rows], dataset.labels),
            "scorer": self.described,
            "scorer_choice": self.choice,
        }
        if not tasks.get(dataset.task).is_comparison:  # a position task: each object under two actions
            share = same_answer_share(rows, dataset)
            details["same_answer_both_actions"] = share
        return Evaluation(rows, {}, dataset.task, self.settings.model,
                          f"{dataset.name}@{dataset.version}", self.settings.seed,
                          bool(self.described.get("untrained", False)) or untrained(str(self.settings.model)),
                          details, (by_fold, whole_set))

    def _chat_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``--format chat`` rows say what was scored: the options (the objects, for a comparison),
        not the label words, the question and the prompt as the model saw it (its chat template)."""
        by_id = {inst.id: inst for inst in self.dataset.instances}
        wrap = getattr(self.scorer, "context_text", None)
        out = []
        for row in rows:
            request = chat.requests([(row["template"], by_id[row["instance_id"]])], self.dataset.task,
                                    self.dataset.labels)[0]
            out.append({**row, "answers": list(request.options), "question": request.prefix,
                        "prompt": wrap(request) if callable(wrap) else request.prefix})
        return out

    def _folds(self, grid, pred: np.ndarray) -> tuple[list[dict], list[dict]]:
        """Per fold: choose on dev, predict and measure on test. Returns (fold rows, prediction rows)."""
        dataset = self.dataset
        gold = np.array([dataset.labels.index(inst.label) for inst in dataset.instances])
        by_id = {inst.id: n for n, inst in enumerate(dataset.instances)}
        fold_rows, rows = [], []
        for fold in self.folds:
            choice = choose(grid, self.answer_sets, pred, gold, dataset.labels, fold)
            t, s = choice.template_index, choice.answer_set_index
            word_ids = [grid.word_index(w) for w in choice.config.answers]
            fold_preds = []
            for n in (by_id[i] for i in fold.test):
                inst = dataset.instances[n]
                fold_preds.append(Prediction(
                    inst.id, fold.index, inst.obj_a, inst.obj_b, inst.label, dataset.labels[pred[t, s, n]],
                    choice.config.template, choice.config.answers,
                    tuple(round(float(grid.values[t, n, w]), 6) for w in word_ids),
                ).to_dict())
            fold_rows.append({
                "fold": fold.index, "objects": list(fold.objects), "dev_size": len(fold.dev),
                "size": len(fold_preds), "prompt": choice.config.template,
                "answers": dict(zip(dataset.labels, choice.config.answers, strict=True)),
                "dev_accuracy": choice.dev_accuracy, "dev_macro_f1": choice.dev_macro_f1,
                "accuracy": None, "macro_f1": None,  # filled in by evaluate, from the registry
            })
            rows.extend(fold_preds)
        return fold_rows, rows

    def table(self, summary: Mapping[str, Any]) -> str:
        return probe_table(summary)


def run_probe(dataset: Dataset, candidates: Candidates, settings: ProbeSettings, out: RunOut,
              scorer=None, on_progress: Callable[[int, int], None] | None = None,
              source: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Probe ``dataset`` with every candidate; write the run at ``out`` and return its summary.
    ``settings`` (what a user asks: ``--image`` and the like as options of the scorer) become the
    run's settings here; the run resolves the scorer (``auto``) and its options."""
    given = {key: getattr(settings, key) for key, unset in ALIASES if getattr(settings, key) != unset}
    record = ScorerRecord(settings.scorer, {**settings.scorer_args, **given})
    if given:
        scorer_spec(settings)  # an alias the scorer does not declare: refused in its own sentence
    run = ProbeRunSettings(dataset.task, settings.model, dict(source or {"source": "given", "name": dataset.name}),
                           candidates, record, settings.folds, settings.seed, settings.device, settings.batch_size,
                           settings.device_map, None if settings.max_memory is None else dict(settings.max_memory))
    return execute(ProbeRun(run, dataset, scorer), out, on_progress)


def cluster_fields(dataset: Dataset) -> tuple[str, ...]:
    """The prediction fields naming the objects that decide independence: an instance's fold keys
    (both objects of a comparison; for posrel the object, not the person)."""
    fields = tuple(name for name in ("obj_a", "obj_b")
                   if all(getattr(inst, name) in inst.fold_keys for inst in dataset.instances))
    return fields or ("instance_id",)


def same_answer_share(rows: list[dict], dataset: Dataset) -> float | None:
    """posrel: share of (person, object, verb form) groups, within a fold, where the model gives the
    same answer for both of the object's actions, although their gold relations differ."""
    actions = {inst.id: inst.action for inst in dataset.instances}
    groups: dict[tuple, dict[str, str]] = defaultdict(dict)
    for r in rows:
        action = actions.get(r["instance_id"], "")
        form = "progressive" if action.startswith(("is ", "are ")) else "simple"
        groups[(r["fold"], r["obj_a"], r["obj_b"], form)][action] = r["pred"]
    pairs = [set(g.values()) for g in groups.values() if len(g) == 2]
    return 100.0 * sum(len(p) == 1 for p in pairs) / len(pairs) if pairs else None


