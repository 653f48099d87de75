"""What every reader of another harness's per-item log makes: one :class:`Log` per model and
benchmark, its :class:`Instance` rows keyed, scored and clustered, and its provenance.

A reader is a function ``read(paths, options) -> list[Log]`` registered as
``register("import-format", NAME, "module:read")``; :mod:`.run` turns each log into a run folder
that ``report``, ``runs`` and ``export`` read like a native one. Every refusal here is a
:class:`~spatialprobe.errors.DataError` naming the file, the line and the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError


@dataclass(frozen=True)
class Instance:
    """One scored item of a harness's log."""

    instance_id: str
    """The item's key in its benchmark (``doc_id``, ``index``, ``sample_id`` ...)."""
    gold: Any
    """The reference answer as the log writes it (a label, an option index, a string)."""
    pred: Any
    """The model's answer as the harness extracted it (None where none was)."""
    correct: bool
    """Whether the harness scored it correct (its own metric, never re-judged here)."""
    score: float
    """The harness's per-item score (1.0/0.0 for accuracy-like metrics)."""
    cluster: str | None = None
    """The item's cluster (``--cluster FIELD``, a circular group's ``g_index``); None: the item."""
    protocol: str | None = None
    """How the model was asked, where the log says (``loglikelihood``, ``generate_until``)."""
    question: str | None = None
    """The item's input text, where the log keeps it (exported to Every Eval Ever)."""
    reply: str | None = None
    """The model's generated text as the log keeps it, before the harness's extraction (None
    where the model generated nothing: log-likelihood tasks); ``audit parse`` reads it."""
    options: tuple[str, ...] | None = None
    """The item's option texts in the order asked (lettered A, B, ...), where the log keeps them;
    ``audit blind`` and ``audit parse`` read them."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Further row fields the log declares (the clusters of a row of two objects, its fold)."""
    log_id: str | None = None
    """The item's id in the log where the run keys it otherwise (a joined source's item key)."""


@dataclass
class Log:
    """The items of one model on one benchmark, with where they came from."""

    harness: str
    """The format's name (``lm-eval``, ``vlmeval`` ...)."""
    model: str
    benchmark: str
    metric: str
    """The harness metric ``correct`` comes from (``acc``, ``exact_match``, ``hit`` ...)."""
    instances: list[Instance] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    """Harness name/version/commit, model revision, dataset revision: what the log records."""
    reported: float | None = None
    """The harness's own aggregate of ``metric`` in percent, where the log records one."""
    cluster_field: str | None = None
    """The log field the clusters come from; None: instances are the unit."""
    files: list[Path] = field(default_factory=list)
    clusters: tuple[str, ...] = ()
    """Row fields (of ``Instance.fields``) naming a row's clusters, where a row has several
    (a spatialprobe run exported to Every Eval Ever); empty: ``cluster``."""
    group: str | None = None
    """Row field whose groups are measured apart and averaged (a probe run's ``fold``), or None."""
    reader: str | None = None
    """Where the log holds the model's predictions but no verdict (VLMEvalKit's unscored files):
    the harness's own reader they were read with (``VLMEvalKit's can_infer``); None: the log's
    own verdict per item."""
    unreadable: int = 0
    """Predictions that reader read no answer from (counted wrong, as the harness counts them)."""
    note: str = ""
    """What else the summary line says about how the items were read (epochs reduced, repeats)."""


def options_of(options: Mapping[str, Any], allowed: tuple[str, ...], fmt: str) -> dict[str, Any]:
    """The options given (not None) that ``fmt`` reads; one sentence for any other."""
    given = {k: v for k, v in options.items() if v not in (None, False, "", [], ())}
    other = sorted(set(given) - set(allowed))
    if other:
        flags = ", ".join("--" + k.replace("_", "-") for k in other)
        raise_usage(f"{flags} does not apply to the {fmt} format (it reads: "
                    f"{', '.join('--' + a.replace('_', '-') for a in allowed) or 'no options'}).")
    return given


def raise_usage(message: str) -> None:
    from spatialprobe.errors import UsageError

    raise UsageError(message)


def jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-empty line of a JSON-lines file; a line that is not a
    JSON object is a DataError naming it."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            line = decoded(raw, path, number)
            if not line.strip():
                continue
            value = loads(line, path, number)
            if not isinstance(value, dict):
                raise DataError(path, number, None, f"is a JSON {type(value).__name__}, not an object")
            yield number, value


