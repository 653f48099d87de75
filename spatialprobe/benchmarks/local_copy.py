"""A benchmark's rows from the user's local copy, in whatever layout it is distributed, with the
content hash of what was read (the source's version: rehosted copies differ, so a run says which
one it read). Nothing is downloaded: the Hugging Face cache is read with ``HF_DATASETS_OFFLINE=1``.

Layouts (:func:`read_records`):

* ``.json`` - a list of records, ``{"data"|"rows"|...: [records]}`` (``records_key``), or a
  mapping ``{id: record}`` (each record gets ``_key`` = its id, as POSQA's files are keyed);
* ``.jsonl`` - one record a line;
* ``.csv`` / ``.tsv`` - a header line, one record a line (values are strings);
* ``.parquet`` - a file, or a folder of them (read in name order);
* a ``datasets`` folder written by ``save_to_disk`` (``dataset_info.json`` / ``state.json`` inside;
  a ``DatasetDict`` folder takes ``split``);
* ``hf:NAME`` - a dataset in the local Hugging Face cache, read offline with
  ``load_dataset(NAME, config, split=split)``.

Images are found or written by :mod:`spatialprobe.benchmarks.copy_images`.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.copy_images import image_file
from spatialprobe.errors import DataError, UsageError
from spatialprobe.files import shown
from spatialprobe.fingerprints import digests, folder_files

TABLES = (".json", ".jsonl", ".csv", ".tsv", ".parquet")
"""The single-file layouts :func:`read_records` reads (besides folders and ``hf:NAME``)."""


@dataclass(frozen=True)
class Records:
    """The rows of a local copy and where each came from."""

    rows: list[dict[str, Any]]
    version: str
    """12 hex digits of the sha256 over the files read (their sorted digests): the data's identity."""
    where: Sequence[tuple[str, int | None]]
    """``where[i]``: (file, line) of ``rows[i]`` for error messages; a Parquet or ``datasets`` row is
    named ``FILE row N`` with no line."""
    path: Path
    """The file or folder read (for ``hf:NAME``, the cache folder of the dataset)."""

    def error(self, index: int, field: str, message: str) -> DataError:
        """A refusal naming the file, the line and the field of row ``index``."""
        path, line = self.where[index]
        return DataError(path, line, field, message)

    def place(self, index: int, field: str | None = None) -> str:
        """Row ``index``'s file, line and ``field`` as a refusal names them (``what`` of :func:`image_file`)."""
        path, line = self.where[index]
        return f"{path}" + (f", line {line}" if line else "") + (f", field '{field}'" if field else "")

    def require(self, index: int, field: str) -> Any:
        """Row ``index``'s ``field``, refused naming file, line and field where it is missing or empty."""
        value = self.rows[index].get(field)
        if value is None or value == "":
            raise self.error(index, field, "missing or empty")
        return value

    def listed(self, index: int, field: str, least: int = 1) -> list[Any]:
        """Row ``index``'s ``field``: a list of at least ``least`` texts or numbers, refused naming
        file, line and field otherwise (a string, an object, a list holding lists or nulls)."""
        value = self.require(index, field)
        if not isinstance(value, (list, tuple)) or len(value) < least \
                or any(v is None or isinstance(v, (dict, list, tuple)) for v in value):
            raise self.error(index, field, f"expected a list of at least {least} texts, got {shown(value)}")
        return list(value)

    def images(self, index: int, field: str, folders: Sequence[Path]) -> list[str]:
        """Row ``index``'s images in ``field`` - one, or a list shown together: paths under ``folders``
        or embedded - as :func:`image_file` gives them; refused naming file, line and field where none."""
        value = self.require(index, field)
        shown = [image_file(v, folders=folders, what=self.place(index, field))
                 for v in (value if isinstance(value, list) else [value])]
        if not shown:
            raise self.error(index, field, "no image")
        return shown

    def gold_letter(self, index: int, field: str, count: int, what: str = "options", strip: str | None = None
                    ) -> str:
        """Row ``index``'s gold in ``field``: one of the first ``count`` option letters (white space,
        or the characters ``strip``, around it removed), refused naming file, line and field otherwise."""
        gold = str(self.require(index, field)).strip(strip)
        if gold not in letters(count):
            raise self.error(index, field, f"{gold!r:.60} is none of the {count} {what}' letters")
        return gold

    def options(self, index: int, field: str) -> tuple[str, ...]:
        """Row ``index``'s option texts in ``field``: a list of at least two (:meth:`listed`)."""
        return tuple(str(v) for v in self.listed(index, field, 2))


def version_of(files: Sequence[Path]) -> str:
    """The content version of the files read: 12 hex digits over their sorted sha256 digests."""
    joined = "\n".join(sorted(digests(sorted(Path(f) for f in files))))
    return hashlib.sha256(joined.encode()).hexdigest()[:12]


