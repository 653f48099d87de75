"""The ``imported`` run kind: one model's items on one benchmark, read from another harness's
per-item log, written as an ordinary run folder (``config.json``, ``predictions.jsonl``,
``summary.json``, ``table.md``) so that ``report A B``, ``runs`` and ``export`` read it like a
native run.

Each row has ``instance_id``, ``gold``, ``pred``, ``correct`` (the harness's own verdict),
``score``, ``cluster`` and ``protocol``, and where the log keeps them ``question``, ``reply`` (the
generated text, before the harness's extraction) and ``options`` (the option texts as asked).
Accuracy is the share of correct rows, with its cluster-robust interval over the clusters the log
declares (``--cluster FIELD``, VLMEvalKit's circular ``g_index``), over the joined source's unit
(``--source vsr --data FILE``: its images, its official breakdown), or over instances, and
``table.md`` says which. The source files are inputs of the run, fingerprinted by content:
``spatialprobe run config.json`` re-imports them, and refuses when one has changed since.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.interop.base import Log
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.runner import Evaluation, Item, RunKind
from spatialprobe.runner.settings import OPTIONAL


@dataclass(frozen=True)
class SourceFile:
    """A log file as a run records it: its absolute path and the sha256 of its content."""

    file: str
    sha256: str


@dataclass(frozen=True)
class ImportedSettings:
    """What an imported run's ``config.json`` records."""

    format: str
    """The registered import format (``spatialprobe ls``: import-format)."""
    files: list[SourceFile] = field(metadata={"nonempty": True})
    model: str = ""
    benchmark: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    """The reader's options (the field map of ``plain``, ``--cluster``)."""
    source: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)
    """The engine source the items are joined to: ``{"name", "data"}``; None: none."""


def read_logs(fmt: str, paths: Sequence[Path], options: Mapping[str, Any]) -> list[Log]:
    """Every (model, benchmark) log the registered reader ``fmt`` finds in ``paths``."""
    from spatialprobe import registry

    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        raise UsageError(f"{missing[0]} is not a file.")
    logs = registry.lookup("import-format", fmt)([Path(p) for p in paths], dict(options))
    for log in logs:  # an empty file (lmms-eval's, a paper's) is no run
        if not log.instances:
            raise DataError(log.files[0] if log.files else paths[0], None, None, "holds no items")
    return logs


def source_of(settings: Mapping[str, Any]) -> Any:
    """The engine source to join items to (``vsr``, ``spatialmqa``; others by their replay)."""
    name, data = str(settings["name"]), Path(str(settings["data"]))
    if name == "vsr":
        from spatialprobe.benchmarks.vsr import vsr_source

        return vsr_source(data, None, str(settings.get("split") or "random"), str(settings.get("part") or "test"))[0]
    if name == "spatialmqa":
        from spatialprobe.benchmarks.spatialmqa import spatialmqa_source

        return spatialmqa_source(data, None, str(settings.get("part") or "test"))[0]
    raise UsageError(f"--source {name} cannot be joined here: vsr and spatialmqa can (or give --cluster FIELD).")


def joiner(source: Any, file: str | Path) -> Callable[[Any], Any]:
    """The source's item an imported row's id names: the item's key, or (lm-eval's and lmms-eval's
    ``doc_id``) its position in the source's file; a DataError naming ``file`` otherwise."""
    items = source.items
    by_key = {item.key: item for item in items}

    def item_of(ident: Any) -> Any:
        key = str(ident)
        item = by_key.get(key) or (items[int(key)] if key.isdigit() and int(key) < len(items) else None)
        if item is None:
            raise DataError(file, None, "id", f"item {ident!r} is not among the {len(by_key)} items of "
                            f"{source.dataset}")
        return item
    return item_of


