"""Every reader of a user's file, fed random and mutated files: a valid load or one sentence.

Each reader starts from a valid example file; hypothesis mutates it (lines dropped, repeated or
cut, fields given other types, a byte-order mark, deep nesting, random bytes, a huge string) or
replaces it with random bytes. The outcome must be a load or a :class:`SpatialprobeError` whose
message is one line; any other exception is a traceback a user would see. A few cases then go
through the command line, where the outcome must be exit 0 or 2 and no traceback.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from spatialprobe.benchmarks.spatialmqa import load_spatialmqa_file
from spatialprobe.benchmarks.vsr import load_vsr_file
from spatialprobe.cli import app
from spatialprobe.errors import SpatialprobeError
from spatialprobe.judging.annotation_page import CANT_TELL
from spatialprobe.judging.human import FORMAT, check_answered, page_items, read_answers, usable_answers
from spatialprobe.judging.visor_metrics import released_records
from spatialprobe.prompts.templates import builtin, load_candidates
from spatialprobe.synthesis.prompt_sets import load_prompts
from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.sr2d import build_sr2d, load_sr2d
from spatialprobe.tasks.yes_no import build_qa, load_qa, to_qa_records
from spatialprobe.validate import read_run_config

FAST = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SIZE = task_data.load("size")
SR2D = build_sr2d()[:6]
PAGE = "size-0123456789ab"
ITEMS = [{"id": f"size-{n:04d}#0"} for n in range(4)]


def _jsonl(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _csv(rows, delimiter=",") -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    writer.writerows(rows)
    return out.getvalue().encode()


def _release() -> bytes:
    return _jsonl(task_data.to_release_records(SIZE)[:5])


def _pairs(delimiter: str) -> bytes:
    return _csv([["obj_a", "obj_b", "label"]] + [[i.obj_a, i.obj_b, int(i.label == "larger")]
                                                  for i in SIZE.instances[:5]], delimiter)


EXAMPLES = {  # name -> (file name, valid content)
    "release": ("data.jsonl", _release()),
    "release-posrel": ("posrel.jsonl", _jsonl(task_data.to_release_records(task_data.load("posrel"))[:5])),
    "pairs-csv": ("pairs.csv", _pairs(",")),
    "pairs-tsv": ("pairs.tsv", _pairs("\t")),
    "candidates": ("candidates.json", json.dumps(builtin("size").to_dict()).encode()),
    "prompts-jsonl": ("prompts.jsonl", _jsonl([{"id": f"p{n}", "text": i.text, **i.to_dict()}
                                               for n, i in enumerate(SIZE.instances[:4])])),
    "prompts-text": ("prompts.txt", b"a dog to the left of a cat\nAn ant and a bird.\nA man drives the car.\n"),
    # the benchmarks' released prompt files (spatialprobe/synthesis/benchmark_prompts.py), told by name and content
    "prompts-t2i-compbench": ("spatial_val.txt", b"a dog on the left of a cat\r\na bird on top of a chair\r\n"
                                                  b"a man next to a bus"),
    "prompts-t2i-compbench-3d": ("3d_spatial_val.txt", b"a cup in front of a lamp\r\na bag hidden by a desk\r\n"
                                                        b"a cow behind a tree"),
    "prompts-geneval": ("evaluation_metadata.jsonl", _jsonl([
        {"tag": "position", "include": [{"class": "cat", "count": 1},
                                        {"class": "dog", "count": 1, "position": ["left of", 0]}],
         "prompt": "a photo of a dog left of a cat"},
        {"tag": "counting", "include": [{"class": "orange", "count": 3}], "prompt": "a photo of three oranges"},
        {"tag": "position", "include": [{"class": "kite", "count": 1},
                                        {"class": "bench", "count": 1, "position": ["above", 0]}],
         "prompt": "a photo of a bench above a kite"}])),
    "qa": ("qa.jsonl", _jsonl(to_qa_records(build_qa(SIZE))[:6])),
    "vsr": ("test.jsonl", _jsonl([{"image": f"{n:012d}.jpg", "caption": "The cat is left of the dog.",
                                   "label": n % 2, "relation": "left of", "annotator_id": 3,
                                   "vote_true_validator_id": "[2]", "vote_false_validator_id": []}
                                  for n in range(4)])),
    "spatialmqa": ("test.jsonl", _jsonl([{"image": "a.jpg", "question": "Where is the cat relative to the dog?",
                                          "options": ["left of", "right of"], "answer": "left of"}] * 3)),
    "sr2d": ("sr2d.json", json.dumps(SR2D).encode()),
    "detections": ("detections.json", json.dumps(
        {f"{r['unique_id']}_0": {"classes": [r["obj_1_attributes"][0], r["obj_2_attributes"][0]],
                                 "centroid": [[1, 1], [5, 5]], "sra": 1} for r in SR2D}).encode()),
    "answers": ("alice.json", json.dumps({"format": FORMAT, "version": 1, "page_id": PAGE, "annotator": "alice",
                                          "items": [i["id"] for i in ITEMS],
                                          "answers": {i["id"]: "larger" for i in ITEMS}}).encode()),
    "run-config": ("config.json", json.dumps({"kind": "probe", "identity": "0" * 64, "settings": {
        "task": "size", "folds": 5, "seed": 0, "dataset": {"source": "builtin", "name": "size"}},
        "runtime": {"device": "cpu", "batch_size": 8}}).encode()),
}


def _read(name: str, path: Path, tmp: Path):
    """The reader (or readers) a command runs on a file of this kind."""
    if name.startswith("release"):
        return task_data.load_release(path, "posrel" if name.endswith("posrel") else "size")
    if name.startswith("pairs"):
        return task_data.load_pairs(path, "size")
    if name == "candidates":
        return load_candidates(path, "size")
    if name.startswith("prompts"):
        return load_prompts(str(path))
    if name == "qa":
        return load_qa(path)
    if name == "vsr":
        return load_vsr_file(path)
    if name == "spatialmqa":
        return load_spatialmqa_file(path)
    if name == "sr2d":
        return load_sr2d(path)
    if name == "detections":
        prompts = tmp / "prompts.json"
        prompts.write_text(json.dumps(SR2D))
        return released_records(path, load_sr2d(prompts), prompts)
    if name == "answers":
        answers = read_answers(path, PAGE)
        items = page_items(path, ITEMS)
        kept, _ = usable_answers(answers["answers"], items, ["larger", "smaller", CANT_TELL])
        check_answered(path, len(kept), len(items), 0.0)
        return kept
    return read_run_config(path)


# ---- mutations --------------------------------------------------------------------------------

DEEP = "[" * 5000 + "]" * 5000
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**20), st.floats(allow_nan=False), st.text(max_size=8),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just("x" * 5000), st.just([]), st.just({}), st.just(DEEP), st.just("Larger"), st.just(" "))


def _retype(value, draw):
    """``value`` with one field, item or the whole of it replaced by another JSON value."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        if draw(st.integers(0, 3)) == 0:
            return {k: v for k, v in value.items() if k != key}
        return {**value, key: _retype(value[key], draw)}
    if isinstance(value, list) and value and draw(st.booleans()):
        index = draw(st.integers(0, len(value) - 1))
        return [*value[:index], _retype(value[index], draw), *value[index + 1:]]
    return draw(VALUES)


