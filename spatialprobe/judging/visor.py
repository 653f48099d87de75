"""VISOR as a run kind: an SR2D image run (detected here) or a released detection file.

:class:`VisorRun` says only what VISOR is; the run spine does the plumbing. Items are images,
keyed as the released files key them (``<unique_id>_<k>``): an image run's SR2D images, whose
objects a registered detector looks for, or the entries of a detection file in the released
layout, already detected. Each item's result is :func:`~.visor.image_outcome`; the metrics are
OA, VISOR, VISOR_cond, VISOR_1..N and the object accuracies (percent, measured once: std null),
each broken down per relation, with the per-class numbers in the details.

The headline ``accuracy`` is **VISOR (unconditional)**: correct images / all images, an
accuracy over every image as ISM (Box)'s whole-set accuracy is (the VISOR paper reports
VISOR_uncond and VISOR_cond side by side; ``VISOR_cond`` is a metric of its own here). VISOR
has no macro-F1 (``macro_f1`` is null).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.files import write_json
from spatialprobe.imagestore import Completeness, ImageStore, missing_record, open_image_run, present_images
from spatialprobe.judging import visor_metrics as V
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import Spec
from spatialprobe.reports.tables import ci_suffix, intervals_line
from spatialprobe.runner import Evaluation, Item, RunKind
from spatialprobe.runner.components import component  # under --ray: loaded on the cluster only
from spatialprobe.runner.settings import OPTIONAL, Component, model, recorded
from spatialprobe.runner.summary import Metric, single
from spatialprobe.store import RunDir
from spatialprobe.tasks.sr2d import check_records, is_spatial, load_sr2d

HEADLINE = ("accuracy is VISOR (unconditional): correct images / all images; VISOR_cond = correct "
            "images / images with both objects")


def file_version(path: str | Path) -> dict[str, str]:
    """A file as a run records it: its absolute path and content digest (a missing or
    unreadable file is a DataError naming it)."""
    try:
        content = Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(path, None, None, "file not found") from None
    except OSError as err:
        raise DataError(path, None, None, f"cannot be read ({err.strerror or err})") from None
    return {"path": str(Path(path).resolve()), "sha256": hashlib.sha256(content).hexdigest()}


@dataclass(frozen=True)
class VisorRunSettings:
    """What a visor run's ``config.json`` records (its typed settings, see ``RunKind``)."""

    source: dict[str, Any]
    """``{"image_run": ...}`` or ``{"detections": file_version}``."""
    prompts: dict[str, str] | None = None
    """The SR2D prompt file (``file_version``; a command gives its ``path``), if one was given."""
    detector: Component | None = field(default=None, metadata=model("the detector", "detector"))
    device: str | None = field(default=None, metadata=OPTIONAL)  # a released file runs no detector
    batch_size: int | None = field(default=None, metadata=OPTIONAL)
    skip_missing: bool | None = field(default=None, metadata=OPTIONAL)
    """An image run: its deleted or damaged files skipped (True) or refused (False)."""


