"""The readers added after tests/test_readers_property.py, fed mutated files: a load or one sentence.

The same discipline and the same mutations (reused from that file): each reader starts from a
valid minimal file, hypothesis mutates it (lines dropped, repeated or cut, fields removed or given
other types, a byte-order mark, random bytes) or replaces it, and the outcome must be a load or a
:class:`SpatialprobeError` whose message is one line naming the file; any other exception is a
traceback a user would see. Covered here: :func:`spatialprobe.benchmarks.local_copy.read_records` in each
layout, the ``import`` formats' readers (:mod:`spatialprobe.interop`) and, through the CLI, a few of
them; the benchmark modules' row parsing is in tests/test_readers_benchmarks.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_readers_property import FAST as FEW
from test_readers_property import _csv, _jsonl, _mutate, _retype

from spatialprobe.errors import SpatialprobeError

FAST = settings(FEW, max_examples=50)  # that file's settings (derandomized, no deadline), twice the examples


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
    from spatialprobe.benchmarks.local_copy import read_records

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


def test_a_datasets_folder_whose_arrow_file_lost_a_line_is_refused_in_one_line(saved, tmp_path):
    # found by the test below: the Arrow file is read lazily, row by row, where CPython raised
    # "SystemError: Negative size passed to PyUnicode_New"
    for name, content in saved.items():
        lines = content.splitlines(keepends=True)
        (tmp_path / name).write_bytes(b"".join(lines[:8] + lines[9:]) if name.endswith(".arrow") else content)
    with pytest.raises(SpatialprobeError, match="not a readable `datasets` folder") as err:
        _read_records(tmp_path, {})
    _one_line(err.value, str(tmp_path))


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


# ---- the import formats' readers (spatialprobe import FORMAT) --------------------------------------

LM_EVAL = Path(__file__).parent / "data" / "interop" / "lm_eval"
LM_SAMPLES = "samples_spatial_tiny_2026-11-26T19-17-11.224587.jsonl"
LM_RESULTS = {"results": {"spatial_tiny": {"acc,none": 0.6}}, "configs": {"spatial_tiny": {
    "output_type": "multiple_choice"}}, "versions": {"spatial_tiny": 1.0}, "task_hashes": {"spatial_tiny": "ea9e"},
    "config": {"model_args": {"pretrained": "/tmp/gpt2"}, "model_revision": "main"}, "model_name": "/tmp/gpt2",
    "lm_eval_version": "0.4.13", "git_hash": None}
LMMS = [{"doc_id": n, "target": gold, "filtered_resps": [reply], "resps": [[f"{reply}."]], "input": f"q{n}",
         "doc_hash": f"h{n}", "exact_match": float(reply == gold)}
        for n, (reply, gold) in enumerate([("yes", "yes"), ("no", "yes"), ("no", "no")])]
LMMS_RESULTS = {"results": {"vsr_yesno": {"exact_match,none": 2 / 3}}, "configs": {"vsr_yesno": {
    "output_type": "generate_until"}}, "versions": {"vsr_yesno": 0}, "model_name": "llava", "lmms_eval_version": "0.7"}
VLM_HEADER = ["index", "question", "A", "B", "answer", "prediction", "category"]
VLM_ROWS = [[1, "Is the cat left of the dog?", "yes", "no", "A", "A", "left"],
            [2, "Is the cup on the table?", "yes", "no", "B", "A. yes", "on"],
            [3, "Is the bird above the tree?", "yes", "no", "B", "(B) no", "above"]]
PLAIN = [{"qid": n, "answer": gold, "output": pred, "img": f"i{n // 2}", "options": ["yes", "no"]}
         for n, (pred, gold) in enumerate([("Yes", "yes"), ("no", "yes"), ("no", "no")])]
PLAIN_MAP = {"id": "qid", "prediction": "output", "gold": "answer", "cluster": "img", "options": "options"}
EEE = [{"schema_version": "0.3.0", "evaluation_id": "e1", "model_id": "org/m", "evaluation_name": "vsr",
        "sample_id": f"s{n}", "interaction_type": "single_turn",
        "input": {"raw": f"q{n}", "reference": [gold], "choices": ["yes", "no"]}, "output": {"raw": [pred]},
        "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": pred}],
        "evaluation": {"score": float(pred == gold), "is_correct": pred == gold}, "metadata": {"img": f"i{n}"}}
       for n, (pred, gold) in enumerate([("yes", "yes"), ("no", "yes"), ("no", "no")])]
INSPECT = {  # an Inspect eval log in its JSON format, as inspect_ai.log.read_eval_log reads it (0.3)
    "version": 2, "status": "success", "plan": {"name": "plan", "steps": []},
    "eval": {"task": "tiny", "task_id": "t1", "created": "2026-01-01T00:00:00+00:00", "model": "mockllm/model",
             "dataset": {"name": "tiny", "samples": 3}, "config": {}},
    "results": {"total_samples": 3, "completed_samples": 3, "scores": [
        {"name": "match", "scorer": "match", "metrics": {"accuracy": {"name": "accuracy", "value": 2 / 3}}}]},
    "stats": {"started_at": "", "completed_at": ""},
    "samples": [{"id": f"q{n}", "epoch": 1, "input": f"Question {n}?", "target": gold, "choices": ["yes", "no"],
                 "messages": [], "output": {"model": "mockllm/model", "choices": [
                     {"message": {"role": "assistant", "content": reply}, "stop_reason": "stop"}]},
                 "scores": {"match": {"value": "C" if reply == gold else "I", "answer": reply}},
                 "metadata": {"scene": f"s{n}"}}
                for n, (reply, gold) in enumerate([("yes", "yes"), ("no", "yes"), ("no", "no")])]}

LOGS = {  # name -> (format, {file name: valid content}, the file mutated first, options)
    "lm-eval": ("lm-eval", {LM_SAMPLES: b"".join((LM_EVAL / LM_SAMPLES).read_bytes().splitlines(True)[:3]),
                            "results_2026-11-26T19-17-11.224587.json": json.dumps(LM_RESULTS).encode()},
                LM_SAMPLES, {}),
    "lmms-eval": ("lmms-eval", {"20260101_120000_samples_vsr_yesno.jsonl": _jsonl(LMMS),
                                "20260101_120000_results.json": json.dumps(LMMS_RESULTS).encode()},
                  "20260101_120000_samples_vsr_yesno.jsonl", {}),
    "vlmeval-tsv": ("vlmeval", {"M_MiniSpatial.tsv": _csv([VLM_HEADER, *VLM_ROWS], "\t")}, "M_MiniSpatial.tsv", {}),
    "vlmeval-csv": ("vlmeval", {"M_MiniSpatial_exact_matching_result.csv": _csv(
        [[*VLM_HEADER, "hit"], *[[*r, int(r[4] == r[5][-1])] for r in VLM_ROWS]])},
        "M_MiniSpatial_exact_matching_result.csv", {}),
    "plain-json": ("plain", {"paper.json": json.dumps({"preds": PLAIN}).encode()}, "paper.json",
                   {**PLAIN_MAP, "records": "preds"}),
    "plain-jsonl": ("plain", {"paper.jsonl": _jsonl(PLAIN)}, "paper.jsonl", PLAIN_MAP),
    "plain-csv": ("plain", {"paper.csv": _csv([["qid", "answer", "output", "img"],
                                               *[[r["qid"], r["answer"], r["output"], r["img"]] for r in PLAIN]])},
                  "paper.csv", {k: v for k, v in PLAIN_MAP.items() if k != "options"}),
    "eee": ("eee", {"x_samples.jsonl": _jsonl(EEE)}, "x_samples.jsonl", {"cluster": "img"}),
    "inspect": ("inspect", {"tiny.json": json.dumps(INSPECT).encode()}, "tiny.json", {"cluster": "scene"}),
}


def _write_log(name: str, folder: Path, contents: dict[str, bytes] | None = None) -> list[Path]:
    """The log's files written in ``folder`` (``contents`` replacing the valid ones); the files imported."""
    _, files, main, _ = LOGS[name]
    for file_name, content in {**files, **(contents or {})}.items():
        (folder / file_name).write_bytes(content)
    return [folder / main]