def read_records(path: str | os.PathLike[str], *, split: str | None = None, config: str | None = None,
                 records_key: str | None = None) -> Records:
    """The rows of a benchmark's local copy at ``path`` (a file, a folder, or ``hf:NAME``)."""
    text = os.fspath(path)
    if text.startswith("hf:"):
        return _from_hub_cache(text[3:], split, config)
    where = Path(text)
    if not where.exists():
        raise UsageError(f"{where}: no such file or folder (the benchmark's data is read from your local copy; "
                         "nothing is downloaded)")
    if where.is_dir():
        if (where / "dataset_info.json").is_file() or (where / "dataset_dict.json").is_file() \
                or (where / "state.json").is_file():
            return _from_disk(where, split)
        parquet = sorted(where.rglob("*.parquet"))
        if parquet:
            return _parquet(where, parquet, split)
        raise UsageError(f"{where}: a folder that holds neither a `datasets` save_to_disk copy nor .parquet files")
    suffix = where.suffix.lower()
    if suffix == ".jsonl":
        return _jsonl(where)
    if suffix == ".json":
        return _json(where, records_key)
    if suffix in (".csv", ".tsv"):
        return _delimited(where, "\t" if suffix == ".tsv" else ",")
    if suffix == ".parquet":
        return _parquet(where, [where], None)
    raise UsageError(f"{where}: unknown layout {suffix or '(no suffix)'!r}; expected one of {', '.join(TABLES)}, "
                     "a `datasets` folder or hf:NAME")


def _jsonl(path: Path) -> Records:
    from spatialprobe.files import iter_jsonl

    rows, where = [], []
    for line, record in iter_jsonl(path):
        rows.append(record)
        where.append((str(path), line))
    return Records(rows, version_of([path]), where, path)


def _json(path: Path, records_key: str | None) -> Records:
    from spatialprobe.files import read_json_file

    data = read_json_file(path)
    if records_key is not None:
        if not isinstance(data, dict) or not isinstance(data.get(records_key), list):
            raise DataError(path, None, records_key, "expected a list of records under this key")
        data = data[records_key]
    if isinstance(data, dict):
        if all(isinstance(v, dict) for v in data.values()):
            rows = [{"_key": str(k), **v} for k, v in data.items()]
            return Records(rows, version_of([path]), [(f"{path} record {k!r:.60}", None) for k in data], path)
        raise DataError(path, None, None, "a JSON object whose values are not all records; name the list "
                        "of records with records_key")
    if not isinstance(data, list):
        raise DataError(path, None, None, f"expected a JSON list of records, got {type(data).__name__}")
    for n, record in enumerate(data):
        if not isinstance(record, dict):
            raise DataError(f"{path} record {n + 1}", None, None, f"a {type(record).__name__}, not an object")
    return Records(list(data), version_of([path]), [(f"{path} record {n + 1}", None) for n in range(len(data))],
                   path)


def _delimited(path: Path, delimiter: str) -> Records:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle, delimiter=delimiter)
            rows, where = [], []
            for record in reader:
                if None in record:  # more values than header fields
                    raise DataError(path, reader.line_num, None, f"{len(record[None]) + len(reader.fieldnames or [])} "
                                    f"values for {len(reader.fieldnames or [])} header fields")
                rows.append(dict(record))
                where.append((str(path), reader.line_num))
    except UnicodeDecodeError as err:
        raise DataError(path, None, None, f"not UTF-8 text ({err.reason} at byte {err.start})") from None
    except csv.Error as err:
        raise DataError(path, None, None, str(err)) from None
    return Records(rows, version_of([path]), where, path)