class VisorRun(RunKind):
    """VISOR as a run kind (see :class:`spatialprobe.runner.RunKind`)."""

    kind = "visor"
    Settings = VisorRunSettings

    def __init__(self, settings: VisorRunSettings):
        s = self.settings = settings
        if ("detections" in s.source) == ("image_run" in s.source):
            raise UsageError("give an image RUN, or --detections FILE --prompts FILE (not both).")
        prompts = recorded(s.prompts, "path", "prompts") if s.prompts is not None else None
        self.prompts_file = file_version(prompts) if prompts else None
        table = load_sr2d(prompts) if prompts else None
        self.store: ImageStore | None = None
        self.detector: Any = None
        self.records: list[tuple[str, dict[str, Any], Any]] = []
        self.completeness: Completeness | None = None
        self.missing: dict[str, Any] | None = None
        if "detections" in s.source:
            if prompts is None or table is None:
                raise UsageError("--detections needs --prompts (the SR2D JSON).")
            self._read_detections(Path(recorded(s.source["detections"], "path", "source.detections")),
                                  Path(prompts), table)
            self.settings = replace(s, source=self.source, prompts=self.prompts_file, detector=None, device=None,
                                    batch_size=None, skip_missing=None)
            return
        detector = self.reader_spec()
        if detector is None:
            raise UsageError("an image RUN needs a --detector.")
        self.batch_size = s.batch_size or 8
        image_run = recorded(s.source, "image_run", "source")
        self._read_image_run(str(recorded(image_run, "path", "source.image_run")), table, detector,
                             bool((image_run.get("completeness") or {}).get("partial")))
        self.settings = replace(s, source=self.source, prompts=self.prompts_file)

    def reader_spec(self) -> Spec | None:
        """The component that reads an image run's images, as its settings name it."""
        detector = self.settings.detector
        return None if detector is None else Spec(detector.name, detector.args)

    def _read_detections(self, detections: Path, prompts: Path, table: dict[int, dict]) -> None:
        """Entries of a released detection file: nothing to detect, so one batch computes all."""
        self.records, self.skipped = V.released_records(detections, table, prompts)
        self.source = {"detections": file_version(detections)}
        self.batch_size = 4096
        self.model = f"detections:{detections.stem}"
        self.dataset = f"{prompts.name}@{file_version(prompts)['sha256'][:8]}"

    def _read_image_run(self, run: str, table: dict[int, dict] | None, detector: Spec, partial: bool) -> None:
        """An image run's images of spatial SR2D prompts (their meta, or --prompts by unique_id);
        a deleted image file is refused, or skipped and counted with --skip-missing."""
        from spatialprobe.judging.judged_images import image_run_source, source_dataset

        store, self.completeness = open_image_run(run, partial=partial)
        self.store = store
        spatial, prompts = {}, {}
        for rec in store.records():
            p = V.prompt_of(rec.meta, rec.prompt_id, table, rec.prompt)
            if p is not None and is_spatial(p):
                spatial[(rec.prompt_id, rec.image_index)] = (rec, p)
                prompts[rec.prompt_id] = (rec.meta.get("line"), p)
        # the prompts' own file names the lines (a prompt file's meta carries its line number)
        check_records([(f"line {line}" if line else f"prompt {pid!r}", line, "", p)
                       for pid, (line, p) in prompts.items()], store.source() or run)
        present, missing = present_images(run, [rec for rec, _ in spatial.values()], self.skip_missing, "score")
        images = [spatial[(rec.prompt_id, rec.image_index)] for rec in present]
        if missing:
            self.missing = missing_record(store, missing, len(present))
        if not images:
            raise UsageError(f"{run} holds no images of spatial SR2D prompts (give --prompts FILE?).")
        self.records = [(f"{p['unique_id']}_{rec.image_index}", p, rec) for rec, p in images]
        self.skipped = sum(1 for _ in store.records()) - len(spatial)  # other prompts: counted
        self.source = {"image_run": image_run_source(store, [rec for rec, _ in images], self.completeness)}
        self.detector = self._reader(detector)
        self.model = " | ".join(sorted({f"{r.backend}:{r.model}" for r, _ in images}))
        self.dataset = source_dataset(store) or "sr2d"

    def _reader(self, detector: Spec) -> Any:
        """What reads an image run's images: the detector (the VQA judge's VISOR asks a
        multimodal LLM instead, :mod:`spatialprobe.judging.vqa_visor`)."""
        return component("detector", Spec(detector.name, {**detector.args, "device": self.device}))

    def items(self) -> list[Item]:
        return [Item(key, (prompt, payload)) for key, prompt, payload in self.records]

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        if self.detector is None:  # a released file: its records say what was detected
            return [V.released_outcome(*item.payload) for item in batch]
        from spatialprobe.detectors.rules import centre
        from spatialprobe.vision import open_image

        assert self.store is not None  # an image run's images (released files have no detector)
        prompts = [item.payload[0] for item in batch]
        records = [item.payload[1] for item in batch]
        found = self.detector.detect([open_image(r.path) for r in records],
                                     [[p["obj_1_attributes"][0], p["obj_2_attributes"][0]] for p in prompts])
        out = []
        for prompt, rec, dets in zip(prompts, records, found, strict=True):
            classes, centroids = [d.label for d in dets], [list(centre(d.box)) for d in dets]
            out.append({**V.image_outcome(prompt, classes, centroids),
                        "image": str(rec.path.relative_to(self.store.path)), "text": prompt["text"],
                        "classes": classes, "centroid": centroids,
                        "boxes": [list(d.box) for d in dets], "scores": [d.score for d in dets]})
        return out

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        rows = [{"key": key, **value} for key, value in results.items()]
        report = V.visor_report(rows)
        described = self.detector.describe() if self.detector else None
        details = {"method": "VISOR", "headline": HEADLINE, "per_class": report["per_class"],
                   "images": report["images"], "prompts": report["prompts"],
                   "non_spatial_skipped": self.skipped, "detector": described}
        if self.completeness is not None:
            details["image_run"] = self.completeness.to_dict()
        if self.missing:
            details["missing_images"] = self.missing
        untrained = "untrained" in str((described or {}).get("model", ""))
        unmeasured = unmeasured_visor_n(report)  # no interval, no value: the kind says so itself
        measured = [k for k in visor_n(report) if k not in unmeasured]
        return Evaluation(rows, unmeasured, "sr2d", self.model, self.dataset, None, untrained, details,
                          visor_resampling(rows, measured))

    def table(self, summary: Mapping[str, Any]) -> str:
        return Completeness.line(summary["details"].get("image_run")) + table_markdown(summary)

    def write_extras(self, run: RunDir, summary: Mapping[str, Any], evaluation: Evaluation) -> None:
        """An image run's detections as ``detections.json`` in the released layout."""
        if self.detector is not None:
            write_json(run.file("detections.json"),
                       {row["key"]: V.released_record(row) for row in evaluation.predictions})



