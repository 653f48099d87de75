"""SpatialMQA evaluation: strict and the benchmark's lenient matching; P/R/F1 and accuracy.

Matching a model's output to the gold answer (output lower-cased, stripped, a trailing period
removed; an empty output becomes ``--``):

* **strict** - the output equals the gold option.
* **lenient** - the benchmark's own rule: correct if the output is a substring of the answer
  or the answer a substring of the output; for ``on/above`` also whenever the output contains
  ``on`` or ``above`` (as plain substrings, so ``in front of`` counts too - the benchmark's
  quirk, reproduced so numbers compare with published ones).

For precision/recall/F1 each output is mapped to a label: strict - the option it equals, else
``--``; lenient - the gold answer when leniently correct, else the first relation (in the
order on/above, below, left of, right of, in front of, behind) that contains the output as a
substring, else ``--`` (the benchmark's P/R/F1 script does the same). Precision and recall
are scikit-learn's macro averages over the relations present in the gold answers; ``f1`` is
the benchmark's F1, the harmonic mean of macro precision and macro recall
(``Code/eval/calculate_prf1.py``), which is what published tables report; ``macro_f1`` is
the mean of the per-relation F1 scores (scikit-learn's macro F1). The two differ in general.

The run goes through the run spine (:mod:`spatialprobe.runner`): its items are the questions
whose image is found, a batch is one call of the answerer. Its headline ``accuracy`` and
``macro_f1`` use **lenient** matching (the benchmark's rule, so they compare with published
numbers); ``f1``, ``precision`` and ``recall`` are the lenient benchmark figures, and every
metric has a ``strict_`` twin. Each has a breakdown per perspective (``perspective outside``,
``first``, ``third``) and per axis (``axis x``, ``y``, ``z``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.vsr import ImageBenchmarkSettings
from spatialprobe.datasets.vsr import file_version, usable_images
from spatialprobe.errors import UsageError
from spatialprobe.fingerprints import file_input, model_input
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.models.answer_parse import (  # noqa: F401 (the benchmark's rule lives there)
    lenient_correct,
    lenient_label,
    normalize,
    strict_label,
)
from spatialprobe.runner import Evaluation, Item, RunKind, execute
from spatialprobe.runner.settings import DataFile
from spatialprobe.runner.summary import Metric, single

RELATIONS = ("left of", "right of", "in front of", "behind", "on/above", "below")


def classification_metrics(gold: Sequence[str], pred: Sequence[str]) -> dict[str, Any]:
    """Accuracy, macro precision/recall, the benchmark's F1 and macro-F1 (percent)."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    if not gold:
        return {"accuracy": None, "precision": None, "recall": None, "f1": None, "macro_f1": None,
                "n": 0}
    labels = [r for r in RELATIONS if r in set(gold)] or sorted(set(gold))
    p, r, f, _ = precision_recall_fscore_support(gold, pred, labels=labels, average="macro",
                                                 zero_division=0)
    benchmark_f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"accuracy": round(100 * accuracy_score(gold, pred), 2), "precision": round(100 * p, 2),
            "recall": round(100 * r, 2), "f1": round(100 * benchmark_f1, 2),
            "macro_f1": round(100 * f, 2), "n": len(gold)}