def _mutate(content: bytes, draw) -> bytes:
    lines = content.splitlines(keepends=True)
    how = draw(st.sampled_from(["drop", "repeat", "truncate", "retype", "bom", "bytes", "deep",
                                "huge", "random", "empty", "swap"]))
    if how == "drop" and lines:
        del lines[draw(st.integers(0, len(lines) - 1))]
    elif how == "repeat" and lines:
        index = draw(st.integers(0, len(lines) - 1))
        lines.insert(index, lines[index])
    elif how == "swap" and len(lines) > 1:
        lines[0], lines[-1] = lines[-1], lines[0]
    elif how == "truncate":
        return content[:draw(st.integers(0, len(content)))]
    elif how == "retype":
        return _retyped(content, lines, draw)
    elif how == "bom":
        return b"\xef\xbb\xbf" + content
    elif how == "bytes":
        at = draw(st.integers(0, len(content)))
        return content[:at] + draw(st.binary(min_size=1, max_size=8)) + content[at:]
    elif how == "deep":
        at = draw(st.integers(0, len(lines)))
        lines.insert(at, (DEEP + "\n").encode())
    elif how == "huge":
        return content.replace(b'"', b'"' + b"y" * 5000, 1)
    elif how == "random":
        return draw(st.binary(max_size=200))
    elif how == "empty":
        return b""
    return b"".join(lines)


def _retyped(content: bytes, lines: list[bytes], draw) -> bytes:
    try:  # a whole JSON document
        return json.dumps(_retype(json.loads(content), draw)).encode()
    except (ValueError, RecursionError):
        pass
    index = draw(st.integers(0, max(len(lines) - 1, 0)))
    if not lines:
        return content
    try:  # one JSON line
        lines[index] = (json.dumps(_retype(json.loads(lines[index]), draw)) + "\n").encode()
    except (ValueError, RecursionError):  # a CSV or text line: a field made something else
        lines[index] = draw(st.sampled_from([b'"unclosed,quote\n', b",,\n", b"a,a,1\n", b"x\ty\tz\tw\n",
                                             b"ant,bird,maybe\n", b"ant,bird,0,extra\n"]))
    return b"".join(lines)


def _outcome(name: str, content: bytes, tmp: Path) -> None:
    file_name = EXAMPLES[name][0]
    path = tmp / file_name
    path.write_bytes(content)
    try:
        _read(name, path, tmp)
    except SpatialprobeError as err:
        message = str(err)
        assert message and "\n" not in message, (name, message)
        assert len(message) < 600, (name, message)  # one sentence, not a dump of the file


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_valid_example_loads(name, tmp_path):
    path = tmp_path / EXAMPLES[name][0]
    path.write_bytes(EXAMPLES[name][1])
    assert _read(name, path, tmp_path)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