def _import(name: str, paths: list[Path], out: Path):
    from spatialprobe.interop.imported_run import import_logs

    return import_logs(LOGS[name][0], paths, out, LOGS[name][3])


@pytest.mark.parametrize("name", sorted(LOGS))
def test_each_valid_log_imports(name, tmp_path):
    (done,) = _import(name, _write_log(name, tmp_path), tmp_path / "runs")
    assert done[1]["accuracy"]["n"] == 3


@pytest.mark.parametrize("name", sorted(LOGS))
@FAST
@given(data=st.data())
def test_a_mutated_log_imports_or_is_refused_in_one_line_naming_the_file(name, tmp_path, data):
    import tempfile

    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    files = LOGS[name][1]
    damaged = data.draw(st.sampled_from(sorted(files)))
    content = files[damaged]
    for _ in range(data.draw(st.integers(1, 3))):
        content = _mutate(content, data.draw)
    paths = _write_log(name, folder, {damaged: content})
    try:
        _import(name, paths, folder / "runs")
    except SpatialprobeError as err:
        _one_line(err, *files)


def _eee_line(**changed) -> bytes:
    return _jsonl([{**EEE[0], **changed}])


FOUND = {  # what the property test above found, each a traceback before: (log, file, content, refusal)
    "lm-eval not UTF-8": ("lm-eval", LM_SAMPLES, b"\x80\n", r"line 1: is not UTF-8 text"),
    "lm-eval results not UTF-8": ("lm-eval", "results_2026-11-26T19-17-11.224587.json", b"\x80",
                                  r"results_.*\.json: is not UTF-8 text"),
    "lm-eval results nested deep": ("lm-eval", "results_2026-11-26T19-17-11.224587.json",
                                    b"[" * 5000 + b"]" * 5000, r"\.json: is not JSON this reads"),
    "lmms-eval nested deep": ("lmms-eval", "20260101_120000_samples_vsr_yesno.jsonl",
                              b"[" * 5000 + b"]" * 5000 + b"\n", r"line 1: is not JSON this reads"),
    "lmms-eval a huge field name": ("lmms-eval", "20260101_120000_samples_vsr_yesno.jsonl",
                                    _jsonl([{**LMMS[0], "y" * 5000: 1}]), r"line 1: holds 2 metric fields"),
    "vlmeval tsv not UTF-8": ("vlmeval-tsv", "M_MiniSpatial.tsv", b"\x80", r"is not UTF-8 text"),
    "vlmeval csv not UTF-8": ("vlmeval-csv", "M_MiniSpatial_exact_matching_result.csv", b"index\n\x80\n",
                              r"is not UTF-8 text"),
    "plain csv not UTF-8": ("plain-csv", "paper.csv", b"\x80", r"paper\.csv: is not UTF-8 text"),
    "plain json nested deep": ("plain-json", "paper.json", b"[" * 5000 + b"]" * 5000, r"is not JSON this reads"),
    "plain jsonl nested deep": ("plain-jsonl", "paper.jsonl", b"[" * 5000 + b"]" * 5000, r"line 1: is not JSON"),
    "eee output not an object": ("eee", "x_samples.jsonl", _eee_line(output=True), r"field 'output': must be an"),
    "eee output.raw not a list": ("eee", "x_samples.jsonl", _eee_line(output={"raw": {"a": 1}}),
                                  r"field 'output.raw': must be a list"),
    "eee attribution not a list": ("eee", "x_samples.jsonl", _eee_line(answer_attribution={"": 0}),
                                   r"field 'answer_attribution': must be a list of objects"),
    "eee attribution of strings": ("eee", "x_samples.jsonl", _eee_line(answer_attribution=["x"]),
                                   r"field 'answer_attribution': must be a list of objects"),
    "eee metadata not an object": ("eee", "x_samples.jsonl", _eee_line(metadata="[[[["),
                                   r"field 'metadata': must be an object"),
    "lmms-eval results configs a boolean": ("lmms-eval", "20260101_120000_results.json",
                                            json.dumps({**LMMS_RESULTS, "configs": True}).encode(),
                                            r"_results\.json, field 'configs': is not a JSON object"),
    "lm-eval results of a task a list": ("lm-eval", "results_2026-11-26T19-17-11.224587.json",
                                         json.dumps({**LM_RESULTS, "results": {"spatial_tiny": [1]}}).encode(),
                                         r"field 'results.spatial_tiny': is not a JSON object"),
    "lm-eval reported accuracy a word": ("lm-eval", "results_2026-11-26T19-17-11.224587.json", json.dumps(
        {**LM_RESULTS, "results": {"spatial_tiny": {"acc,none": "high"}}}).encode(),
        r"results_.*\.json, field 'results.spatial_tiny.acc,none': must be a number"),
    "plain a huge id repeated": ("plain-jsonl", "paper.jsonl", _jsonl([{**PLAIN[0], "qid": "[" * 5000}] * 2),
                                 r"field 'id': repeats the item id '\[\[\["),
    "plain options a string nested deep": ("plain-jsonl", "paper.jsonl", _jsonl([{**PLAIN[0], "options": "[" * 5000}]),
                                           r"line 1, field 'options': must be a list of at least two"),
    "lmms-eval empty": ("lmms-eval", "20260101_120000_samples_vsr_yesno.jsonl", b"", r"\.jsonl: holds no items"),
    "plain csv empty": ("plain-csv", "paper.csv", b"", r"paper\.csv: holds no items"),
}