def loads(text: str, path: Path, line: int | None = None) -> Any:
    """``json.loads`` of a log's text; bad JSON, or JSON nested too deep to parse, is a DataError
    naming the file and line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(path, line or err.lineno, None, f"is not JSON ({err.msg})") from None
    except RecursionError:
        raise DataError(path, line, None, "is not JSON this reads (lists or objects nested thousands deep)") from None


def decoded(raw: bytes, path: Path, line: int | None = None) -> str:
    """``raw`` as UTF-8 text; a DataError naming the file (and line) where it is not."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(path, line, None, f"is not UTF-8 text ({err.reason} at byte {err.start})") from None


def field_of(record: Mapping[str, Any], name: str, path: Path, line: int | None) -> Any:
    """``record[name]`` (a dotted name reads nested objects); a DataError naming the field if absent."""
    value: Any = record
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise DataError(path, line, name, "is missing")
        value = value[part]
    return value


def score_of(value: Any, path: Path, line: int | None, name: str) -> float:
    """A per-item score: a finite number or a boolean; a DataError naming the field otherwise
    (NaN and infinity too, JSON's ``NaN``/``Infinity`` tokens and lm-eval's text ``"nan"``: an item
    without a score is no item to average)."""
    if isinstance(value, bool):
        return float(value)
    number: float | None = None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is None:
        raise DataError(path, line, name, f"must be a number or true/false, not {value!r:.40}")
    if not math.isfinite(number):
        raise DataError(path, line, name, f"is {value!r:.20}, not a finite score: the harness scored no "
                        "number here; fix or drop the item and import again")
    return number


def gold_of(value: Any, path: Path, line: int | None, name: str) -> Any:
    """The item's gold answer; missing (null, an empty cell, NaN) is a DataError: the item cannot be
    scored, and counting it wrong would lower the accuracy the harness printed."""
    if value is None or (isinstance(value, str) and not value.strip()) or (isinstance(value, float) and value != value):
        raise DataError(path, line, name, "is missing: the item has no gold answer (a damaged or unfinished "
                        "log); fix or drop it and import again")
    return value


def text(value: Any) -> str | None:
    """A value as the text a row keeps (None stays None; a value JSON has no type for, such as an
    .xlsx cell's date, as its ``str``)."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def option_texts(value: Any) -> tuple[str, ...] | None:
    """A log's list of option texts as a tuple spaces stripped (None unless
    a list of at least two strings)."""
    if isinstance(value, (list, tuple)) and len(value) >= 2 and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value)
    return None


def unique(instances: list[Instance], path: Path, group: str | None = None) -> list[Instance]:
    """``instances``, refused where an id repeats (runs pair on ids); with a ``group`` (a fold) an
    id repeats where it comes twice in one group."""
    seen: set[tuple[str, Any]] = set()
    for inst in instances:
        key = (inst.instance_id, inst.fields.get(group) if group else None)
        if key in seen:
            where = f" in {group} {key[1]}" if group else ""
            raise DataError(path, None, "id", f"repeats the item id {inst.instance_id!r:.80}{where}: two verdicts "
                            "for one item; keep one (or give each repeat its own id)")
        seen.add(key)
    return instances


def csv_rows(path: Path, delimiter: str = ",") -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, row) of a CSV/TSV file with a header; a cell longer than Python's csv field limit is
    a DataError naming the file, line and column, never a traceback."""
    source = decoded(path.read_bytes(), path)
    reader = csv.DictReader(io.StringIO(source, newline=""), delimiter=delimiter)
    records = iter(reader)
    while True:
        start = max(reader.line_num, 1) + 1  # the row's first line (a quoted cell may hold newlines)
        try:
            record = next(records)
        except StopIteration:
            return
        except csv.Error as err:
            raise over_long(path, source, delimiter) or DataError(path, reader.line_num, None,
                                                                  f"is not CSV this reads ({err})") from None
        yield start, record


def over_long(path: Path, source: str, delimiter: str) -> DataError | None:
    """The first cell longer than the csv field limit, as a DataError naming it (None if none is)."""
    limit = csv.field_size_limit()
    csv.field_size_limit(2 ** 31 - 1)  # read once more without the limit, only to find the cell
    try:
        reader = csv.reader(io.StringIO(source, newline=""), delimiter=delimiter)
        header = next(reader, [])
        for row in reader:
            for name, cell in zip(header, row, strict=False):
                if len(cell) > limit:
                    return DataError(path, reader.line_num, name, f"holds {len(cell):,} characters, over the "
                                     f"{limit:,} a CSV cell is read with; shorten it, or write the log as JSON "
                                     "lines (or .xlsx for VLMEvalKit), which have no such limit")
    except csv.Error:
        return None
    finally:
        csv.field_size_limit(limit)
    return None
