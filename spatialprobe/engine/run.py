"""The one asked-items run kind: any source (:mod:`spatialprobe.benchmarks`) put to any model adapter
that can score or generate, by either protocol, under any image condition, with the blind
baselines and the source's official metrics beside the score.

The adapter declares the wordings it understands (``wordings``, next to ``protocols``); the run
takes the first of them that the source's items offer (:func:`choose_wording`) - a multimodal LLM
the ``question``, CLIP the ``contrastive`` captions, T5 and the VQA classifiers the ``short``
question - and refuses in one sentence where none fits. Whatever the wording, a row has one schema:
``instance_id``, ``condition``, ``gold`` and ``pred`` in the source's label vocabulary, its cluster
and group fields; so two runs of different families on the same items pair in ``spatialprobe
report A B``.

Each item is asked under every condition of the run: ``real`` (its own image; every image of an
item that has several, voted over by :func:`spatialprobe.benchmarks.base.vote`), and with ``--blind``
the three blind ones (``blank``, ``none``, ``shuffled``: another item's image that shows none of
its objects, :mod:`spatialprobe.image_conditions`), so the table reports the vision gain of each
with its paired interval, and the answer prior beside the accuracy
(:mod:`spatialprobe.engine.metrics`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Source, SourceItem
from spatialprobe.benchmarks.demo_copy import synthetic
from spatialprobe.benchmarks.spatialmqa import QUESTION as MQA_QUESTION
from spatialprobe.benchmarks.vsr import QUESTION as VSR_QUESTION
from spatialprobe.engine import question_free as free
from spatialprobe.engine.metrics import asked_metrics, official_metrics, position_prior, resamplings, twinned
from spatialprobe.engine.protocols import Question, ask, protocols_of
from spatialprobe.engine.reading import matched, read_answers, readers_details
from spatialprobe.engine.repeated_sampling import (
    check_sampling,
    sample_key,
    sample_seed,
    sampled_source,
    vote_rows,
    with_samples,
)
from spatialprobe.engine.robustness import variant_metrics
from spatialprobe.engine.table import ask_table
from spatialprobe.engine.variants import generated
from spatialprobe.engine.wording import can_sample, check_wording, choose_wording
from spatialprobe.errors import UsageError
from spatialprobe.image_conditions import BLIND, check_condition, shuffled_partners
from spatialprobe.readers import base as readers
from spatialprobe.runner import Evaluation, Item, RunKind
from spatialprobe.runner.settings import OPTIONAL, Component
from spatialprobe.runner.settings import model as model_field
from spatialprobe.tiny import untrained

__all__ = ["MQA_QUESTION", "VSR_QUESTION", "AskRun", "AskRunSettings", "ask_run",
           "ask_table"]


@dataclass(frozen=True)
class AskRunSettings:
    """What an ask run's ``config.json`` records (its typed settings, see ``RunKind``)."""

    model: Component = field(metadata=model_field("the model", "model"))
    source: dict[str, Any]
    """The items: source name, task, dataset version, files and images read."""
    protocol: str
    conditions: list[str]
    seed: int
    max_new_tokens: int
    device: str = "auto"
    batch_size: int = 8
    device_map: str = "none"
    """``auto``: accelerate spreads the model over every GPU (runtime: the same numbers)."""
    max_memory: dict[str, str] | None = field(default=None, metadata=OPTIONAL)
    """With ``device_map``: at most this much of the model per device (runtime)."""
    wording: str | None = field(default=None, metadata=OPTIONAL)
    """How the items were put to the model (:mod:`spatialprobe.benchmarks.base`); None: ``question``."""
    model_runtime: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)
    """The adapter's options that say how it runs, never what it answers (its ``runtime_options``:
    a server's concurrency, timeout, retries): runtime, so a resume may change them."""
    samples: int | None = field(default=None, metadata=OPTIONAL)
    """``--samples K``: each item asked K times (:mod:`.repeated_sampling`); None: once."""
    temperature: float | None = field(default=None, metadata=OPTIONAL)
    """``--temperature T``: the sampling temperature of the generate protocol; None: greedy."""