def mqa_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Strict and lenient metrics overall, per perspective and per axis."""
    out: dict[str, Any] = {}
    for mode in ("strict", "lenient"):
        key = f"{mode}_label"
        result = {"overall": classification_metrics([r["answer"] for r in rows], [r[key] for r in rows])}
        for field in ("perspective", "axis"):
            groups = defaultdict(list)
            for row in rows:
                groups[row[field]].append(row)
            result[f"per_{field}"] = {
                g: classification_metrics([r["answer"] for r in members], [r[key] for r in members])
                for g, members in sorted(groups.items())}
        out[mode] = result
    return out


def result_row(example, answer: dict[str, Any]) -> dict[str, Any]:
    output = answer["output"]
    row = {"id": example.id, "content_hash": example.content_hash, "image": example.image,
           "question": example.question, "options": list(example.options), "answer": example.answer,
           "perspective": example.perspective, "axis": example.axis, "output": output,
           "strict_label": strict_label(output, example.options),
           "lenient_label": lenient_label(output, example.answer),
           "lenient_correct": lenient_correct(output, example.answer)}
    if "scores" in answer:
        row["scores"] = answer["scores"]
    return row


METRICS = ("accuracy", "macro_f1", "f1", "precision", "recall")
MATCHING = ("lenient matching (the benchmark's rule) for accuracy, macro_f1, f1, precision, "
            "recall; strict matching for their strict_ twins")


def run_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Metric]:
    """Lenient metrics (and their ``strict_`` twins), each broken down by perspective and axis."""
    figures = mqa_metrics(rows)
    out: dict[str, Metric] = {}
    for mode, prefix in (("lenient", ""), ("strict", "strict_")):
        block = figures[mode]
        for name in METRICS:
            parts = {f"{field} {group}": single(m[name], m["n"])
                     for field in ("perspective", "axis") for group, m in block[f"per_{field}"].items()}
            out[prefix + name] = Metric(block["overall"][name], None, block["overall"]["n"], parts)
    return out


STATISTICS = {"accuracy": "accuracy", "macro_f1": "macro_f1_gold", "f1": "pr_f1_gold",
              "precision": "precision_gold", "recall": "recall_gold"}
"""Each metric's bootstrap statistic (:data:`spatialprobe.metrics.weighted.STATISTICS`): macro
averages over the relations present in gold, as :func:`classification_metrics`."""


def mqa_resampling(rows: Sequence[Mapping[str, Any]]) -> tuple[Resampling, ...]:
    """How SpatialMQA rows (one per question) are resampled: by COCO image, since the benchmark
    asks several questions about one image. Lenient metrics read ``lenient_label``, their
    ``strict_`` twins ``strict_label``; each is pooled over questions, per perspective and per
    axis as the point estimate is (one resampling per grouping, on the same draws)."""
    gold = {str(r["answer"]) for r in rows}
    labels = RELATIONS if gold & set(RELATIONS) else tuple(sorted(gold))
    base = Resampling(labels, ("image",), gold="answer", key=("id",), pooled=True, unit="images")
    return tuple(replace(base, pred=f"{mode}_label", group=field, part=f"{field} {{}}",
                         metrics={prefix + name: stat for name, stat in STATISTICS.items()})
                 for mode, prefix in (("lenient", ""), ("strict", "strict_")) for field in ("perspective", "axis"))


def resolve_method(model: str, method: str) -> str:
    """``clip`` (option scoring) or ``generate`` (image-text-to-text); ``auto`` reads the config
    (:func:`spatialprobe.models.choice.auto_model`: the contrastive or the generate adapter)."""
    from spatialprobe.models.choice import auto_model

    if method not in ("auto", "clip", "generate"):
        raise UsageError(f"method must be auto, clip or generate; got {method!r}")
    clip_like = auto_model(model, ("contrastive", "generate"), "spatialmqa")[0] == "contrastive"
    if method != "auto" and (method == "clip") != clip_like:
        raise UsageError(f"--method {method} does not apply to {model}: it is "
                         f"{'' if clip_like else 'not '}a CLIP-style dual encoder "
                         f"(--method clip needs one, --method generate an image-text-to-text model).")
    return "clip" if clip_like else "generate"


def build_answerer(model: str, method: str = "auto", device: str = "auto",
                   recorded: Mapping[str, Any] | None = None, given: Mapping[str, Any] | None = None):
    """The answerer of ``method`` (resolved by :func:`resolve_method`) for ``model``; ``recorded``
    (a run's ``answerer`` settings) restores its template, prompt and decoding; ``given``: the
    model adapter's options (``--scorer-arg``), checked against what it declares."""
    from spatialprobe.models.mqa_models import ClipOptionScorer
    from spatialprobe.models.options import scaled_adapter as adapter  # on the cluster under --ray

    recorded, given = recorded or {}, dict(given or {})
    if resolve_method(model, method) == "clip":
        similarity = adapter("contrastive", model, given, device=device)
        return ClipOptionScorer(similarity, **{k: recorded[k] for k in ("template",) if k in recorded})
    args = {k: recorded[k] for k in ("prompt",) if k in recorded}
    if "decoding" in recorded:
        args["max_new_tokens"] = recorded["decoding"]["max_new_tokens"]
    return adapter("generate", model, {**args, **given}, device=device)


@dataclass(frozen=True)
class SpatialMQARunSettings(ImageBenchmarkSettings):
    """What a spatialmqa run's ``config.json`` records (its typed settings, see ``RunKind``)."""

    method: str | None
    answerer: dict[str, Any]
    """The answerer's own description (device left out)."""
    skip_missing: bool = False
    """Questions without an image were left out (--skip-missing), counted in details.coverage."""


class SpatialMQARun(RunKind):
    """One model on a SpatialMQA split as a run kind (see :class:`spatialprobe.runner.RunKind`)."""

    kind = "spatialmqa"
    Settings = SpatialMQARunSettings

    def __init__(self, model: str, path: str | Path, images_dir: str | Path, *, part: str = "test",
                 method: str = "auto", limit: int | None = None, device: str = "auto",
                 batch_size: int = 8, answerer=None, skip_missing: bool = False):
        from spatialprobe.datasets import spatialmqa

        self.model, self.path, self.part, self.limit = str(model), Path(path), part, limit
        self.images_dir, self.batch_size, self.skip_missing = Path(images_dir), batch_size, skip_missing
        every = spatialmqa.load_spatialmqa_file(self.path, part=part)
        self.examples = every[:limit]
        self.images, self.missing, self.coverage = usable_images(
            self.examples, images_dir, total=len(every), subdirs=("", "test2017", "images"),
            skip_missing=skip_missing, limit=limit, what="questions")
        self.answerer = answerer or build_answerer(self.model, method, device)
        self.described = self.answerer.describe()
        self.device = getattr(self.answerer, "device", device)
        self.dataset = f"spatialmqa-{part}@{file_version(self.path)}"

    def resolved(self) -> SpatialMQARunSettings:
        answerer = {k: v for k, v in self.described.items() if k != "device"}  # device is runtime
        return SpatialMQARunSettings(
            model=self.model, method=answerer.get("method"), answerer=answerer, dataset=self.dataset,
            data=DataFile(str(self.path.resolve()), file_version(self.path)), part=self.part,
            limit=self.limit, images=str(self.images_dir.resolve()), device=self.device,
            batch_size=self.batch_size, skip_missing=self.skip_missing)

    def inputs(self) -> dict[str, Any]:
        return {"model": model_input("the model", self.model),
                "data": file_input("the SpatialMQA data file", self.path)}

    def items(self) -> list[Item]:
        return [Item(e.id, e) for e in self.examples if e.id in self.images]

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        examples = [item.payload for item in batch]
        answers = self.answerer.answer_batch([(self.images[e.id], e.question, e.options) for e in examples])
        return [result_row(e, a) for e, a in zip(examples, answers, strict=True)]

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        from spatialprobe.benchmarks.vsr import missing_details
        from spatialprobe.datasets import spatialmqa

        rows = [results[item.key] for item in self.items()]
        details = {"matching": MATCHING, **missing_details(self.examples, self.missing, self.coverage),
                   "extra_keys": spatialmqa.extra_key_report(self.examples), "model_info": self.described}
        return Evaluation(rows, run_metrics(rows), "spatialmqa", self.model, self.dataset, None, False,
                          details, mqa_resampling(rows))

    def table(self, summary: Mapping[str, Any]) -> str:
        """Per group: strict n, accuracy and F1; lenient accuracy, P, R and the benchmark's F1."""
        from spatialprobe.reports.tables import ci_suffix, coverage_line, intervals_line

        metrics = summary["metrics"]
        names = ("strict_accuracy", "strict_f1", "accuracy", "precision", "recall", "f1")
        lines = [coverage_line(summary["details"].get("coverage"), "questions"), "",
                 "| group | n | strict acc | strict F1 | lenient acc | lenient P | lenient R | "
                 "lenient F1 (2PR/(P+R)) |", "|" + "---|" * 8]
        groups = [("overall: all", None)] + [
            (part.replace(" ", ": ", 1), part) for part in metrics["strict_accuracy"].get("breakdown", {})]
        for label, part in groups:
            cells = [metrics[n] if part is None else metrics[n]["breakdown"][part] for n in names]
            lines.append("| " + " | ".join([label, str(cells[0]["n"])]
                                            + [f"{c['mean']}{ci_suffix(c)}" for c in cells]) + " |")
        text = "\n".join(lines) + "\n"
        return text + (f"\n{intervals_line(summary)}" if summary.get("intervals") else "")

    @classmethod
    def from_settings(cls, settings: SpatialMQARunSettings) -> SpatialMQARun:
        s = settings
        return cls(s.model, s.data.file, s.images, part=s.part, limit=s.limit, device=s.device,
                   batch_size=s.batch_size,
                   answerer=build_answerer(s.model, s.method or "auto", s.device, s.answerer),
                   skip_missing=s.skip_missing)


def run_spatialmqa(model: str, data_dir, images_dir, out, *, part: str = "test",
                   method: str = "auto", device: str = "auto", batch_size: int = 8,
                   limit: int | None = None, answerer=None, progress=None,
                   skip_missing: bool = False) -> dict[str, Any]:
    """Evaluate one model on a SpatialMQA split; writes and returns the run's summary."""
    from spatialprobe.datasets.spatialmqa import PARTS

    if part not in PARTS:
        raise UsageError(f"part must be one of {PARTS}, got {part!r}")
    run = SpatialMQARun(model, Path(data_dir) / f"{part}.jsonl", images_dir, part=part, method=method,
                        limit=limit, device=device, batch_size=batch_size, answerer=answerer,
                        skip_missing=skip_missing)
    return execute(run, out, progress)
