"""The readers added after tests/test_readers_property.py, fed mutated files: a load or one sentence.

The same discipline and the same mutations (reused from that file): each reader starts from a
valid minimal file, hypothesis mutates it (lines dropped, repeated or cut, fields removed or given
other types, a byte-order mark, random bytes) or replaces it, and the outcome must be a load or a
:class:`SpatialprobeError` whose message is one line naming the file; any other exception is a
traceback a user would see. Covered here: :func:`spatialprobe.sources.files.read_records` in each
layout, the ``import`` formats' readers (:mod:`spatialprobe.interop`) and, through the CLI, a few of
them; and the benchmark modules' row parsing (:mod:`spatialprobe.sources`) through
:func:`spatialprobe.sources.rebuild.replay`, each from a minimal copy as its own test builds one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_readers_property import FAST, _csv, _jsonl, _mutate, _retype

from spatialprobe.errors import SpatialprobeError


def _one_line(err: SpatialprobeError, *names: str) -> str:
    """``err``'s message, checked to be one short line naming one of ``names`` (a file's name)."""
    message = str(err)
    assert message and "\n" not in message and len(message) < 600, message
    assert any(name in message for name in names), (names, message)
    return message


# ---- read_records: every layout of a benchmark's local copy -----------------------------------------

RECORDS = [{"idx": n, "question": f"Is the cup {n} left of the lamp?", "choices": ["yes", "no"], "answer": "A"}
           for n in range(4)]
FLAT = [[str(r["idx"]), r["question"], "yes", "A"] for r in RECORDS]

LAYOUTS = {  # name -> (file name, valid content, read_records keywords)
    "json-list": ("data.json", json.dumps(RECORDS).encode(), {}),
    "json-keyed": ("posqa.json", json.dumps({f"k{r['idx']}": r for r in RECORDS}).encode(), {}),
    "json-under-key": ("bench.json", json.dumps({"meta": {}, "data": RECORDS}).encode(), {"records_key": "data"}),
    "jsonl": ("test.jsonl", _jsonl(RECORDS), {}),
    "csv": ("test.csv", _csv([["idx", "question", "choice", "answer"], *FLAT]), {}),
    "tsv": ("test.tsv", _csv([["idx", "question", "choice", "answer"], *FLAT], "\t"), {}),
}


def _read_records(path: Path, keywords: dict):
    from spatialprobe.sources.files import read_records

    records = read_records(path, **keywords)
    assert len(records.rows) == len(records.where)
    return records


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_each_layout_reads_its_valid_example(name, tmp_path):
    file_name, content, keywords = LAYOUTS[name]
    (tmp_path / file_name).write_bytes(content)
    assert len(_read_records(tmp_path / file_name, keywords).rows) == 4


@pytest.mark.parametrize("name", sorted(LAYOUTS))
@FAST
@given(data=st.data())
def test_a_mutated_copy_is_read_or_refused_in_one_line_naming_the_file(name, tmp_path, data):
    file_name, content, keywords = LAYOUTS[name]
    for _ in range(data.draw(st.integers(1, 3))):
        content = _mutate(content, data.draw)
    path = tmp_path / file_name
    path.write_bytes(content)
    try:
        _read_records(path, keywords)
    except SpatialprobeError as err:
        _one_line(err, file_name)


def test_a_bad_line_is_named_by_its_number(tmp_path):
    lines = _jsonl(RECORDS).splitlines(keepends=True)
    (tmp_path / "test.jsonl").write_bytes(b"".join([*lines[:2], b"{oops\n", *lines[2:]]))
    with pytest.raises(SpatialprobeError, match=r"test\.jsonl, line 3: "):
        _read_records(tmp_path / "test.jsonl", {})
    (tmp_path / "test.csv").write_bytes(b"idx,question\n1,a\n2,b,extra\n")
    with pytest.raises(SpatialprobeError, match=r"test\.csv, line 3: 3 values for 2 header fields"):
        _read_records(tmp_path / "test.csv", {})


def _parquet(path: Path, rows: list) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


@FAST
@given(data=st.data())
def test_a_damaged_or_retyped_parquet_file_is_read_or_refused_in_one_line(tmp_path, data):
    pytest.importorskip("pyarrow")
    path = tmp_path / "test-00000-of-00001.parquet"
    rows = _retype(RECORDS, data.draw)
    try:  # records of any shape pyarrow can store, then their bytes damaged
        _parquet(path, rows if isinstance(rows, list) and all(isinstance(r, dict) for r in rows) else RECORDS)
    except Exception:  # a shape pyarrow cannot store (mixed types): keep the valid rows
        _parquet(path, RECORDS)
    if data.draw(st.booleans()):
        path.write_bytes(_mutate(path.read_bytes(), data.draw))
    try:
        _read_records(path if data.draw(st.booleans()) else tmp_path, {})
    except SpatialprobeError as err:
        _one_line(err, str(tmp_path))


def test_a_damaged_parquet_file_is_refused_in_one_line(tmp_path):
    # found by the test above: pyarrow's message runs over three lines ("Couldn't deserialize thrift ...")
    pytest.importorskip("pyarrow")
    path = tmp_path / "test.parquet"
    _parquet(path, RECORDS)
    content = path.read_bytes()
    path.write_bytes(content[:4] + b"\x00" + content[5:])  # the first page header's first byte
    with pytest.raises(SpatialprobeError) as err:
        _read_records(path, {})
    assert _one_line(err.value, "test.parquet").endswith(
        "test.parquet: not a readable Parquet file (Couldn't deserialize thrift: TProtocolException: Invalid data)")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A ``datasets`` folder written by ``save_to_disk``: its files' names and bytes."""
    datasets = pytest.importorskip("datasets")
    folder = tmp_path_factory.mktemp("saved")
    datasets.Dataset.from_list(RECORDS).save_to_disk(str(folder))
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@FAST
@given(data=st.data())
def test_a_damaged_datasets_folder_is_read_or_refused_in_one_line(saved, tmp_path, data):
    import tempfile

    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    damaged = data.draw(st.sampled_from(sorted(saved)))
    for name, content in saved.items():
        (folder / name).write_bytes(_mutate(content, data.draw) if name == damaged else content)
    try:
        _read_records(folder, {})
    except SpatialprobeError as err:
        _one_line(err, str(folder))
