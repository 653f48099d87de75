"""What every reader of another harness's per-item log makes: one :class:`Log` per model and
benchmark, its :class:`Instance` rows keyed, scored and clustered, and its provenance.

A reader is a function ``read(paths, options) -> list[Log]`` registered as
``register("import-format", NAME, "module:read")``; :mod:`.run` turns each log into a run folder
that ``report``, ``runs`` and ``export`` read like a native one. Every refusal here is a
:class:`~spatialprobe.errors.DataError` naming the file, the line and the field.
"""

from __future__ import annotations

import json
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
    """The files this log was read from (its samples and the results beside them)."""


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
    """A per-item score (a number or boolean); a DataError naming the field otherwise."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and value == value:
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise DataError(path, line, name, f"must be a number or true/false, not {value!r:.40}")


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


def unique(instances: list[Instance], path: Path) -> list[Instance]:
    """``instances``, refused where an id repeats (runs pair on ids)."""
    seen: set[str] = set()
    for inst in instances:
        if inst.instance_id in seen:
            raise DataError(path, None, "id", f"repeats the item id {inst.instance_id!r:.80}")
        seen.add(inst.instance_id)
    return instances
