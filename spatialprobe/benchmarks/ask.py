"""Questions to a model that answers them (a multimodal LLM): any task, VSR or SpatialMQA, by
either protocol, under any image condition, with the blind baselines beside the score.

Every item is asked as a :class:`~spatialprobe.models.protocols.Question` worded by its source:

* a **task** (``size``, ``height``, ``posrel``, ``weight``, or a release-format file): the task
  file's multiple-choice question (``questions.choice``), with the image of the instance from a
  synthesis run, a blank image, or none - the seed paper's "does seeing help?" asked of today's
  models; tested on the same object-disjoint folds as the probe (mean ± σ over folds);
* **VSR**: whether the caption is true of the image, yes or no;
* **SpatialMQA**: the question with its lettered options; SpatialMQA's lenient rule parses replies.

Each item is asked under every condition of the run: ``real`` (its own image), and with
``--blind`` the three blind ones (``blank``, ``none``, ``shuffled``: another item's image that
shows none of its objects, :mod:`spatialprobe.image_conditions`), so the table reports the vision
gain of each with its paired interval, and the answer prior beside the accuracy
(:mod:`spatialprobe.benchmarks.asked`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spatialprobe.benchmarks.asked import asked_metrics, chosen
from spatialprobe.errors import UsageError
from spatialprobe.image_conditions import BLIND, check_condition, shuffled_partners
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.models.protocols import Question, ask, protocols_of
from spatialprobe.runner import Evaluation, Item, RunKind
from spatialprobe.runner.settings import OPTIONAL, Component

VSR_QUESTION = "Is this caption true of the image? Caption: {caption} Answer yes or no."
MQA_QUESTION = "{question}\nOptions:\n{options}\nAnswer with the option's letter."


@dataclass(frozen=True)
class AskItem:
    """One item as its source words it."""

    key: str
    question: str
    options: tuple[str, ...]
    labels: tuple[str, ...]
    """``labels[i]`` is the label ``options[i]`` means."""
    gold: str
    image: str | None
    """The item's own image (a path), or None where it has none."""
    objects: tuple[str, ...]
    """What its image shows (never shown to it under ``shuffled``)."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Row fields: the resampling clusters (``obj_a``/``obj_b``, ``image``) and groups."""


@dataclass(frozen=True)
class AskSource:
    """Where the items come from and how they are resampled; built by :mod:`.ask_sources`."""

    name: str
    """``task``, ``vsr`` or ``spatialmqa``."""
    task: str
    dataset: str
    """name@version of the items."""
    labels: tuple[str, ...]
    items: tuple[AskItem, ...]
    spec: Resampling
    folds: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    """Per fold (dev item keys, test item keys); empty: every item is tested once, pooled."""
    prior_labels: tuple[str, ...] | None = None
    """Gold labels of a training split (the answer prior) where the source has one."""
    lenient: Callable[[str, Sequence[str]], str | None] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AskRunSettings:
    """What an ask run's ``config.json`` records (its typed settings, see ``RunKind``)."""

    model: Component
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


