"""THE run spine: every run kind (probe, synthesize, judge, human, visor, qa, vsr, vsr-train,
spatialmqa) goes through :func:`execute`.

A kind says only what is its own (a :class:`RunKind` subclass): its resolved spec, its items,
how a batch of items is computed, how results become metrics, and how its table reads. The spine
does the rest, in this order, in one screen:

1. claim the run directory (one a run may own: new, empty or a run's own; the default folder
   is named by :mod:`.folders`) and lock it (a second process on the same ``--out`` is refused);
2. spec -> identity; an existing run of another identity is refused, naming the settings that
   differ (runtime settings may change);
3. ``config.json`` (spec + provenance);
4. the generic per-run cache (``run.sqlite``, table ``results``: one JSON value per item key),
   committed batch by batch, so a killed run resumes and computes nothing twice;
5. metrics -> ``predictions.jsonl``, ``summary.json`` (one schema, :mod:`.summary`),
   ``table.md`` and the kind's extra files, each written atomically (none of them when a
   finished run is confirmed: nothing computed, the same metrics);
6. an entry in the index of runs (``spatialprobe runs``, ``spatialprobe report``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from spatialprobe.errors import UsageError
from spatialprobe.files import atomic_write_text, read_json, write_json, write_jsonl
from spatialprobe.loading import resolved_devices
from spatialprobe.metrics.estimates import measured
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.runner.folders import RunOut, run_folder
from spatialprobe.runner.scale import SCALE_KEYS, Execution, Scale, ambient, stream_on_ray
from spatialprobe.runner.settings import from_config, inputs_of, to_spec
from spatialprobe.runner.spec import RunSpec, canonical, refuse_other_identity
from spatialprobe.runner.summary import Metric, build_summary
from spatialprobe.store import RunDir, provenance, register_run

Progress = Callable[[int, int], None]
"""Called with (items done, items in all)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Item:
    """One unit of work a run caches: a stable key and what the kind needs to compute it."""

    key: str
    """Unique within the run; the cache is keyed by it."""
    payload: Any = None
    """Anything the kind's ``compute`` needs (never stored)."""


@dataclass
class Evaluation:
    """What a kind makes of its results: per-item rows, metrics and its own details."""

    predictions: list[dict[str, Any]]
    """One row per item (or per item and fold), written to ``predictions.jsonl``."""
    metrics: dict[str, Metric]
    """Every metric, ``accuracy`` and ``macro_f1`` first where the kind has them."""
    task: str | None
    model: str | None
    dataset: str | None
    seed: int | None = None
    untrained: bool = False
    details: dict[str, Any] = field(default_factory=dict)
    """What only this kind reports (chosen prompts, per-object figures, kappa, ...)."""
    intervals: tuple[Resampling, ...] = ()
    """How rows are resampled for the 95 % bootstrap intervals of the metrics they name
    (:mod:`spatialprobe.metrics.intervals`); empty: the kind's metrics carry no interval. The spine
    computes each named metric's point estimate from the same registered statistic
    (:mod:`spatialprobe.metrics.estimates`): a kind leaves such metrics out of ``metrics``."""


K = TypeVar("K", bound="RunKind")