class AskRun(RunKind):
    """A model adapter on a source's items, under each image condition: the kind is its settings,
    plus the source and the model they name (built from them, or given)."""

    kind = "ask"
    Settings = AskRunSettings

    def __init__(self, settings: AskRunSettings, source: Source | None = None, model: Any = None):
        from spatialprobe.benchmarks.local_copy import text_only
        from spatialprobe.engine.rebuild import rebuild_source

        s = self.settings = settings
        self.protocols = protocols_of(s.protocol)
        for condition in s.conditions:
            check_condition(condition)
        alone = text_only() if tuple(s.conditions) == ("none",) else contextlib.nullcontext()  # no image needed
        with alone:
            self.source = source if source is not None else rebuild_source(s.source, s.seed)
        self.wording = s.wording or "question"
        has_images = any(item.image is not None for item in self.source.items)
        blind = len(s.conditions) > 1
        if (s.conditions[0] == "real" or blind) and not has_images:
            raise UsageError(f"{self.source.dataset} has no images here, so there is no real image condition "
                             "to ask under (nor a blind one to compare it with): give the items' images, or "
                             "use --image-condition none or blank.")
        if blind and s.conditions[0] != "real":
            raise UsageError("--blind runs the real condition beside the blind ones; it does not apply "
                             f"with --image-condition {s.conditions[0]}.")
        self.conditions, self.batch_size = tuple(s.conditions), s.batch_size
        self.reader, self.strict = readers.get(self.source.reader), readers.get("strict")
        self.by_key = {item.key: item for item in self.source.items}
        self.partners = (_partners(self.source.items, s.seed)
                         if "shuffled" in self.conditions else {})
        self.model = model if model is not None else _load(s)
        if any(item.views for item in self.source.items) and not getattr(self.model, "multi_image", False):
            raise UsageError(f"{self.source.dataset} asks several images at once (multi-view items), and the "
                             f"{s.model.name} model takes one image a question: use a model that takes several "
                             "(a multimodal LLM).")
        self.samples = s.samples or 1
        check_sampling(self.samples, s.temperature, s.protocol, s.model.name,
                       can_sample(self.model, s.model.name))
        if not all(item.options for item in self.source.items) and "likelihood" in self.protocols:
            raise UsageError(f"{self.source.name} has items without options (numeric answers): they are read from "
                             "a generated reply, by --protocol generate.")
        check_wording(self.model, s.model.name, self.wording, self.source)

    @classmethod
    def of(cls, source: Source, model: Any, model_spec: Component, source_settings: Mapping[str, Any] | None = None,
           *, protocol: str = "likelihood", condition: str = "real", blind: bool = False, seed: int = 0,
           max_new_tokens: int = 16, device: str = "auto", batch_size: int = 8, device_map: str = "none",
           max_memory: dict[str, str] | None = None, samples: int = 1, temperature: float | None = None) -> AskRun:
        """The run of ``source`` asked of a model built already (``model``; None: built from
        ``model_spec``), in the first wording both offer."""
        check_condition(condition)
        if blind and condition != "real":
            raise UsageError("--blind runs the real condition beside the blind ones; it does not apply "
                             f"with --image-condition {condition}.")
        settings = AskRunSettings(model_spec, dict(source_settings or source.settings), protocol,
                                  list(("real", *BLIND) if blind else (condition,)), seed, max_new_tokens,
                                  device, batch_size, device_map, max_memory,
                                  samples=samples if samples > 1 else None, temperature=temperature)
        if model is None:
            model = _load(settings)
        wording = choose_wording(model, source, model_spec.name)
        return cls(replace(settings, wording=None if wording == "question" else wording), source, model)

    def resolved(self) -> AskRunSettings:
        """The settings, with the source as it was built now (a changed data file or image run
        shows as a setting that differs, named, when a run resumes or replays)."""
        return replace(self.settings, source=dict(self.source.settings))

    @classmethod
    def from_settings(cls, settings: AskRunSettings) -> AskRun:
        return cls(settings)

    @property
    def model_spec(self) -> Component:
        return self.settings.model

    def inputs(self) -> dict[str, Any]:
        from spatialprobe.fingerprints import file_input, identity_of

        model = identity_of(self.model, "the model", str(self.model_spec.args.get("model")))
        found: dict[str, Any] = {"model": model} if model else {}
        recorded = self.settings.source
        data = recorded.get("data") or recorded.get("dataset")
        if isinstance(data, dict) and data.get("version") and not Path(str(data.get("file"))).is_file():
            found["data"] = {"what": f"the {self.source.name} data", "file": str(data.get("file")),  # a folder, hf:NAME
                             "fingerprint": f"sha256:{data['version']}"}
        elif isinstance(data, dict) and data.get("file"):
            found["data"] = file_input(f"the {self.source.name} data file", data["file"])
        elif isinstance(data, dict) and data.get("path"):  # a task's release-format or pairs file
            found["data"] = file_input(f"the {self.source.task} data file", data["path"])
        elif isinstance(data, str):  # a QA or dataset file
            found["data"] = file_input("the QA data file", data)
        return found

    def items(self) -> list[Item]:
        out = []
        for condition in self.conditions:
            for item in self.source.items:
                if condition != self.conditions[0] and generated(item):
                    continue  # an engine-generated variant is asked under the run's first condition only
                shown = [(f"{condition}/{item.key}", item.image)]
                if condition == "real":  # the further images of an item with several
                    shown += [(f"{condition}/{item.key}#{n}", image) for n, image in enumerate(item.images, 1)]
                out += [Item(sample_key(key, k, self.samples), (condition, item, image, k))
                        for k in range(self.samples) for key, image in shown]
        if self._question_free():
            out += [Item(f"{free.CONDITION}/{item.key}", (free.CONDITION, item, None, 0))
                    for item in self.source.items if not generated(item)]
        return out

    def _question_free(self) -> bool:
        """Whether each item's options are also scored without the question (:mod:`.question_free`)."""
        return self.source.question_free is not None and "likelihood" in self.protocols

    def _image(self, condition: str, item: SourceItem, image: str | None) -> Any:
        from spatialprobe.vision import blank_image, open_image

        if condition == "none":
            return None
        if item.views:  # images shown together: each one as the condition has it, in order
            shown = self.by_key[self.partners[item.key]] if condition == "shuffled" else item
            each = "real" if condition == "shuffled" else condition  # a partner's images are shown as they are
            return tuple(self._image(each, replace(shown, image=one, views=()), one)
                         for one in (shown.image, *shown.views))
        if condition == "shuffled":
            return open_image(self.by_key[self.partners[item.key]].image)
        if condition == "blank" or image is None:
            size = open_image(item.image).size if item.image is not None else (384, 384)
            return blank_image(size[0]).resize(size)
        return open_image(image)

    def _question(self, condition: str, item: SourceItem, image: str | None, sample: int = 0) -> Question:
        wording = item.wording(self.wording)
        assert wording is not None  # choose_wording: every item offers it
        if condition == free.CONDITION:
            return Question(free.PROMPT, wording.options, None, wording.suffix)
        seed = sample_seed(self.settings.seed, item.key, sample) if self.settings.temperature else None
        return Question(wording.prompt, wording.options, self._image(condition, item, image),
                        wording.suffix, wording.passage, wording.target,
                        wording.contexts, seed)

    def compute_stream(self, work: list[Sequence[Item]]) -> Iterator[tuple[Sequence[Item], Sequence[Any]]]:
        """An adapter that takes a stream (a server) is fed the whole remaining work
        (:mod:`spatialprobe.engine.stream`); any other, one batch at a time."""
        from spatialprobe.engine.stream import streamed, takes_stream

        if not takes_stream(self.model):
            return super().compute_stream(work)
        return streamed(self.model, work, lambda item: self.compute([item])[0])

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        asked = [item for item in batch if item.payload[0] != free.CONDITION]
        answers = dict(zip((item.key for item in asked), ask(
            self.model, [self._question(*item.payload) for item in asked], self.settings.protocol,
            self.settings.max_new_tokens, self.source.lenient, self.settings.temperature or 0.0),
            strict=True)) if asked else {}
        unasked = [item for item in batch if item.payload[0] == free.CONDITION]  # scored only
        if unasked:
            answers.update(zip((item.key for item in unasked), ask(
                self.model, [self._question(*item.payload) for item in unasked], "likelihood"), strict=True))
        return [answers[item.key] for item in batch]

    def _row(self, condition: str, item: SourceItem, answers: Sequence[Mapping[str, Any]], sample: int = 0
             ) -> dict[str, Any]:
        wording = item.wording(self.wording)
        assert wording is not None
        row: dict[str, Any] = {"instance_id": item.key, "condition": condition, "gold": item.gold,
                               "question": wording.prompt or " | ".join(wording.options), **item.fields}
        if item.fact is not None:  # the fact the item states, joined across run kinds by `report --by fact`
            row["fact"] = list(item.fact)
        row.update(read_answers(self.source, item, wording, answers, self.protocols[0], self.reader, self.strict))
        if len(answers) > 1:
            row["images"] = len(answers)
        if self.samples > 1 or self.settings.temperature:
            row["sample"], row["seed"] = sample, answers[0].get("generate", {}).get("seed")
        return row

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        answers: dict[tuple[str, str, int], list[Any]] = {}
        for item in self.items():
            condition, asked, _, k = item.payload
            answers.setdefault((condition, asked.key, k), []).append(results[item.key])
        unasked = {key: self._row(c, self.by_key[key], found)["pred_likelihood"]
                   for (c, key, _), found in answers.items() if c == free.CONDITION}
        every = [self._row(condition, self.by_key[key], found, k) for (condition, key, k), found in answers.items()
                 if condition != free.CONDITION]
        src = self._sampled_source()
        if src.sampling == "vote" and self.samples > 1:
            every = [{**row, **matched(src, self.by_key[row["instance_id"]], row, self.protocols[0])}
                     for row in vote_rows(every, src.labels)]
        rows = [row for row in every if not generated(row)]  # the headline metrics: the source's own items
        if unasked:
            rows = [{**row, free.PRED: unasked[row["instance_id"]]} for row in rows]
        folds = bool(src.folds)
        if folds:
            rows = [{**row, "fold": k} for k, (_, test) in enumerate(src.folds)
                    for row in rows if row["instance_id"] in set(test)]
        prior = self._prior_labels(src, rows)
        positional = src.prior_by == "position" and not folds
        metrics, details = asked_metrics(rows, src.labels, self.protocols, self.conditions, src.spec,
                                         None if positional else prior, folds=folds, seed=self.settings.seed)
        main = [row for row in rows if row["condition"] == self.conditions[0]]
        prior_rows = main
        if positional:  # which-one questions: the option at the gold's most frequent position
            prior_rows = [{**row, "gold": f"option {self.by_key[row['instance_id']].labels.index(row['gold']) + 1}"}
                          for row in main]
            metrics["answer_prior"], details["answer_prior"] = position_prior(prior_rows)
        official, specs = official_metrics(main, src.spec, src.official, strict=True)
        metrics.update(official)
        details["readers"] = readers_details(src, self.reader, main)
        if isinstance(details.get("answer_prior"), dict):
            details["answer_prior"]["from"] = ("the training split" if src.prior_labels is not None
                                               else "the test items (no training split)")
        if src.variants:  # the robustness protocols: vanilla, consistent and their gap, per declared group
            first = [row for row in every if row["condition"] == self.conditions[0]]
            found, details["variants"] = variant_metrics(first, src.variants, src.spec)
            metrics.update(found)
        if unasked:
            assert src.question_free is not None
            details = {**details, "question_free": free.details(main, src.question_free)}
            specs = (*specs, replace(src.spec, pred=free.PRED, metrics={"accuracy_question_free": "accuracy"},
                                     rows=main))
        details = self._run_details(src, details)
        asked = [*rows, *(row for row in every if generated(row))]  # the variants' rows written too
        return Evaluation(asked, metrics, src.task, self.model_spec.args.get("model", self.model_spec.name),
                          src.dataset, self.settings.seed, untrained(str(self.model_spec.args.get("model", ""))),
                          details,
                          resamplings(src.spec, main, rows, self.protocols, self.conditions, specs,
                                      details.get("answer_prior"), folds, prior_rows))

    def _prior_labels(self, src: Source, rows: Sequence[Mapping[str, Any]]) -> Any:
        """The labels the answer prior is learnt from: each fold's development items; else a training
        split's labels; else the test items' own (``details`` says which)."""
        if src.folds:
            return {k: [self.by_key[key].gold for key in dev] for k, (dev, _) in enumerate(src.folds)}
        if src.prior_labels is not None:
            return src.prior_labels
        return [row["gold"] for row in rows if row["condition"] == self.conditions[0]]

    def _run_details(self, src: Source, details: Mapping[str, Any]) -> dict[str, Any]:
        """``details`` with what describes the run: the source's own details, the wording, the model
        (and a server's traffic: requests, retries, failures, truncations, requests/s, tokens/s), the
        official statistics, the coverage, and whether the items are a synthetic demo copy."""
        describe = getattr(self.model, "describe", dict)
        if callable(getattr(type(self.model), "traffic", None)):
            details = {**details, "requests": self.model.traffic()}
        own = sum(not generated(item) for item in src.items)  # the source's items, its variants apart
        demo = synthetic(src.settings.get("data"))  # a demo copy's runs say so (table, summary)
        return {**details, **src.details, "wording": self.wording, "model_info": describe(),
                "official": [name for declared in twinned(src.official) for name in declared.metrics],
                "coverage": src.details.get("coverage_detail") or {"used": own, "total": src.details.get("total", own)},
                **({"synthetic": demo} if demo else {})}

    def _sampled_source(self) -> Source:
        return sampled_source(self.source, self.samples, self.settings.temperature)

    def measure(self, evaluation: Evaluation) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The spine's intervals, with repeated samples refined (:func:`.repeated_sampling.with_samples`)."""
        metrics, intervals = super().measure(evaluation)
        if self.samples > 1:
            main = [r for r in evaluation.predictions if r["condition"] == self.conditions[0] and not generated(r)]
            metrics = with_samples(metrics, main, evaluation.details, self._sampled_source(), self.samples,
                                   self.settings.temperature, self.settings.seed, getattr(self.model, "sampler", None))
        return metrics, intervals

    def table(self, summary: Mapping[str, Any]) -> str:
        return ask_table(summary)

    def write_extras(self, run: Any, summary: Mapping[str, Any], evaluation: Evaluation) -> None:
        if self.source.extras is not None:
            self.source.extras(run, summary)


def _partners(items: Sequence[SourceItem], seed: int) -> dict[str, str]:
    """The shuffled condition's partner of every item: drawn among the source's own items, an
    engine-generated variant shown its original's partner (the draw the same with or without variants)."""
    partners = shuffled_partners({i.key: i.objects for i in items if not generated(i)}, seed)
    return {**partners, **{i.key: partners[i.key.rsplit("~", 1)[0]] for i in items if generated(i)}}


def _load(settings: AskRunSettings) -> Any:
    from spatialprobe.engine.load import load_model

    s = settings
    return load_model(s.model, s.device, s.batch_size, s.device_map, s.max_memory, s.model_runtime)


def ask_run(source: Source, model: Any, model_spec: Component, source_settings: Mapping[str, Any] | None,
            out: Any, progress: Callable[[int, int], None] | None = None, **options: Any) -> dict[str, Any]:
    """Ask every item of ``source`` under each condition; write the run and return its summary."""
    from spatialprobe.runner import execute

    return execute(AskRun.of(source, model, model_spec, source_settings, **options), out, progress)