def visor_n(report: Mapping[str, Any]) -> list[str]:
    """The ``VISOR_n`` numbers of a report (n = 1 to the most images of a prompt, at least 4)."""
    return [k for k in report if k.startswith("VISOR_") and k[6:].isdigit()]


def unmeasured_visor_n(report: Mapping[str, Any]) -> dict[str, Metric]:
    """The ``VISOR_n`` a report cannot measure (a prompt has fewer than n images), as None metrics
    broken down per relation. Every other VISOR number is declared in :func:`visor_resampling` and
    computed by the spine from the registered ``share`` (:mod:`spatialprobe.metrics.estimates`):
    ``accuracy`` = VISOR."""
    return {name: Metric(None, None, report["prompts"],
                         {rel: single(None, r["prompts"]) for rel, r in report["per_relation"].items()})
            for name in visor_n(report) if report[name] is None}


CLUSTERS = ("obj_a", "obj_b")
"""SR2D prompts are made from pairs of COCO classes: the classes are the sampled unit."""


def visor_resampling(rows: Sequence[Mapping[str, Any]], visor_n: Sequence[str]) -> tuple[Resampling, ...]:
    """How VISOR's numbers are resampled for their intervals: by the two object classes of each
    image's prompt (SR2D pairs the COCO classes; every image of a pair shares them), each number
    pooled over images as VISOR computes it, and per relation for the breakdown.

    * ``OA``, ``VISOR`` (= ``accuracy``), object accuracies: shares of images (``share``);
    * ``VISOR_cond``: the share of correct images among those with both objects, the subset taken
      in each resample (``only="both"``), so its size varies as it would over new prompts;
    * ``VISOR_n``: a share of prompts (rows: one per prompt, true where at least n of its
      images are correct); a prompt's images share its classes, so they stay together.
    """
    base = Resampling((), CLUSTERS, group="rel", pooled=True, key=("key",), pred="correct",
                      metrics={"accuracy": "share", "VISOR": "share"})
    specs = [base, replace(base, pred="both", metrics={"OA": "share"}),
             replace(base, only="both", metrics={"VISOR_cond": "share"}),
             replace(base, pred="det_a", metrics={"object_accuracy_A": "share"}),
             replace(base, pred="det_b", metrics={"object_accuracy_B": "share"})]
    prompts: dict[Any, dict[str, Any]] = {}
    for row in rows:
        prompt = prompts.setdefault(row["uid"], {"key": row["uid"], "obj_a": row["obj_a"], "obj_b": row["obj_b"],
                                                 "rel": row["rel"], "correct": 0})
        prompt["correct"] += int(row["correct"])
    for name in visor_n:
        n = int(name[6:])
        prompt_rows = [{**p, f"at least {n}": p["correct"] >= n} for p in prompts.values()]
        specs.append(replace(base, pred=f"at least {n}", rows=prompt_rows, metrics={name: "share"},
                             note="one row per prompt"))
    return tuple(specs)


def table_markdown(summary: Mapping[str, Any]) -> str:
    metrics = summary["metrics"]
    keys = ["OA", "VISOR", "VISOR_cond", *sorted((k for k in metrics if k.startswith("VISOR_")
                                                  and k[6:].isdigit()), key=lambda k: int(k[6:]))]
    cell = lambda m: "–" if m.get("mean") is None else f"{m['mean']:.2f}{ci_suffix(m)}"  # noqa: E731
    rows = [("all", {k: metrics[k] for k in keys})]
    rows += [(rel, {k: metrics[k]["breakdown"][rel] for k in keys})
             for rel in metrics["VISOR"].get("breakdown", {})]
    title = f"# VISOR: {summary['model']} ({summary['details']['images']} images)"
    if summary.get("untrained"):
        title += " (UNTRAINED test detector: numbers are meaningless)"
    head = "| relation | " + " | ".join(keys) + " |\n|---|" + "---:|" * len(keys) + "\n"
    return f"{title}\n\n" + head + "".join(
        f"| {name} | " + " | ".join(cell(r[k]) for k in keys) + " |\n" for name, r in rows) + (
        f"\n{intervals_line(summary)}" if summary.get("intervals") else "")
