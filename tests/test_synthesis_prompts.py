"""Where prompts come from, and how bad prompt files are reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spatialprobe.synthesis import load_prompts
from spatialprobe.tasks.data import DataError


def test_text_file_skips_blanks_and_drops_duplicates(tmp_path):
    path = tmp_path / "positional.txt"
    path.write_text("A man washes the car.\n\n  A man drives the car.  \nA man washes the car.\n"
                    "\n", encoding="utf-8")
    prompts = load_prompts(str(path))
    assert [(p.prompt_id, p.prompt) for p in prompts.items] == [
        ("line-0001", "A man washes the car."), ("line-0003", "A man drives the car.")]
    assert prompts.notes == ("skipped 2 blank line(s): 2, 5",
                             "line 4 repeats line 1 ('A man washes the car.'); dropped")
    assert prompts.items[1].meta == {"line": 3, "template": "none"}


def test_non_utf8_line_is_named(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("A cat.\nA dog.\nA caf\u00e9 and a man.\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin1\.txt, line 3: not UTF-8"):
        load_prompts(str(path))


@pytest.mark.parametrize("content", [b"", b"\n  \n\n"])
def test_empty_file_is_an_error(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(DataError, match="holds no prompts"):
        load_prompts(str(path))


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_prompts(str(tmp_path / "nope.txt"))


def test_jsonl_prompts_keep_their_metadata(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "p1", "text": "An ant and a bird.", "obj_a": "ant"}) + "\n"
                    + json.dumps({"id": "p2", "text": "A cup."}) + "\n", encoding="utf-8")
    prompts = load_prompts(str(path))
    assert [p.prompt_id for p in prompts.items] == ["p1", "p2"]
    assert prompts.items[0].meta == {"obj_a": "ant"}


def test_jsonl_errors_name_line_and_field(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "p1", "text": "A."}\n{"id": "p1", "text": "B."}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2, field 'id': repeats the id 'p1' of line 1"):
        load_prompts(str(path))
    path.write_text('{"id": "p1", "text": "A."}\n{"id": "p2"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2, field 'text'"):
        load_prompts(str(path))


def test_builtin_dataset_stores_the_instance():
    prompts = load_prompts("size")
    assert len(prompts.items) == 500 and prompts.task == "size"
    first = prompts.items[0]
    assert first.prompt_id == first.meta["id"] and first.prompt == first.meta["text"].strip()
    assert {"obj_a", "obj_b", "label"} <= set(first.meta)
    assert prompts.source.startswith("size@")


def test_jsonl_ids_that_collide_as_file_names_are_refused(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "a/b", "text": "A."}\n{"id": "a_b", "text": "B."}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2, field 'id'.*same image file name 'a_b'"):
        load_prompts(str(path))


def test_cli_reports_bad_prompt_files_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"A cat.\n\xff\xfe oops\n")
    result = CliRunner().invoke(app, ["synthesize", "--prompts", str(bad), "--vqgan", "x",
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "bad.txt, line 2: not UTF-8" in result.output
    result = CliRunner().invoke(app, ["synthesize", "--prompts", str(bad), "--out",
                                      str(tmp_path / "run")])
    assert result.exit_code == 2 and "needs --vqgan" in result.output


def test_bare_ray_flag_means_a_local_cluster():
    from spatialprobe.commands.scale_options import bare_ray_means_local

    assert bare_ray_means_local(["--ray", "--out", "r"]) == ["--ray", "local", "--out", "r"]
    assert bare_ray_means_local(["--out", "r", "--ray"]) == ["--out", "r", "--ray", "local"]
    assert bare_ray_means_local(["--ray", "10.0.0.1:6379"]) == ["--ray", "10.0.0.1:6379"]


SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.mark.skipif(not (SHARED / "data" / "spatial-commonsense").is_dir(),
                    reason="../shared/data/spatial-commonsense is absent")
def test_release_file_without_ids_reads_as_a_dataset():
    prompts = load_prompts(str(SHARED / "data" / "spatial-commonsense" / "posrel.jsonl"))
    assert len(prompts.items) == 224 and prompts.task == "posrel"
    assert prompts.items[0].meta["label"] in ("above", "below", "inside", "beside")
    assert prompts.items[0].prompt == prompts.items[0].prompt.strip()