@pytest.mark.parametrize("case", sorted(FOUND))
def test_what_the_property_test_found_is_refused_in_one_line(case, tmp_path):
    name, file_name, content, refusal = FOUND[case]
    with pytest.raises(SpatialprobeError, match=refusal) as err:
        _import(name, _write_log(name, tmp_path, {file_name: content}), tmp_path / "runs")
    _one_line(err.value, file_name)


def test_a_model_named_in_thousands_of_characters_is_imported_to_a_folder_name_the_os_takes(tmp_path):
    # found by the property test: the run folder's name (model__benchmark) passed NAME_MAX (255)
    paths = _write_log("eee", tmp_path, {"x_samples.jsonl": _jsonl([{**r, "evaluation_name": "x" * 5000}
                                                                   for r in EEE])})
    ((folder, summary),) = _import("eee", paths, tmp_path / "runs")
    assert summary["accuracy"]["n"] == 3 and len(folder.name) == len("org_m__") + 100


# ---- spatialprobe import FORMAT ... through the command line --------------------------------------

IMPORT_CLI = {"lm-eval": [], "vlmeval-tsv": [], "plain-csv": ["--id", "qid", "--prediction", "output", "--gold",
                                                               "answer"], "eee": []}


@pytest.mark.parametrize("name", sorted(IMPORT_CLI))
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mutated_log_through_the_cli_exits_0_or_2_without_a_traceback(name, tmp_path, data):
    import tempfile

    from typer.testing import CliRunner

    from spatialprobe.cli import app

    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    files, main = LOGS[name][1], LOGS[name][2]
    paths = _write_log(name, folder, {main: _mutate(files[main], data.draw)})
    result = CliRunner().invoke(app, ["import", LOGS[name][0], *map(str, paths), *IMPORT_CLI[name],
                                      "--out", str(folder / "runs")])
    assert result.exit_code in (0, 2), (result.output, repr(result.exception))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert result.stderr.startswith("Error: ") and len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.fixture(scope="module")