class ImportedRun(RunKind):
    """A harness's log of one model on one benchmark, as a run."""

    kind = "imported"
    Settings = ImportedSettings
    batch_size = 1_000_000  # nothing is computed: one batch

    def __init__(self, settings: ImportedSettings, log: Log | None = None):
        from spatialprobe.fingerprints import sha256_file

        self.settings = settings
        for recorded in settings.files:
            path = Path(recorded.file)
            if not path.is_file():
                raise UsageError(f"{path}, a log this run was imported from, is missing.")
            if sha256_file(path) != recorded.sha256:
                raise DataError(path, None, None, "has changed since it was imported (its sha256 differs from "
                                "the one config.json records); import it again into a new folder.")
        if log is None:
            logs = read_logs(settings.format, [Path(f.file) for f in settings.files], settings.options)
            found = [g for g in logs if (g.model, g.benchmark) == (settings.model, settings.benchmark)]
            if not found:
                raise UsageError(f"the logs no longer hold model {settings.model!r} on {settings.benchmark!r}.")
            log = found[0]
        self.log = log
        self.source = source_of(settings.source) if settings.source else None

    def inputs(self) -> dict[str, Any]:
        from spatialprobe.fingerprints import file_input

        return {f"log {n}": file_input(f"the {self.settings.format} log", f.file)
                for n, f in enumerate(self.settings.files)}

    def items(self) -> list[Item]:
        group = self.log.group
        return [Item(inst.instance_id if group is None else f"{inst.instance_id}#{inst.fields.get(group)}", inst)
                for inst in self.log.instances]

    def compute(self, batch: Sequence[Item]) -> list[dict[str, Any]]:
        return [self._row(item.payload) for item in batch]

    def _row(self, inst: Any) -> dict[str, Any]:
        row = {"instance_id": inst.instance_id, "gold": inst.gold, "pred": inst.pred, "correct": bool(inst.correct),
               "score": inst.score, "cluster": inst.cluster if inst.cluster is not None else inst.instance_id,
               "protocol": inst.protocol, "condition": None}
        for name in ("question", "reply", "options"):  # where the log keeps them: the audits read them
            if getattr(inst, name) is not None:
                row[name] = list(inst.options) if name == "options" else getattr(inst, name)
        return {**row, **inst.fields}

    def _joined(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows with their source item's fields (clusters, groups) (:func:`joiner`)."""
        assert self.source is not None
        item_of = joiner(self.source, self.settings.files[0].file)
        return [{**row, **(item := item_of(row["instance_id"])).fields, "source_gold": item.gold} for row in rows]

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        from spatialprobe.metrics.metric import Metric

        rows = [results[item.key] for item in self.items()]
        log, unit = self.log, "instances"
        spec = Resampling((), ("instance_id",), pred="correct", metrics={"accuracy": "share"}, key=("instance_id",),
                          pooled=True)
        dataset = f"{log.benchmark}@{log.provenance.get('dataset_revision') or 'unversioned'}"
        metrics: dict[str, Metric] = {}
        specs: tuple[Resampling, ...] = ()
        if self.source is not None:
            rows = self._joined(rows)
            src_spec = self.source.spec
            unit = src_spec.unit or ", ".join(src_spec.clusters)
            spec = replace(spec, clusters=src_spec.clusters, unit=src_spec.unit)
            dataset = self.source.dataset
            groups = tuple(g for o in self.source.official for g in o.groups)
            specs = tuple(replace(spec, group=g, part=f"{g} {{}}", metrics={f"accuracy_by_{g}": "share"})
                          for g in groups)
        elif log.clusters or log.group:
            spec = replace(spec, clusters=log.clusters or ("cluster",), group=log.group, pooled=log.group is None,
                           key=("instance_id", log.group) if log.group else ("instance_id",),
                           part=f"{log.group} {{}}" if log.group else "{}")
            unit = ", ".join(log.clusters or ("cluster",))
            spec = replace(spec, unit=None if unit in ("obj_a, obj_b", "instance_id") else unit)
        elif log.cluster_field:
            unit = f"clusters ({log.cluster_field})"
            spec = replace(spec, clusters=("cluster",), unit=f"clusters ({log.cluster_field})")
        details = {"harness": log.harness, "metric": log.metric, "unit": unit, "reported": log.reported,
                   "imported_from": [f.file for f in self.settings.files], "log_provenance": log.provenance,
                   "source": self.settings.source, "n": len(rows)}
        return Evaluation(rows, metrics, log.benchmark, log.model, dataset, 0, False, details,
                          (replace(spec, rows=rows), *(replace(s, rows=rows) for s in specs)))

    def table(self, summary: Mapping[str, Any]) -> str:
        from spatialprobe.reports.tables import intervals_line, pm

        d, m = summary["details"], summary["metrics"]
        reported = "–" if d.get("reported") is None else f"{d['reported']:.2f}"
        lines = [f"Imported from {d['harness']} ({d['metric']} per item): {summary['model']} on {summary['task']}, "
                 f"{d['n']} items; the unit of the interval: {d['unit']}.", "",
                 "| metric | value |", "|---|---|", f"| accuracy | {pm(m['accuracy'])} |",
                 f"| the harness reported | {reported} |"]
        for name, metric in m.items():
            if name.startswith("accuracy_by_"):
                lines += ["", f"| {name.removeprefix('accuracy_by_')} | accuracy | n |", "|---|---|---|"]
                lines += [f"| {part} | {pm(v)} | {v['n']} |" for part, v in (metric.get("breakdown") or {}).items()]
        return "\n".join(lines) + f"\n\n{intervals_line(summary)}\n"


def import_logs(fmt: str, paths: Sequence[Path], out: Path, options: Mapping[str, Any],
                source: Mapping[str, Any] | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Every (model, benchmark) log in ``paths`` as a run folder under ``out``; (folder, summary) each."""
    from spatialprobe.fingerprints import sha256_file
    from spatialprobe.runner import execute

    logs = read_logs(fmt, paths, options)
    if not logs:
        raise UsageError(f"no items found in {', '.join(map(str, paths))}.")
    done = []
    for log in logs:
        files = [SourceFile(str(Path(p).resolve()), sha256_file(Path(p))) for p in log.files]
        settings = ImportedSettings(fmt, files, log.model, log.benchmark, dict(options),
                                    dict(source) if source else None)
        folder = out / f"{folder_name(log.model)}__{folder_name(log.benchmark)}"
        done.append((folder, execute(ImportedRun(settings, log), folder)))
    return done


def folder_name(name: str) -> str:
    """A model id or benchmark name as one folder-name part (``org/model`` -> ``org_model``)."""
    import hashlib
    import re

    part = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "run"
    return part if len(part) <= 100 else f"{part[:90]}-{hashlib.sha256(part.encode()).hexdigest()[:9]}"  # < NAME_MAX
