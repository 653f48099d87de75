"""ISM (Box) as a run kind: judge the images of an image store with a detector, depth and a rule.

:class:`JudgeRun` says only what judging is; the run spine (:mod:`spatialprobe.runner`) does the
run plumbing (config, cache, resume, summary, index). Items are the image run's finished images
of the task (key ``prompt_id#image_index``); a batch is detected (highest-confidence box of each
object), depth is read inside each box (size, height) and the rule answers; then unrecognized
images get a seeded random guess, and accuracy and macro-F1 are measured on the whole set and on
the recognized subset, with per-object figures in the summary's details. A rule is a record
(:mod:`spatialprobe.judging.rulebook`): its mode judges each image, and a rule that comes with its
benchmark's own score (GenEval, T2I-CompBench, HEIM) also gives that score
(:func:`box_scores.benchmark_metrics`). Which images of the run it reads, and the source it
records, are :mod:`spatialprobe.judging.judged_images`'.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spatialprobe import tasks
from spatialprobe.detectors import rules
from spatialprobe.errors import UsageError
from spatialprobe.extras import require
from spatialprobe.imagestore import Completeness, ImageRecord, ImageStore, missing_record
from spatialprobe.judging.box_scores import (
    benchmark_metrics,
    per_object,
    prompt_protocol,
    prompt_resampling,
    protocol_record,
    table_markdown,
)
from spatialprobe.judging.judged_images import image_key, image_run, image_run_source, judged_task_images, source_info
from spatialprobe.judging.rulebook.lookup import check, rule_of
from spatialprobe.judging.rulebook.record import Image, JudgeRule
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import Spec
from spatialprobe.runner import Evaluation, Item, RunKind, execute
from spatialprobe.runner.components import component
from spatialprobe.runner.settings import Component, model
from spatialprobe.store import RunDir
from spatialprobe.vision import open_image

TASK_LABELS = {name: tasks.labels_of(name) for name in tasks.names() if tasks.get(name).judge_rule}
"""The tasks whose images can be judged (a ``judge_rule`` in their task file), and their labels."""


@dataclass(frozen=True)
class JudgeConfig:
    """What judges a run: the components as specs, so the config dumps to JSON as it is."""

    task: str
    """``size``, ``height`` or ``posrel``."""
    detector: Spec
    """Registered detector and its arguments."""
    depth: Spec | None = None
    """Registered depth estimator (size and height only)."""
    rule: str = "vdg"
    """A registered judge rule of the task (``rulebook.lookup``); size/height have one each."""
    rule_args: dict[str, Any] = field(default_factory=dict)
    """The rule's thresholds (``--rule-arg``) and the cuts of its benchmark score (``Score.cuts``)."""
    depth_region: str = "release"
    """size/height: the pixels a box's mean depth averages (``rules.depth_region``)."""
    mode: str = "corrected"
    """``reference`` (the peer's code, quirks included) or ``corrected`` (``JudgeRule.mode``)."""
    seed: int = 0
    """Seed of the random guesses given to unrecognized images."""
    batch_size: int = 8
    """Images per detector / depth batch (runtime)."""
    device: str = "auto"
    """auto, cpu or cuda (runtime: not part of a run's identity)."""
    skip_missing: bool = False
    """Judge the images that remain when some files of the run are gone (else refuse)."""
    partial: bool = False
    """Judge an unfinished image run, or one still being written (else refuse)."""


def judge_image(cfg: JudgeConfig, detections, depth_map, meta: dict[str, Any]) -> dict[str, Any]:
    """One judgement: boxes, depths, the rule's answer and explanation (pred None if unrecognized)."""
    rule = rule_of(cfg.task, cfg.rule)
    image = Image(detections, depth_map, meta["obj_a"], meta["obj_b"], meta.get("label"), TASK_LABELS[cfg.task],
                  rule.geometry_args(cfg.rule_args), cfg.depth_region)
    return rule.mode(cfg.mode).judge(image)


def _on_device(spec: Spec, device: str) -> Spec:
    return Spec(spec.name, {**spec.args, "device": device})


def _without_device(spec: Spec | None) -> dict[str, Any] | None:
    return None if spec is None else {"name": spec.name,
                                      "args": {k: v for k, v in spec.args.items() if k != "device"}}


