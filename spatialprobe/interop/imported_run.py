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

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.interop.base import Log
from spatialprobe.interop.join import joiner, source_of
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
        outside = next((i for i in log.instances if not 0.0 <= i.score <= 1.0), None)
        if outside is not None:
            raise DataError(log.files[0], None, log.metric, f"scores item {outside.instance_id!r:.60} "
                            f"{outside.score:g}, outside [0, 1]: an import reads a verdict per item (right 1, "
                            "wrong 0, or a share of credit); name such a metric with --metric")
        repeats_of(log)
    return logs


REPEAT = re.compile(r"^(?P<item>.+)#(?P<k>\d+)$")


def repeats_of(log: Log) -> None:
    """Rows whose ids are ``ITEM#k`` (the k-th of several measurements of one item: epochs,
    samples, seeds) are one unit: where the log declares no cluster, each row's cluster is its
    item, so that repeats are not counted as independent items."""
    if log.clusters or log.cluster_field or log.group:
        return
    bases = [REPEAT.match(i.instance_id) for i in log.instances]
    if not all(bases) or len({m["item"] for m in bases if m}) == len(bases):
        return
    log.instances = [replace(i, cluster=m["item"]) for i, m in zip(log.instances, bases, strict=True) if m]
    log.cluster_field = "the item before #k"
    items = len({m["item"] for m in bases if m})
    log.note = (log.note + "; " if log.note else "") + (f"{len(bases)} rows are repeats (ID#k) of {items} items: "
                                                        "each item's repeats one cluster")


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
        self.scored_by = "score" if any(i.score not in (0.0, 1.0) for i in log.instances) else "correct"

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
        """Rows with their source item's fields (clusters, groups) and its key as their id, the
        log's own id kept as ``log_id`` (:func:`.join.joiner`): they pair with native runs."""
        assert self.source is not None
        item_of = joiner(self.source, self.settings.files[0].file)
        out = []
        for row in rows:
            item = item_of(row["instance_id"])
            out.append({**row, **item.fields, "instance_id": item.key, "log_id": row["instance_id"],
                        "source_gold": item.gold})
        keys = [r["instance_id"] for r in out]
        if len(set(keys)) != len(keys):
            twice = next(k for k in keys if keys.count(k) > 1)
            raise DataError(self.settings.files[0].file, None, "id", f"names the item {twice!r} of "
                            f"{self.source.dataset} twice (by its key and by its position?)")
        return out

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        from spatialprobe.metrics.metric import Metric

        rows = [results[item.key] for item in self.items()]
        log, unit = self.log, "instances"
        spec = Resampling((), ("instance_id",), pred=self.scored_by, metrics={"accuracy": "share"},
                          key=("instance_id",), pooled=True)
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
                   "source": self.settings.source, "n": len(rows), "verdict": "read" if log.reader else "harness",
                   "reader": log.reader, "unreadable": log.unreadable if log.reader else None, "note": log.note,
                   "averaged": self.scored_by}
        return Evaluation(rows, metrics, log.benchmark, log.model, dataset, 0, False, details,
                          (replace(spec, rows=rows), *(replace(s, rows=rows) for s in specs)))

    def table(self, summary: Mapping[str, Any]) -> str:
        from spatialprobe.reports.tables import intervals_line, pm

        d, m = summary["details"], summary["metrics"]
        reported = "–" if d.get("reported") is None else f"{d['reported']:.2f}"
        lines = [f"Imported from {d['harness']} ({d['metric']} per item): {summary['model']} on {summary['task']}, "
                 f"{d['n']} items; the unit of the interval: {d['unit']}.", "", *how_read(d), "",
                 "| metric | value |", "|---|---|", f"| accuracy | {pm(m['accuracy'])} |",
                 f"| the harness reported | {reported} |"]
        for name, metric in m.items():
            if name.startswith("accuracy_by_"):
                lines += ["", f"| {name.removeprefix('accuracy_by_')} | accuracy | n |", "|---|---|---|"]
                lines += [f"| {part} | {pm(v)} | {v['n']} |" for part, v in (metric.get("breakdown") or {}).items()]
        return "\n".join(lines) + f"\n\n{intervals_line(summary)}\n"


def how_read(details: Mapping[str, Any]) -> list[str]:
    """What the summary line and table.md say about how the items were read (nothing for a plain verdict)."""
    out = []
    if details.get("reader"):
        out.append(f"The log holds predictions, no verdict: read with {details['reader']}, as the harness reads "
                   f"them without a judge; {details.get('unreadable') or 0} of {details['n']} unreadable (counted "
                   "wrong, as the harness counts them).")
    if details.get("note"):
        out.append(details["note"][0].upper() + details["note"][1:] + ".")
    return out


def import_logs(fmt: str, paths: Sequence[Path], out: Path, options: Mapping[str, Any],
                source: Mapping[str, Any] | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Every (model, benchmark) log in ``paths`` as a run folder under ``out``; (folder, summary) each."""
    from spatialprobe.fingerprints import sha256_file
    from spatialprobe.runner import execute

    logs = read_logs(fmt, paths, options)
    if not logs:
        raise UsageError(f"no items found in {', '.join(map(str, paths))}.")
    folders = [out / f"{folder_name(log.model)}__{folder_name(log.benchmark)}" for log in logs]
    for n, (log, folder) in enumerate(zip(logs, folders, strict=True)):
        clash = next((other for other, f in zip(logs[:n], folders[:n], strict=True) if f == folder), None)
        if clash is not None and (clash.model, clash.benchmark) != (log.model, log.benchmark):
            raise UsageError(f"the models {clash.model!r} and {log.model!r} ({log.benchmark}) would both be written "
                             f"to {folder}: import them with different --out folders (or name one with --model).")
        recorded = recorded_model(folder)
        if recorded not in (None, log.model):
            raise UsageError(f"{folder} holds an import of the model {recorded!r}, and {log.model!r} would be written "
                             "there too (their names differ only in characters a folder name cannot hold): give "
                             "this import another --out folder.")
    done = []
    for log, folder in zip(logs, folders, strict=True):
        files = [SourceFile(str(Path(p).resolve()), sha256_file(Path(p))) for p in log.files]
        settings = ImportedSettings(fmt, files, log.model, log.benchmark, dict(options),
                                    dict(source) if source else None)
        done.append((folder, execute(ImportedRun(settings, log), folder)))
    return done


def recorded_model(folder: Path) -> str | None:
    """The model an imported run folder's config.json names (None: no such run there)."""
    import json

    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        return str(config["settings"]["model"]) if config.get("kind") == "imported" else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def folder_name(name: str) -> str:
    """A model id or benchmark name as one folder-name part (``org/model`` -> ``org_model``)."""
    import hashlib
    import re

    part = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "run"
    return part if len(part) <= 100 else f"{part[:90]}-{hashlib.sha256(part.encode()).hexdigest()[:9]}"  # < NAME_MAX