@FAST
@given(data=st.data())
def test_mutated_file_loads_or_is_refused_in_one_sentence(name, tmp_path, data):
    content = EXAMPLES[name][1]
    for _ in range(data.draw(st.integers(1, 3))):
        content = _mutate(content, data.draw)
    _outcome(name, content, tmp_path)


# ---- through the command line -----------------------------------------------------------------

CLI = {  # name -> argv with {path}
    "release": "datasets validate {path} --task size --folds 2",
    "pairs-csv": "datasets validate {path} --pairs --folds 2",
    "qa": "datasets validate {path} --kind qa",
    "candidates": "datasets validate {path} --kind candidates --task size",
    "prompts-jsonl": "datasets validate {path} --kind prompts",
}


@pytest.mark.parametrize("name", sorted(CLI))
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_file_through_the_cli_exits_0_or_2_without_a_traceback(name, tmp_path, data):
    path = tmp_path / EXAMPLES[name][0]
    path.write_bytes(_mutate(EXAMPLES[name][1], data.draw))
    result = CliRunner().invoke(app, CLI[name].format(path=path).split())
    assert result.exit_code in (0, 2), (result.output, repr(result.exception))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert result.stderr.startswith("Error: ") and len(result.stderr.strip().splitlines()) == 1, result.stderr


# ---- the readers its items changed ------------------------------------------------------

def _image_run(folder: Path, metas: list) -> Path:
    """An image run written by hand (as ``synthesize`` records one) whose prompts carry ``metas``."""
    from PIL import Image

    from spatialprobe.imagestore import ImageStore, PromptItem

    store = ImageStore(folder)
    store.run.start({"kind": "synthesize", "prompts": "size@test", "task": "size"})
    store.add_prompts(PromptItem(inst.id, inst.text, meta) for inst, meta in zip(SIZE.instances, metas, strict=False))
    for inst in SIZE.instances[:len(metas)]:
        store.save_image(Image.new("RGB", (8, 8)), inst.id, 0, seed=0, backend="test", model="blank", settings={})
    return folder


@FAST
@given(data=st.data())
def test_an_image_runs_prompt_metadata_of_any_shape_is_matched_or_refused_in_one_sentence(tmp_path, data):
    # probe --image RUN reads each image's prompt metadata against its question
    import tempfile

    from spatialprobe.benchmarks.commonsense import task_source
    from spatialprobe.records import Dataset
    from spatialprobe.tasks.origin import builtin_source

    two = Dataset(SIZE.name, SIZE.version, SIZE.task, SIZE.labels, tuple(SIZE.instances[:2]))
    metas = [i.to_dict() for i in two.instances]
    metas[data.draw(st.integers(0, 1))] = _retype(metas[0], data.draw)
    run = _image_run(Path(tempfile.mkdtemp(dir=tmp_path)), metas)
    try:
        source, _ = task_source(two, builtin_source("size"), image=str(run), folds=2)
    except SpatialprobeError as err:
        assert "\n" not in str(err) and len(str(err)) < 600 and "drawn for another instance" in str(err)
    else:  # accepted: every image was drawn for its own question's instance
        assert [item.image is not None for item in source.items] == [True, True]


@FAST
@given(data=st.data())
def test_report_reads_a_run_config_of_any_shape_or_skips_it_in_one_sentence(tmp_path, data):
    # report labels rows by every setting, the model adapter's options too
    import tempfile

    from spatialprobe.reports.runs import labels, load_runs
    from spatialprobe.reports.tables import comparison_table
    from spatialprobe.runner.summary import Metric, build_summary

    folders = []
    for normalize in ("sum", "char"):
        folder = Path(tempfile.mkdtemp(dir=tmp_path))
        summary = build_summary(kind="ask", task="size", model="m", dataset="d@1", seed=0,
                                metrics={"accuracy": Metric(50.0, None, 4)}, details={}, identity="x",
                                provenance={"created": "2026-01-01T00:00:00"})
        (folder / "summary.json").write_text(json.dumps(summary))
        config = {"kind": "ask", "identity": "x", "runtime": {}, "settings": {
            "model": {"name": "hf-mllm", "args": {"model": "/m", "normalize": normalize}}, "protocol": "likelihood"}}
        (folder / "config.json").write_bytes(_mutate(json.dumps(config).encode(), data.draw)
                                             if normalize == "char" else json.dumps(config).encode())
        folders.append(folder)
    found, skipped = load_runs(folders)
    assert all("\n" not in sentence for sentence in skipped) and len(found) + len(skipped) == 2
    table = comparison_table(found, labels(found))
    assert table.startswith("| run | ask size acc |") and table.count("\n| m") == len(found)