def _first_line(err: Exception) -> str:
    """An exception's message cut to its first line (pyarrow's run over several), for a one-line refusal."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:200]


def _arrow_rows(table: Any) -> list[dict[str, Any]]:
    return [dict(r) for r in table.to_pylist()]


def _parquet(root: Path, files: Sequence[Path], split: str | None) -> Records:
    from spatialprobe.extras import require

    pq = require("pyarrow.parquet", "benchmarks")
    if split is not None:
        chosen = [f for f in files if f.name.startswith(split) or f.parent.name == split
                  or f.name.split("-")[0] == split]
        if not chosen:
            raise UsageError(f"{root}: no Parquet file of split {split!r} among {[f.name for f in files][:8]}")
        files = chosen
    rows: list[dict[str, Any]] = []
    where: list[tuple[str, int | None]] = []
    for file in files:
        try:
            table = pq.read_table(file)
        except Exception as err:  # pyarrow raises several types for a damaged file
            raise DataError(file, None, None, f"not a readable Parquet file ({_first_line(err)})") from None
        part = _arrow_rows(table)
        rows += part
        where += [(f"{file} row {n + 1}", None) for n in range(len(part))]
    return Records(rows, version_of(files), where, root)


def _datasets() -> Any:
    from spatialprobe.extras import require

    return require("datasets", "benchmarks")


def _dataset_rows(dataset: Any, label: str) -> tuple[list[dict[str, Any]], list[tuple[str, int | None]]]:
    datasets = _datasets()
    features = dataset.features
    for name, feature in features.items():  # images as their stored bytes, never decoded here
        if isinstance(feature, datasets.Image):
            dataset = dataset.cast_column(name, datasets.Image(decode=False))
    rows = [dict(r) for r in dataset]
    return rows, [(f"{label} row {n + 1}", None) for n in range(len(rows))]


def _from_disk(folder: Path, split: str | None) -> Records:
    datasets = _datasets()
    try:
        loaded = datasets.load_from_disk(os.fspath(folder))
    except Exception as err:  # datasets raises FileNotFoundError/ValueError for a damaged folder
        raise DataError(folder, None, None, f"not a readable `datasets` folder ({_first_line(err)})") from None
    if isinstance(loaded, datasets.DatasetDict):
        if split is None:
            if len(loaded) != 1:
                raise UsageError(f"{folder}: a DatasetDict with splits {sorted(loaded)}; choose one with --split")
            split = next(iter(loaded))
        if split not in loaded:
            raise UsageError(f"{folder}: no split {split!r}; it has {sorted(loaded)}")
        loaded = loaded[split]
    try:
        rows, where = _dataset_rows(loaded, str(folder))
    except Exception as err:  # a damaged Arrow file is read lazily: pyarrow and CPython raise several types
        raise DataError(folder, None, None, f"not a readable `datasets` folder ({_first_line(err)})") from None
    return Records(rows, version_of(folder_files(folder)), where, folder)


def _from_hub_cache(name: str, split: str | None, config: str | None) -> Records:
    datasets = _datasets()
    try:
        with _offline(datasets):
            loaded = datasets.load_dataset(name, config, split=split or "test")
    except Exception as err:  # offline misses raise ConnectionError/FileNotFoundError/ValueError
        raise UsageError(f"hf:{name}: not in the local Hugging Face cache ({type(err).__name__}: {err}); "
                         "download it where you have access (datasets.load_dataset) and run again") from None
    files = sorted({Path(f["filename"]) for f in loaded.cache_files})
    rows, where = _dataset_rows(loaded, f"hf:{name}")
    return Records(rows, version_of(files), where, files[0].parent if files else Path(name))


@contextlib.contextmanager
def _offline(datasets: Any) -> Iterator[None]:
    """Within: ``datasets`` and the hub client read their caches only (``HF_HUB_OFFLINE``'s behaviour,
    set where they read it at run time: the environment variables count only before their import),
    so a name that is not cached is refused at once, not after the hub client's retries."""
    import huggingface_hub.constants as hub

    flags = [(datasets.config, "HF_HUB_OFFLINE"), (datasets.config, "HF_DATASETS_OFFLINE"), (hub, "HF_HUB_OFFLINE")]
    before = [getattr(module, flag) for module, flag in flags]
    for module, flag in flags:
        setattr(module, flag, True)
    try:
        yield
    finally:
        for (module, flag), value in zip(flags, before, strict=True):
            setattr(module, flag, value)


def image_folders(images: str | None, records: Records) -> list[Path]:
    """Where an item's relative image paths are looked up: ``--images`` where given, else the
    folder of the data (the folder itself where the copy is one)."""
    if images:
        return [Path(images)]
    return [records.path if records.path.is_dir() else records.path.parent]


def options_text(options: Sequence[str]) -> str:
    """Lettered options, one a line: ``A. first`` ... (the form every lettered benchmark is asked in)."""
    return "\n".join(f"{chr(65 + n)}. {o}" for n, o in enumerate(options))


def lettered_question(question: Any, options: Sequence[str]) -> str:
    """The toolkit's wording of a lettered item: the question, its options one a line
    (:func:`options_text`), then "Answer with the option's letter."."""
    return f"{question}\n{options_text(options)}\nAnswer with the option's letter."


def letters(n: int) -> tuple[str, ...]:
    """The first ``n`` option letters."""
    return tuple(chr(65 + i) for i in range(n))


def read_copy(found: Mapping[str, Any], needs: str) -> Records:
    """The records of a benchmark's local copy (``found``: :func:`spatialprobe.benchmarks.base.given`'s
    ``data`` and ``split``); asked without ``--data``, refused with ``needs`` (what the copy is)."""
    if found["data"] is None:
        raise UsageError(needs)
    return read_records(found["data"], split=found["split"])


def option_letters(items: Sequence[Any], found: Mapping[str, Any], what: str, kind: str) -> tuple[str, ...]:
    """A lettered source's labels: the letters of the most options any of ``items`` has. No item
    (the copy holds none, or none of the ``--subset`` kept) is refused in one sentence naming the
    copy (``found["data"]``), ``what`` it holds and the subset by its ``kind`` (type, category, ...)."""
    if not items:
        subset = found.get("subset")
        raise UsageError(f"{found['data']}: no {what}" + (f" of {kind} {subset!r}" if subset else ""))
    return letters(max(len(i.options) for i in items))


def as_json(value: Any) -> Any:
    """A JSON-safe copy of a row value (bytes dropped), for details and errors."""
    return json.loads(json.dumps(value, default=lambda _: None))