def xlsx() -> bytes:
    """VLMEvalKit's prediction file as it writes one: an .xlsx workbook."""
    import io

    openpyxl = pytest.importorskip("openpyxl")
    book, out = openpyxl.Workbook(), io.BytesIO()
    for row in [VLM_HEADER, *VLM_ROWS]:
        book.active.append(row)
    book.save(out)
    return out.getvalue()


@FAST
@given(data=st.data())
def test_a_damaged_vlmeval_workbook_imports_or_is_refused_in_one_line(xlsx, tmp_path, data):
    import tempfile

    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    path = folder / "M_MiniSpatial.xlsx"
    path.write_bytes(_mutate(xlsx, data.draw))
    try:
        _import("vlmeval-tsv", [path], folder / "runs")
    except SpatialprobeError as err:
        _one_line(err, path.name)


def test_a_truncated_vlmeval_workbook_is_refused_in_one_line(xlsx, tmp_path):
    # found by the test above: openpyxl's zipfile.BadZipFile escaped
    path = tmp_path / "M_MiniSpatial.xlsx"
    path.write_bytes(xlsx[:len(xlsx) // 2])
    with pytest.raises(SpatialprobeError, match=r"M_MiniSpatial\.xlsx: is not a readable \.xlsx workbook") as err:
        _import("vlmeval-tsv", [path], tmp_path / "runs")
    _one_line(err.value, path.name)