@dataclass(frozen=True)
class JudgeRunSettings:
    """What a judge run's ``config.json`` records (the judge's typed settings, see ``RunKind``)."""

    task: str
    source: dict[str, Any]
    """The image run judged (:func:`image_run_source`; a command gives :func:`image_run`)."""
    detector: Component = field(metadata=model("the detector", "detector"))
    depth: Component | None = field(default=None, metadata=model("the depth model", "depth_model"))
    """The depth estimator, where the task's rule reads depth (else None)."""
    depth_region: str | None = "release"
    """size/height: the pixels a box's mean depth averages (None where the rule has no depth region)."""
    rule: str = "vdg"
    rule_args: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    skip_missing: bool = False
    device: str = "auto"
    batch_size: int = 8
    mode: str = "corrected"

    @classmethod
    def of(cls, source: str | Path, cfg: JudgeConfig) -> JudgeRunSettings:
        """The settings of judging the image run at ``source`` as ``cfg`` says."""
        return cls(cfg.task, image_run(source, cfg.partial), Component.of(cfg.detector),
                   Component.of(cfg.depth) if cfg.depth is not None else None, cfg.depth_region, cfg.rule,
                   dict(cfg.rule_args), cfg.seed, cfg.skip_missing, cfg.device, cfg.batch_size, cfg.mode)