class RunKind:
    """What a run kind implements; :func:`execute` does everything else.

    A kind IS its typed settings: ``Settings`` is the dataclass of everything its ``config.json``
    records, and a kind is built from one instance of it, ``Kind(settings)``, by a command and by
    a replay alike. Where some settings are only known once the kind has looked (the digest of the
    images it judges, a model's weights), its constructor resolves them into the settings it holds
    (``self.settings``). So ``resolved()``, ``from_settings()`` and ``inputs()`` are written once,
    here: the settings held; the kind of given settings; and the models and files its settings'
    fields name (marked with :func:`.settings.model`, :func:`.settings.models` or
    :func:`.settings.data_file`), fingerprinted by content.
    """

    kind: ClassVar[str]
    Settings: ClassVar[type]
    """The dataclass of everything the kind's ``config.json`` records (settings and runtime)."""
    batch_size: int = 1
    scale: Scale | None = None
    """Where the run computes (:mod:`.scale`): a replayed config's runtime sets it; else the
    command's ``--ray``/``--workers`` (:func:`.scale.scaled`) decide."""
    scales_out: ClassVar[bool] = True
    """Whether its batches may be computed by Ray workers, each with its own copy of the kind
    (not where a batch needs what an earlier one made in this process, e.g. a trained model)."""
    migration: Any = None
    """A folder of a retired kind this run takes over (:class:`.legacy.Migration`); None: none."""

    def gpus_per_worker(self) -> int:
        """GPUs one Ray worker of this run needs (:func:`.scale.worker_plan`): what its model adapter
        declares (``gpus``, :class:`~spatialprobe.models.base.Declared`) where the kind asks one
        registered model (``model_spec``), else one."""
        spec = getattr(type(self), "model_spec", None)
        if spec is None:
            return 1
        from spatialprobe import registry

        return int(getattr(registry.lookup("model", self.model_spec.name), "gpus", 1))

    def __init__(self, settings: Any) -> None:
        self.settings = settings

    def __getattr__(self, name: str) -> Any:
        """A setting read as the kind's own attribute: ``self.seed`` is ``self.settings.seed``
        (an attribute of the kind or its class comes first)."""
        settings = self.__dict__.get("settings")
        if name.startswith("__") or settings is None or name not in {f.name for f in fields(settings)}:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(settings, name)

    def resolved(self) -> Any:
        """The resolved settings: the instance of ``Settings`` the kind holds."""
        return self.settings

    def spec(self) -> RunSpec:
        """The resolved spec: settings that decide the results, runtime that does not, and the
        fingerprints of the run's models and files (:meth:`inputs`)."""
        spec = to_spec(self.kind, self.resolved())
        runtime = {**spec.runtime, **self.scale_plan().runtime()}
        return replace(spec, runtime=runtime, inputs=self.inputs())

    def scale_plan(self) -> Scale:
        """Where this run computes: its own scale, else the command's (:func:`.scale.scaled`)."""
        return self.scale or ambient()

    adapters: ClassVar[dict[str, str]] = {}
    """Input key -> the attribute holding the model adapter a kind built for it: that input is what
    the adapter's own ``fingerprint()`` says (:func:`~spatialprobe.fingerprints.identity_of`: a
    server's endpoint and served model), not a fingerprint of the name its settings give."""

    def inputs(self) -> dict[str, Any]:
        """Every model and file the run reads, by name, fingerprinted by content: those its
        settings' fields name (:func:`.settings.inputs_of`), each model whose adapter the kind built
        (:attr:`adapters`) as that adapter names it. Part of the identity, so a resume or replay with
        one of them changed is refused naming it."""
        built = {key: self.__dict__.get(attribute) for key, attribute in self.adapters.items()}
        return inputs_of(self.resolved(), {key: a for key, a in built.items() if a is not None})

    @classmethod
    def from_spec(cls: type[K], spec: RunSpec, source: str | Path = "config.json") -> K:
        """Rebuild the run from its ``config.json`` (``spatialprobe run CONFIG``). The runtime
        keys of :mod:`.scale` are every kind's: those its settings do not hold set its scale."""
        own = {f.name for f in fields(cls.Settings)}
        runtime = {k: v for k, v in spec.runtime.items() if k in own or k not in SCALE_KEYS}
        kind = cls.from_settings(from_config(cls.Settings, replace(spec, runtime=runtime), source))
        if kind.scale is None:
            kind.scale = Scale.of_runtime(spec.runtime)
        return kind

    @classmethod
    def from_settings(cls: type[K], settings: Any) -> K:
        """The run of typed ``settings`` (an instance of ``Settings``)."""
        return cls(settings)

    def items(self) -> Sequence[Item]:
        """Every unit of work of the run, in a stable order."""
        raise NotImplementedError

    def compute(self, batch: Sequence[Item]) -> Sequence[Any]:
        """JSON-serialisable results of a batch of items, aligned with it."""
        raise NotImplementedError

    def portable(self) -> RunKind | None:
        """The kind itself, to send to Ray workers as it is, where its spec cannot rebuild it
        (inputs given in Python, not by name or file) and it holds no model yet; None (here):
        each worker rebuilds it from the spec."""
        return None

    def work(self, batch: Sequence[Item]) -> Any:
        """The part of a batch's computation a Ray worker runs (:mod:`.scale`); its value travels
        back to the driver, so it must pickle. Here: all of it, :meth:`compute`."""
        return self.compute(batch)

    def collect(self, batch: Sequence[Item], worked: Any) -> Sequence[Any]:
        """The part the driver runs on a worker's :meth:`work` (synthesis writes the images
        here): the batch's results, aligned with it. Here: what the worker returned."""
        return worked

    def evaluate(self, results: Mapping[str, Any]) -> Evaluation:
        """Metrics from the results of every item (keyed by item key)."""
        raise NotImplementedError

    def measure(self, evaluation: Evaluation) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The metrics with the intervals the evaluation's Resamplings declare (:func:`measured`);
        a kind may refine them (the ask run's repeated samples)."""
        return measured(evaluation.metrics, evaluation.intervals, evaluation.predictions, evaluation.seed)

    def table(self, summary: Mapping[str, Any]) -> str:
        """``table.md`` of a finished run."""
        raise NotImplementedError

    # Hooks: no-ops here, overridden by the kinds that need them.

    def prepare(self, run: RunDir, cached: Mapping[str, Any]) -> Iterable[str]:
        """Called once the run directory is locked and its identity checked, before computing:
        a kind whose compute writes files into the run directory (synthesize's images) learns
        it here. Returns the keys of cached results that no longer hold (an image whose file
        was deleted), which are computed again."""
        return ()

    def compute_stream(self, work: list[Sequence[Item]]
                       ) -> Iterator[tuple[Sequence[Item], Sequence[Any]]]:
        """(batch, results) as each batch finishes, in any order: a kind that computes many
        batches at once (Ray workers, prefetching) overrides this; here one batch at a time."""
        for batch in work:
            yield batch, self.compute(batch)

    def write_extras(self, run: RunDir, summary: Mapping[str, Any], evaluation: Evaluation) -> None:
        """Files beyond the table (plots, galleries, detections); none here."""


_CACHE = "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


class ResultCache:
    """The one per-run cache: ``results(key, value)`` in ``RUN/run.sqlite``."""

    def __init__(self, run: RunDir):
        self.run = run
        with run.db() as conn:
            conn.execute(_CACHE)

    def keys(self) -> set[str]:
        with self.run.db() as conn:
            return {k for (k,) in conn.execute("SELECT key FROM results")}

    def get_all(self) -> dict[str, Any]:
        with self.run.db() as conn:
            return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM results")}

    def put(self, rows: Sequence[tuple[str, Any]]) -> None:
        with self.run.db() as conn:  # one transaction per batch: a kill loses at most the batch
            conn.executemany("INSERT OR REPLACE INTO results VALUES (?, ?)",
                             [(k, json.dumps(v, ensure_ascii=False)) for k, v in rows])


def batches(items: Sequence[Item], size: int) -> Iterator[Sequence[Item]]:
    size = max(1, int(size))
    for start in range(0, len(items), size):
        yield items[start:start + size]


def start(run: RunDir, spec: RunSpec, cache: ResultCache, migration: Any = None) -> tuple[dict[str, Any], bool]:
    """Write ``config.json``; refuse a directory whose results come from another identity.
    Returns the config and whether this resumes (or confirms) a run begun before.

    A directory without cached results (a first attempt that failed before computing anything)
    is taken over by the new run. A run of the same identity keeps its config's provenance (when
    and by which command it began); only a changed runtime (``--batch-size``) is written. A folder
    of the retired kind ``migration`` names becomes this run's: its cache translated, its
    provenance kept with ``migrated_from`` (:mod:`.legacy`).
    """
    existing = run.config()
    if migration is not None and migration.applies(existing):
        migration.translate(run)
        assert existing is not None
        existing = {**spec.to_dict(), "provenance": {**(existing.get("provenance") or provenance()),
                                                     "migrated_from": migration.origin()}}
        write_json(run.file("config.json"), existing)
    if existing is not None and (cache.keys() or run.file("summary.json").exists()):
        refuse_other_identity(run.path, existing, spec)
        config = {**spec.to_dict(), "provenance": existing.get("provenance") or provenance()}
        if config != existing:
            write_json(run.file("config.json"), config)
        return config, True
    origin = {"migrated_from": migration.origin()} if migration is not None else {}
    config = {**spec.to_dict(), "provenance": {**provenance(), **origin}}
    write_json(run.file("config.json"), config)
    return config, False


def _finished_summary(run: RunDir, identity: str) -> dict[str, Any] | None:
    """The run's ``summary.json`` if it is one of this identity, else None."""
    try:
        summary = read_json(run.file("summary.json"))
    except (OSError, ValueError, RecursionError):
        return None
    return summary if isinstance(summary, dict) and summary.get("identity") == identity else None


def _confirms(run: RunDir, previous: dict[str, Any] | None, summary: dict[str, Any]) -> bool:
    """Whether a finished run's files already say what ``summary`` says (same metrics)."""
    return (previous is not None and canonical(previous.get("metrics")) == canonical(summary["metrics"])
            and all(run.file(name).exists() for name in ("predictions.jsonl", "table.md")))


def _summary_provenance(config: dict[str, Any], previous: dict[str, Any] | None,
                        resumed: bool, execution: Execution) -> dict[str, Any]:
    """``summary.json``'s provenance: the config's (how the run began), the device and dtype each
    component resolved, how this invocation computed (here or on Ray, how many workers, batches
    and retried batches) and, for every later invocation that computed more, when and how."""
    devices = [dict(d) for d in sorted({tuple(d.items()) for d in (*resolved_devices(), *execution.devices)})]
    info = {**config["provenance"], "devices": devices, "execution": execution.to_dict()}
    if resumed:
        earlier = list(((previous or {}).get("provenance") or {}).get("resumed") or [])
        now = provenance()
        info["resumed"] = [*earlier, {"created": now["created"], "command": now["command"]}]
    return info


def _resumed(path: Path, done: int, total: int) -> str:
    """What a run that resumes says before it computes: how much of it was already done."""
    if done == total:
        return f"{path}: all {total:,} items were already computed; nothing left to compute."
    return (f"{path}: resuming: {done:,} of {total:,} items were already computed and are kept; "
            f"{total - done:,} left to compute.")


def execute(kind: RunKind, out: RunOut, progress: Progress | None = None) -> dict[str, Any]:
    """Run ``kind`` into the run directory ``out`` (resuming it) and return its summary.

    ``out`` is a folder the run owns (:func:`~spatialprobe.store.require_own_folder`, checked
    before anything is written) or a :class:`~spatialprobe.runner.folders.DefaultRunDir`.
    A finished run that computes nothing and whose metrics come out the same is confirmed:
    no file in its folder is written.
    """
    spec, scale = kind.spec(), kind.scale_plan()
    if scale.ray is not None and not kind.scales_out:  # refused before anything is written
        raise UsageError(f"--ray does not apply to a {spec.kind} run: its batches need what an earlier "
                         "one made in this process; run it without --ray.")
    run = RunDir.claim(run_folder(out, spec.kind, spec.identity))
    run.lock()  # held until this function returns (or the process dies): one process per --out
    cache = ResultCache(run)
    config, resumed = start(run, spec, cache, kind.migration)
    items = kind.items()
    done = cache.keys()
    done -= set(kind.prepare(run, cache.get_all()))
    todo = [item for item in items if item.key not in done]
    if resumed and len(todo) < len(items):
        log.warning(_resumed(run.path, len(items) - len(todo), len(items)))
    if progress:
        progress(len(items) - len(todo), len(items))
    finished, execution, work = len(items) - len(todo), Execution(), list(batches(todo, kind.batch_size))
    stream = (stream_on_ray(kind, spec, work, scale, execution) if scale.ray is not None and work
              else kind.compute_stream(work))
    for batch, computed in stream:
        cache.put([(item.key, result) for item, result in zip(batch, computed, strict=True)])
        finished += len(batch)
        execution.batches, execution.items = execution.batches + 1, execution.items + len(batch)
        if progress:
            progress(finished, len(items))
    results = cache.get_all()
    evaluation = kind.evaluate({item.key: results[item.key] for item in items})
    # the metrics its Resamplings declare: point estimate and interval from one registered statistic
    metrics, intervals = kind.measure(evaluation)
    previous = _finished_summary(run, spec.identity)
    summary = build_summary(
        kind=spec.kind, task=evaluation.task, model=evaluation.model, dataset=evaluation.dataset,
        seed=evaluation.seed, metrics=metrics, details=evaluation.details,
        identity=spec.identity, provenance=_summary_provenance(config, previous, resumed and bool(todo), execution),
        untrained=evaluation.untrained, intervals=intervals)
    if todo or not _confirms(run, previous, summary):
        write_jsonl(run.file("predictions.jsonl"), evaluation.predictions)
        write_json(run.file("summary.json"), summary)
        atomic_write_text(run.file("table.md"), kind.table(summary))
        kind.write_extras(run, summary, evaluation)  # plots, galleries, detections (the kind decides)
    elif previous is not None:  # confirmed in place: the run's own files stay as they are
        summary = previous
    register_run(run.path, summary)  # the index is a cache: a failure there is one warning
    return summary
