"""A benchmark's local copy in every layout it is distributed in gives the same rows, its content
version changes with its content only, embedded images become files by their hash, and bad input
is refused naming file, line and field (spatialprobe/benchmarks/local_copy.py); ``spatialprobe bench``
refuses what does not apply before anything loads."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from spatialprobe.benchmarks.copy_images import image_file
from spatialprobe.benchmarks.local_copy import read_records
from spatialprobe.errors import DataError, UsageError

ROWS = [{"id": "q1", "question": "Is the cat left of the dog?", "answer": "A"},
        {"id": "q2", "question": "Which is closer?", "answer": "B"},
        {"id": "q3", "question": "Is the cup above the table?", "answer": "A"}]


def _png(colour: tuple[int, int, int]) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _delimited(path: Path, delimiter: str) -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(ROWS[0]), delimiter=delimiter)
        writer.writeheader()
        writer.writerows(ROWS)
    return path


def test_every_layout_gives_the_same_rows(tmp_path):
    pytest.importorskip("pyarrow")
    datasets = pytest.importorskip("datasets")
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "d.json").write_text(json.dumps(ROWS))
    (tmp_path / "wrapped.json").write_text(json.dumps({"data": ROWS}))
    keyed = {r["id"]: {k: v for k, v in r.items() if k != "id"} for r in ROWS}
    (tmp_path / "keyed.json").write_text(json.dumps(keyed))
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "d.parquet")
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.Table.from_pylist(ROWS[:2]), tmp_path / "pq" / "test-00000-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(ROWS[2:]), tmp_path / "pq" / "test-00001-of-00002.parquet")
    datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "disk"))
    datasets.DatasetDict({"test": datasets.Dataset.from_list(ROWS),
                          "val": datasets.Dataset.from_list(ROWS[:1])}).save_to_disk(str(tmp_path / "dict"))
    layouts = [tmp_path / "d.jsonl", tmp_path / "d.json", tmp_path / "d.parquet", tmp_path / "pq",
               tmp_path / "disk", _delimited(tmp_path / "d.csv", ","), _delimited(tmp_path / "d.tsv", "\t")]
    for path in layouts:
        assert read_records(path).rows == ROWS, path
    assert read_records(tmp_path / "dict", split="test").rows == ROWS
    assert read_records(tmp_path / "wrapped.json", records_key="data").rows == ROWS
    assert [{"id": r.pop("_key"), **r} for r in read_records(tmp_path / "keyed.json").rows] == ROWS
    first = read_records(tmp_path / "d.jsonl")
    assert first.where[1] == (str(tmp_path / "d.jsonl"), 2)
    assert read_records(tmp_path / "d.jsonl").version == first.version  # same content, same version
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS[:2]))
    assert read_records(tmp_path / "d.jsonl").version != first.version
    with pytest.raises(UsageError, match=r"a DatasetDict with splits \['test', 'val'\]; choose one"):
        read_records(tmp_path / "dict")
    with pytest.raises(UsageError, match="no Parquet file of split 'train'"):
        read_records(tmp_path / "pq", split="train")


def test_embedded_images_become_files_by_their_content(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))
    red, blue = _png((255, 0, 0)), _png((0, 0, 255))
    rows = [{"id": "a", "image": {"bytes": red, "path": "a.png"}}, {"id": "b", "image": {"bytes": blue, "path": None}}]
    features = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image()})
    datasets.Dataset.from_list(rows, features=features).save_to_disk(str(tmp_path / "disk"))
    read = read_records(tmp_path / "disk")
    paths = [image_file(r["image"]) for r in read.rows]
    assert [Path(p).read_bytes() for p in paths] == [red, blue]
    assert image_file(red) == paths[0]  # the same bytes, the same file
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "x.png").write_bytes(red)
    assert image_file("x.png", folders=(tmp_path / "nothing", tmp_path / "imgs")) == str(tmp_path / "imgs" / "x.png")
    with pytest.raises(DataError, match=r"d.jsonl, line 3, field 'image': image 'y.png' not found"):
        image_file("y.png", folders=(tmp_path / "imgs",), what=f"{tmp_path / 'd.jsonl'}, line 3, field 'image'")


def test_bad_input_is_refused_naming_file_line_and_field(tmp_path):
    (tmp_path / "d.csv").write_text("id,answer\nq1,A\nq2,B,extra\n")
    with pytest.raises(DataError, match=r"d.csv, line 3: 3 values for 2 header fields"):
        read_records(tmp_path / "d.csv")
    (tmp_path / "d.jsonl").write_text('{"id": "q1", "answer": "A"}\n{"id": "q2"}\n')
    read = read_records(tmp_path / "d.jsonl")
    assert read.require(0, "answer") == "A"
    with pytest.raises(DataError, match=r"d.jsonl, line 2, field 'answer': missing or empty"):
        read.require(1, "answer")
    (tmp_path / "d.json").write_text('[{"id": 1}, 3]')
    with pytest.raises(DataError, match="record 2"):
        read_records(tmp_path / "d.json")
    with pytest.raises(UsageError, match=r"unknown layout '\.xml'"):
        (tmp_path / "d.xml").write_text("<a/>")
        read_records(tmp_path / "d.xml")
    with pytest.raises(UsageError, match="no such file or folder"):
        read_records(tmp_path / "absent.jsonl")


def test_a_dataset_missing_from_the_cache_is_refused_offline(tmp_path, monkeypatch):
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf" / "datasets"))
    with pytest.raises(UsageError, match="not in the local Hugging Face cache"):
        read_records("hf:nobody/no-such-benchmark")


def test_bench_refuses_what_does_not_apply(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    runner = CliRunner()
    out = tmp_path / "run"
    said = runner.invoke(app, ["bench", "vsr", "--model", "dummy", "--data", "x.jsonl", "--out", str(out)])
    assert said.exit_code != 0 and "vsr is asked with its own command: spatialprobe vsr" in said.output
    said = runner.invoke(app, ["bench", "no-such", "--model", "dummy", "--data", "x.jsonl", "--out", str(out)])
    assert said.exit_code != 0 and "no benchmark 'no-such'" in said.output
    assert not out.exists()