class JudgeRun(RunKind):
    """ISM (Box) as a run kind (see :class:`spatialprobe.runner.RunKind`)."""

    kind = "judge"
    Settings = JudgeRunSettings

    def __init__(self, settings: JudgeRunSettings, detector: Any = None, depth: Any = None, gallery: bool = True):
        require("PIL.Image", "judge")  # before any work: a missing extra is named, not a traceback later
        s = settings
        if s.task not in TASK_LABELS:
            raise UsageError(f"Unknown task {s.task!r}; choose from {sorted(TASK_LABELS)}.")
        self.cfg = cfg = JudgeConfig(  # the rules' view of the settings
            s.task, Spec(s.detector.name, s.detector.args), Spec(s.depth.name, s.depth.args) if s.depth else None,
            s.rule, dict(s.rule_args), s.depth_region or "release", s.mode, s.seed, s.batch_size, s.device,
            s.skip_missing)
        if cfg.depth_region not in rules.DEPTH_REGIONS:
            raise UsageError(f"depth region must be one of {rules.DEPTH_REGIONS}, not {cfg.depth_region!r}.")
        check(cfg.task, cfg.rule, cfg.mode, cfg.rule_args, cfg.depth_region)
        self.rule: JudgeRule = rule_of(cfg.task, cfg.rule)
        self.batch_size, self.gallery = cfg.batch_size, gallery
        self.store, self.completeness, self.images, self.missing, self.unscorable = judged_task_images(
            s.source, cfg.task, cfg.skip_missing)
        self.detector = detector or component("detector", _on_device(cfg.detector, cfg.device))
        reads_depth = self.rule.reads_depth and cfg.depth is not None
        self.depth = depth
        if depth is None and reads_depth and cfg.depth is not None:
            self.depth = component("depth", _on_device(cfg.depth, cfg.device))  # --ray: on the cluster
        self.settings = replace(s, source=image_run_source(self.store, self.images, self.completeness),
                                depth=s.depth if reads_depth else None,
                                depth_region=cfg.depth_region if self.rule.depth_region else None)

    def items(self) -> list[Item]:
        return [Item(image_key(rec), rec) for rec in self.images]

    def compute(self, batch: Sequence[Item], pil: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        records = [item.payload for item in batch]
        pil = [open_image(r.path) for r in records] if pil is None else pil
        found = self.detector.detect(pil, [[r.meta["obj_a"], r.meta["obj_b"]] for r in records])
        depths = self.depth.estimate(pil) if self.depth else [None] * len(records)
        return [judge_image(self.cfg, f, d, r.meta) for r, f, d in zip(records, found, depths, strict=True)]

    def compute_stream(self, work: Sequence[Sequence[Item]]):
        """(batch, results) in order; the next batch's images are decoded in background threads
        while the models judge this one."""
        from spatialprobe.detectors.preprocess import prefetch

        for batch, pil in prefetch(work, lambda item: open_image(item.payload.path)):
            yield batch, self.compute(batch, pil)

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        cfg, store, rule = self.cfg, self.store, self.rule
        rows = finish_predictions(self.images, results, store, TASK_LABELS[cfg.task], cfg.seed)
        protocol = prompt_protocol(rec.meta for rec in self.images)  # a benchmark's prompt file
        benchmark_args = rule.benchmark_args(cfg.rule_args)
        benchmark = benchmark_metrics(rule.name, rows, benchmark_args, protocol)  # {}: a rule without a score
        described = {"detector": self.detector.describe(),
                     "depth": self.depth.describe() if self.depth else None}
        details: dict[str, Any] = {"method": "ISM (Box)", "source": str(store.path.resolve()),
                                   **described, "rule": cfg.rule, "mode": cfg.mode,
                                   "rule_args": dict(cfg.rule_args),
                                   "per_object": per_object(rows)}
        if rule.depth_region:
            details["depth_region"] = cfg.depth_region
        if benchmark:
            details["benchmark_args"] = benchmark_args
        if protocol is not None:
            details["prompt_set"] = protocol_record(protocol, rows, cfg.rule)
        details["image_run"] = self.completeness.to_dict()
        if self.missing:  # only with skip_missing: the numbers cover fewer images than the run made
            details["missing_images"] = missing_record(store, self.missing, len(self.images))
        info = source_info(store, self.images)
        untrained = any("untrained" in str((d or {}).get("model", "")) for d in described.values())
        # every metric is declared in judge_resampling: the spine computes it from the registry
        return Evaluation(rows, {}, cfg.task, info["model"],
                          info["dataset"], cfg.seed, untrained, details,
                          judge_resampling(cfg.task, TASK_LABELS[cfg.task], benchmark, rows, protocol, rule))

    def table(self, summary: Mapping[str, Any]) -> str:
        return Completeness.line(summary["details"].get("image_run")) + table_markdown(summary)

    def write_extras(self, run: RunDir, summary: Mapping[str, Any], evaluation: Evaluation) -> None:
        """The gallery (``gallery.html``): each image with its boxes, depths and explanation;
        nothing with ``gallery=False`` (``judge --no-gallery``)."""
        from spatialprobe.reports.gallery import write_gallery

        if self.gallery:
            write_gallery(run.path)


def judge_resampling(task: str, labels: Sequence[str], benchmark: Mapping[str, Any] | None = None,
                     rows: Sequence[Mapping[str, Any]] = (), protocol: Mapping[str, Any] | None = None,
                     rule: JudgeRule | None = None) -> tuple[Resampling, ...]:
    """How a judge run's rows (one per image) are resampled for its intervals: by the objects its
    prompts were made of (both objects of a size/height pair; the object, not the person, of a
    posrel scenario), since every image of a pair, and every pair of an object, shares them.

    Macro-F1 averages over the labels that occur (:func:`judge_scores.scores`); the recognized
    subset is the rows with ``recognized`` among every object's rows, so its size varies over
    resamples; the recognized ratio is a share of images, the rule's own score (``rule.score``)
    combines its images as its benchmark does (GenEval's accuracy a share, T2I-CompBench's score
    a mean).
    """
    clusters, key, benchmark = tasks.get(task).object_fields, ("instance_id", "image_index"), benchmark or {}
    specs = [Resampling(tuple(labels), clusters, key=key,
                        metrics={"accuracy": "accuracy", "macro_f1": "macro_f1_seen"}),
             Resampling(tuple(labels), clusters, key=key, only="recognized",
                        metrics={"recognized_accuracy": "accuracy", "recognized_macro_f1": "macro_f1_seen"}),
             Resampling((), clusters, key=key, pred="recognized", metrics={"recognized_ratio": "share"})]
    score = rule.score if rule is not None else None
    if score is not None and score.metric in benchmark:
        specs.append(Resampling((), clusters, key=key, pred=score.field, metrics={score.metric: score.how}))
        specs.extend(prompt_resampling(score, benchmark, rows, protocol, clusters))  # its prompt-level score
    return tuple(specs)


def judge_run(source: str, out: str, cfg: JudgeConfig, progress: Callable[[int, int], None] | None = None,
              gallery: bool = False) -> dict[str, Any]:
    """Judge every image of ``cfg.task`` in the image store ``source``; write the run at ``out``."""
    return execute(JudgeRun(JudgeRunSettings.of(source, cfg), gallery=gallery), out, progress)


def finish_predictions(images: Sequence[ImageRecord], stored: Mapping[str, Any], store: ImageStore,
                       labels: Sequence[str], seed: int) -> list[dict[str, Any]]:
    """Rows in image order; unrecognized images get a random label from ``random.Random(seed)``."""
    rng = random.Random(seed)
    rows = []
    for rec in images:
        row = dict(stored[image_key(rec)])
        recognized = row["pred"] is not None
        row.update({"instance_id": rec.prompt_id, "image_index": rec.image_index,
                    "image": str(rec.path.relative_to(store.path)), "obj_a": rec.meta["obj_a"],
                    "obj_b": rec.meta["obj_b"], "gold": rec.meta["label"], "recognized": recognized,
                    "pred": row["pred"] if recognized else rng.choice(list(labels))})
        rows.append(row)
    return rows