class AskRun(RunKind):
    """A question-answering model on a source's items, under each image condition."""

    kind = "ask"
    Settings = AskRunSettings

    def __init__(self, source: AskSource, model: Any, model_spec: Component, source_settings: dict[str, Any],
                 *, protocol: str = "likelihood", condition: str = "real", blind: bool = False, seed: int = 0,
                 max_new_tokens: int = 16, device: str = "auto", batch_size: int = 8, device_map: str = "none",
                 max_memory: dict[str, str] | None = None):
        self.protocols = protocols_of(protocol)
        check_condition(condition)
        has_images = any(item.image is not None for item in source.items)
        if (condition == "real" or blind) and not has_images:
            raise UsageError(f"{source.dataset} has no images here, so there is no real image condition "
                             "to ask under (nor a blind one to compare it with): give the items' images, or "
                             "use --image-condition none or blank.")
        if blind and condition != "real":
            raise UsageError("--blind runs the real condition beside the blind ones; it does not apply "
                             f"with --image-condition {condition}.")
        self.conditions = ("real", *BLIND) if blind else (condition,)
        self.source, self.model, self.model_spec, self.source_settings = source, model, model_spec, source_settings
        self.protocol, self.seed, self.max_new_tokens = protocol, seed, max_new_tokens
        self.device, self.batch_size, self.device_map = device, batch_size, device_map
        self.max_memory = max_memory
        self.by_key = {item.key: item for item in source.items}
        self.partners = (shuffled_partners({i.key: i.objects for i in source.items}, seed)
                         if "shuffled" in self.conditions else {})

    def resolved(self) -> AskRunSettings:
        return AskRunSettings(model=self.model_spec, source=self.source_settings, protocol=self.protocol,
                              conditions=list(self.conditions), seed=self.seed,
                              max_new_tokens=self.max_new_tokens, device=self.device,
                              batch_size=self.batch_size, device_map=self.device_map,
                              max_memory=self.max_memory)

    def inputs(self) -> dict[str, Any]:
        from spatialprobe.fingerprints import file_input, model_input

        found = {"model": model_input("the multimodal LLM", str(self.model_spec.args.get("model")))}
        data = self.source_settings.get("data") or self.source_settings.get("dataset")
        if isinstance(data, dict) and data.get("file"):
            found["data"] = file_input(f"the {self.source.name} data file", data["file"])
        elif isinstance(data, dict) and data.get("path"):  # a task's release-format or pairs file
            found["data"] = file_input(f"the {self.source.task} data file", data["path"])
        elif isinstance(data, str):  # a QA or dataset file
            found["data"] = file_input(f"the {self.source.task} questions file", data)
        return found

    def items(self) -> list[Item]:
        return [Item(f"{condition}/{item.key}", (condition, item))
                for condition in self.conditions for item in self.source.items]

    def _image(self, condition: str, item: AskItem) -> Any:
        from spatialprobe.vision import blank_image, open_image

        if condition == "none":
            return None
        if condition == "shuffled":
            return open_image(self.by_key[self.partners[item.key]].image)
        if condition == "blank" or item.image is None:
            size = open_image(item.image).size if item.image is not None else (384, 384)
            return blank_image(size[0]).resize(size)
        return open_image(item.image)

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        questions = [Question(item.question, item.options, self._image(condition, item))
                     for condition, item in (i.payload for i in batch)]
        return ask(self.model, questions, self.protocol, self.max_new_tokens, self.source.lenient)

    def _row(self, condition: str, item: AskItem, answer: Mapping[str, Any]) -> dict[str, Any]:
        def label(option: str | None) -> str | None:
            return None if option is None else item.labels[item.options.index(option)]

        row: dict[str, Any] = {"instance_id": item.key, "condition": condition, "gold": item.gold,
                               "question": item.question, **item.fields}
        if "likelihood" in answer:
            row["pred_likelihood"] = label(answer["likelihood"]["option"])
            row["scores"] = answer["likelihood"]["scores"]
        if "generate" in answer:
            row["pred_generate"] = label(answer["generate"]["option"])
            row["reply"], row["parse_rule"] = answer["generate"]["reply"], answer["generate"]["rule"]
        row["pred"] = chosen(row, self.protocols[0])
        return row

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        rows = [self._row(item.payload[0], item.payload[1], results[item.key]) for item in self.items()]
        src, folds = self.source, bool(self.source.folds)
        if folds:
            rows = [{**row, "fold": k} for k, (_, test) in enumerate(src.folds)
                    for row in rows if row["instance_id"] in set(test)]
            prior: Any = {k: [self.by_key[key].gold for key in dev] for k, (dev, _) in enumerate(src.folds)}
        else:
            prior = src.prior_labels
        metrics, details = asked_metrics(rows, src.labels, self.protocols, self.conditions, src.spec, prior,
                                         folds=folds, seed=self.seed)
        main = [row for row in rows if row["condition"] == self.conditions[0]]
        describe = getattr(self.model, "describe", dict)
        details = {**details, **src.details, "model_info": describe(),
                   "coverage": {"used": len(src.items), "total": src.details.get("total", len(src.items))}}
        return Evaluation(rows, metrics, src.task, self.model_spec.args.get("model", self.model_spec.name),
                          src.dataset, self.seed, False, details, (_with_rows(src.spec, main),))

    def table(self, summary: Mapping[str, Any]) -> str:
        return ask_table(summary)

    @classmethod
    def from_settings(cls, settings: AskRunSettings) -> AskRun:
        from spatialprobe.benchmarks.ask_sources import load_model, source_from_settings

        s = settings
        model = load_model(s.model, s.device, s.batch_size, s.device_map, s.max_memory)
        return cls(source_from_settings(s.source, s.seed), model, s.model, s.source, protocol=s.protocol,
                   condition=s.conditions[0], blind=len(s.conditions) > 1, seed=s.seed,
                   max_new_tokens=s.max_new_tokens, device=s.device, batch_size=s.batch_size,
                   device_map=s.device_map, max_memory=s.max_memory)


def _with_rows(spec: Resampling, rows: Sequence[Mapping[str, Any]]) -> Resampling:
    from dataclasses import replace

    return replace(spec, rows=list(rows))


def ask_run(source: AskSource, model: Any, model_spec: Component, source_settings: dict[str, Any],
            out: Any, progress: Callable[[int, int], None] | None = None, **options: Any) -> dict[str, Any]:
    """Ask every item of ``source`` under each condition; write the run and return its summary."""
    from spatialprobe.runner import execute

    return execute(AskRun(source, model, model_spec, source_settings, **options), out, progress)



def ask_table(summary: Mapping[str, Any]) -> str:
    """table.md: coverage, each protocol's accuracy, the parse failures, the answer prior and the
    vision gain of each blind condition (paired 95 % interval and p-value)."""
    from spatialprobe.reports.tables import intervals_line, pm

    d, m = summary["details"], summary["metrics"]
    protocols, conditions = d["protocols"], d["conditions"]
    cover = d["coverage"]
    lines = [f"Coverage: {cover['used']:,} of {cover['total']:,} items. Protocol: {' and '.join(protocols)}; "
             f"conditions: {', '.join(conditions)}.", "",
             "| metric | value |", "|---|---|",
             f"| accuracy ({protocols[0]}, {conditions[0]}) | {pm(m['accuracy'])} |",
             f"| macro-F1 ({protocols[0]}, {conditions[0]}) | {pm(m['macro_f1'])} |"]
    if len(protocols) > 1:
        lines += [f"| accuracy ({p}, {conditions[0]}) | {pm(m[f'accuracy_{p}'])} |" for p in protocols[1:]]
        agree = d.get("protocol_comparison", {}).get("agreement")
        lines.append(f"| protocols agree | {'–' if agree is None else f'{agree:.1f} %'} |")
    if "parse_failure_rate" in m:
        lines.append(f"| parse failures (generate) | {pm(m['parse_failure_rate'])} % |")
    if "answer_prior" in m:
        lines.append(f"| answer prior (majority label) | {pm(m['answer_prior'])} |")
    for blind, gain in (d.get("vision_gain") or {}).items():
        ci = gain["ci"]
        interval = "[–]" if ci is None else f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"
        lines.append(f"| vision gain: real − {blind} | {gain['gain']:+.1f} {interval}, p = {gain['p']:.3g} |")
    text = "\n".join(lines) + "\n"
    return text + (f"\n{intervals_line(summary)}\n" if summary.get("intervals") else "")
