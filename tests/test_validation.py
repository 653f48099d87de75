"""Every input validated against its task before anything runs.

Each case is a known answer: exit code 2, the exact sentence naming file, line and field, and
nothing written; where ``spatialprobe datasets validate`` reads the same kind of file, it gives
the same sentence as the command.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_helpers import instances, scene
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.files import write_jsonl
from spatialprobe.imagestore import ImageStore, PromptItem
from spatialprobe.judging.annotation_page import annotation_items, page_id
from spatialprobe.judging.human import FORMAT
from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.yes_no import build_qa, to_qa_records

SIZE_RECORDS = task_data.to_release_records(task_data.load("size"))[:4]  # "Is an ant larger than ...?"
SIZES = ["ant", "cup", "dog", "house"]  # smallest first


def invoke(*args) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


def refused(*args) -> str:
    """The one-sentence refusal of a command: exit 2, ``Error: ...`` on one line; returns it."""
    code, _, err = invoke(*args)
    assert code == 2, err
    assert err.startswith("Error: ") and err.count("\n") == 1, err
    return err.strip()


def probe_refuses(tmp_path: Path, *options) -> str:
    out = tmp_path / "run"
    message = refused("probe", *options, "--model", "dummy", "--out", out)
    assert not out.exists()
    return message


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def pairs_csv(path: Path, rows: list[tuple[str, str, int]], header: str = "obj_a,obj_b,label") -> Path:
    return write(path, header + "\n" + "".join(f"{a},{b},{label}\n" for a, b, label in rows))


def all_pairs(path: Path) -> Path:
    """Every ordered pair of four objects: 12 rows, label 1 when the first is larger."""
    return pairs_csv(path, [(a, b, int(SIZES.index(a) > SIZES.index(b))) for a in SIZES for b in SIZES if a != b])


# ---- labels are the task's ----------------------------------------------------------------------

@pytest.mark.parametrize("task,expected", [
    ("posrel", "'Is an ant larger than a bird?' is not a posrel question (its records have no question), "
               "so its label 0 is not a posrel label; is this a size file?"),
    ("height", "'Is an ant larger than a bird?' is not a height question ('taller'), so its label 0 is "
               "not a height label; is this a size file?"),
])
def test_a_size_file_is_refused_as_another_task_naming_line_and_label(tmp_path, task, expected):
    data = tmp_path / "size.jsonl"
    write_jsonl(data, SIZE_RECORDS)
    sentence = f"Error: {data}, line 1, field 'question': {expected}"
    assert probe_refuses(tmp_path, task, "--data", data) == sentence
    assert refused("datasets", "validate", data, "--task", task) == sentence
    assert task_data.load_release(data).task == "size"  # what the file is, guessed from its question


def test_a_posrel_file_is_refused_as_a_comparison_at_its_first_line(tmp_path):
    data = tmp_path / "posrel.jsonl"
    write_jsonl(data, task_data.to_release_records(task_data.load("posrel"))[:3])
    sentence = (f"Error: {data}, line 1, field 'text': 'A man drives the bus.' is a posrel scenario, not a size "
                "comparison, so its label 0 is not a size label; is this a posrel file?")
    assert probe_refuses(tmp_path, "size", "--data", data) == sentence
    assert refused("datasets", "validate", data, "--task", "size") == sentence


def test_unknown_task_is_one_sentence(tmp_path):
    data = write_jsonl(tmp_path / "size.jsonl", SIZE_RECORDS) or tmp_path / "size.jsonl"
    assert refused("datasets", "validate", data, "--task", "banana") == (
        "Error: --task 'banana' is not a task; choose from size, height, posrel, posrel2d, posrel3d, weight.")


def test_candidates_keyed_by_other_labels_are_refused(tmp_path):
    path = tmp_path / "cands.json"
    path.write_text(json.dumps({"task": "size", "templates": ["[A] is [MASK] than [B]."],
                                "answers": {"larger": ["larger"], "Smaller": ["smaller"]}}))
    sentence = f"Error: {path}, field 'answers.'Smaller'': not a size label (larger, smaller)"
    assert probe_refuses(tmp_path, "size", "--candidates", path) == sentence
    assert refused("datasets", "validate", path, "--kind", "candidates", "--task", "size") == sentence


def test_prompt_file_with_an_integer_label_on_a_size_prompt_is_refused(tmp_path):
    meta = task_data.load("size").instances[0].to_dict()
    path = tmp_path / "prompts.jsonl"
    write_jsonl(path, [{"id": "p0", **meta}, {"id": "p1", **{**meta, "label": 1}}])
    sentence = f"Error: {path.resolve()}, line 2, field 'label': 1 is not a size label (larger, smaller)"
    out = tmp_path / "images"
    assert refused("synthesize", "--prompts", path, "--backend", "shapes", "--out", out) == sentence
    assert not out.exists()
    assert refused("datasets", "validate", path, "--kind", "prompts") == sentence


def test_sr2d_prompt_without_attributes_is_refused(tmp_path):
    path = tmp_path / "sr2d.jsonl"
    write_jsonl(path, [{"id": "0", "text": "a dog to the left of a cat", "unique_id": 0, "num_objects": 2,
                        "obj_1_attributes": [], "obj_2_attributes": ["cat"], "rel_type": "to the left of"}])
    assert refused("datasets", "validate", path, "--kind", "prompts") == (
        f"Error: {path.resolve()}, line 1, field 'obj_1_attributes': expected a non-empty list of names, got []")


# ---- ids unique, field types and sizes -----------------------------------------------------------

def _qa(tmp_path: Path, change) -> Path:
    records = to_qa_records(build_qa(task_data.load("size")))[:4]
    change(records)
    path = tmp_path / "qa.jsonl"
    write_jsonl(path, records)
    return path


@pytest.mark.parametrize("change,where,message", [
    (lambda r: r[3].update(id=r[1]["id"]), "line 4, field 'id'", "repeats 'size-0000-q1' of line 2"),
    (lambda r: r[0].update(id=7), "line 1, field 'id'", "expected str, got 7"),
    (lambda r: r[1].update(id=["a"]), "line 2, field 'id'", "expected str, got ['a']"),
    (lambda r: r[2].update(id="x" * 5000), "line 3, field 'id'", "5,000 characters long; at most 200 allowed"),
    (lambda r: r[0].update(relation=3), "line 1, field 'relation'", "expected str, got 3"),
    (lambda r: r[0].update(relation="inside"), "line 1, field 'relation'",
     "'inside' is not a size relation (larger, smaller)"),
])
def test_qa_file_fields_are_checked_before_any_model_loads(tmp_path, change, where, message):
    path = _qa(tmp_path, change)
    sentence = f"Error: {path}, {where}: {message}"
    out = tmp_path / "out"
    assert refused("qa", "text", "--model", "none", "--data", path, "--out", out) == sentence
    assert not out.exists()
    assert refused("datasets", "validate", path, "--kind", "qa") == sentence


def test_release_object_that_is_an_object_is_refused(tmp_path):
    data = tmp_path / "size.jsonl"
    write_jsonl(data, [SIZE_RECORDS[0], {**SIZE_RECORDS[1], "obj_a": {"name": "ant"}}])
    sentence = f"Error: {data}, line 2, field 'obj_a': expected str, got {{'name': 'ant'}}"
    assert probe_refuses(tmp_path, "size", "--data", data) == sentence
    assert refused("datasets", "validate", data) == sentence


def test_deep_nesting_is_refused_naming_the_file_and_line(tmp_path):
    data = write(tmp_path / "size.jsonl", json.dumps(SIZE_RECORDS[0]) + "\n" + "[" * 100000 + "]" * 100000 + "\n")
    sentence = f"Error: {data}, line 2: lists or objects nested deeper than 32 levels"
    assert probe_refuses(tmp_path, "size", "--data", data) == sentence
    assert refused("datasets", "validate", data) == sentence
    cands = write(tmp_path / "cands.json", '{"task": "size", "templates": ' + "[" * 40 + "]" * 40 + "}")
    assert probe_refuses(tmp_path, "size", "--candidates", cands) == (
        f"Error: {cands}: lists or objects nested deeper than 32 levels")


# ---- pairs ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("rows,message", [
    ([("ant", "cup", 0), ("dog", "dog", 1)], "line 3: compares 'dog' with itself"),
    ([("ant", "cup", 0), ("dog", "house", 0), ("ant", "cup", 0)],
     "line 4: repeats the pair of line 2 (pass --allow-duplicates to keep repeats)"),
    ([("ant", "cup", 0), ("dog", "house", 0), ("ant", "cup", 1)],
     "line 4, field 'label': contradicts line 2 ('ant' and 'cup' compared both ways)"),
    ([("ant", "cup", 0), ("dog", "house", 0), ("cup", "ant", 0)],
     "line 4, field 'label': contradicts line 2 ('cup' and 'ant' compared both ways)"),
])
def test_pairs_with_self_repeated_or_contradicting_rows_are_refused(tmp_path, rows, message):
    path = pairs_csv(tmp_path / "pairs.csv", rows)
    sentence = f"Error: {path}, {message}"
    assert probe_refuses(tmp_path, "size", "--pairs", path) == sentence
    assert refused("datasets", "validate", path, "--pairs") == sentence


def test_allow_duplicates_keeps_repeats_and_counts_them(tmp_path):
    path = pairs_csv(tmp_path / "pairs.csv", [(a, b, label) for a, b, label in
                                              [("ant", "cup", 0), ("dog", "house", 0), ("ant", "cup", 0)]])
    code, out, err = invoke("datasets", "validate", path, "--pairs", "--allow-duplicates", "--folds", "2")
    assert code == 0, err
    assert err == "Warning: pairs.csv: 1 repeated pair(s) kept (--allow-duplicates)\n"
    assert out.startswith(f"{path}: 3 size instances")
    assert refused("datasets", "validate", tmp_path / "pairs.csv", "--allow-duplicates") == (
        "Error: --allow-duplicates applies to a --pairs file; without --pairs it does not apply.")


def test_excel_csv_with_a_byte_order_mark_is_read(tmp_path):
    plain = all_pairs(tmp_path / "plain.csv")
    excel = write(tmp_path / "excel.csv", b"\xef\xbb\xbf" + plain.read_bytes())
    code, out, err = invoke("datasets", "validate", excel, "--pairs", "--folds", "2")
    assert code == 0, err
    assert out.splitlines()[1:] == ["labels: larger 6, smaller 6", "4 objects; 2 folds, dev/test sizes: 2/2, 2/2"]


def test_json_files_with_a_byte_order_mark_are_read(tmp_path):
    from spatialprobe.prompts.templates import builtin

    cands = write(tmp_path / "cands.json", b"\xef\xbb\xbf" + json.dumps(builtin("size").to_dict()).encode())
    code, out, err = invoke("datasets", "validate", cands, "--kind", "candidates", "--task", "size")
    assert code == 0, err
    assert out == f"{cands}: 10 templates, 10 answer sets for size\n"
    lines = "".join(json.dumps(r) + "\n" for r in SIZE_RECORDS)
    data = write(tmp_path / "size.jsonl", b"\xef\xbb\xbf" + lines.encode())
    assert len(task_data.load_release(data)) == 4


def test_unbalanced_quote_is_reported_at_its_line(tmp_path):
    rows = "".join(f"{a},{b},0\n" for a, b in [("ant", "cup"), ("ant", "dog"), ("cup", "dog")])
    path = write(tmp_path / "pairs.csv", "obj_a,obj_b,label\n" + rows + '"dog,house,0\n'
                 + "".join(f"x{n},y{n},0\n" for n in range(300)))
    sentence = f"Error: {path}, line 5, field 'obj_a': a quoted value runs from here to line 305: is a quote left open?"
    assert probe_refuses(tmp_path, "size", "--pairs", path) == sentence
    assert refused("datasets", "validate", path, "--pairs") == sentence


# ---- folds ---------------------------------------------------------------------------------------

def test_two_folds_say_how_many_pairs_are_never_tested(tmp_path):
    path = all_pairs(tmp_path / "pairs.csv")
    code, _, err = invoke("datasets", "validate", path, "--pairs", "--folds", "2")
    assert code == 0
    assert err == ("Warning: 8 of 12 pairs of pairs.csv are never tested with --folds 2 (their objects fall "
                   "in different folds; more folds test them)\n")


@pytest.mark.parametrize("folds,message", [
    (3, "--folds 3 leaves fold(s) 1, 2 of pairs.csv without dev or test instances; use --folds 2 or fewer."),
    (5, "--folds 5 is more than the 4 objects of pairs.csv: each object-disjoint fold needs at least one; "
        "use --folds 2 or fewer."),
])
def test_folds_that_leave_a_fold_without_tests_are_refused_with_advice_that_works(tmp_path, folds, message):
    path = all_pairs(tmp_path / "pairs.csv")
    assert probe_refuses(tmp_path, "size", "--pairs", path, "--folds", folds) == f"Error: {message}"
    assert refused("datasets", "validate", path, "--pairs", "--folds", folds) == f"Error: {message}"


def test_folds_that_never_work_say_so_instead_of_use_folds_1(tmp_path):
    path = pairs_csv(tmp_path / "pairs.csv", [("ant", "cup", 0), ("cup", "ant", 1)])
    assert refused("datasets", "validate", path, "--pairs", "--folds", "2") == (
        "Error: --folds 2 leaves fold(s) 0, 1 of pairs.csv without dev or test instances; no number of folds "
        "works: its 2 objects are too few for object-disjoint dev and test sets (use more objects).")


# ---- run configs ---------------------------------------------------------------------------------

def test_run_config_that_is_not_an_object_is_one_sentence(tmp_path):
    path = write(tmp_path / "config.json", "[1, 2]")
    assert refused("run", path) == f"Error: {path}: not a spatialprobe run config (expected a JSON object)"
    path = write(tmp_path / "config.json", json.dumps({"kind": "probe", "settings": "five"}))
    assert refused("run", path) == f"Error: {path}, field 'settings': expected an object, got 'five'"


# ---- annotate import -------------------------------------------------------------------------------

def _size_run(path: Path, labels: list, metas_out: list | None = None) -> Path:
    """An image run of size scenes whose prompts carry ``labels`` (a bad one included on purpose)."""
    store = ImageStore(path)
    store.run.start({"kind": "synthesize", "prompts": "size", "task": "size"})
    metas = instances("size", ["larger", "smaller"] * (len(labels) // 2))
    for meta, label in zip(metas, labels, strict=True):
        meta["label"] = label
    store.add_prompts(PromptItem(m["id"], m["text"], m) for m in metas)
    if metas_out is not None:
        metas_out.extend(metas)
    for meta in metas:
        answer = meta["label"] if meta["label"] in ("larger", "smaller") else "larger"
        store.save_image(scene("size", meta["obj_a"], meta["obj_b"], answer), meta["id"], 0, seed=0,
                         backend="test", model="drawn-shapes", settings={})
    return path


def _answers(path: Path, run: Path, given: list) -> Path:
    task, items = annotation_items(run)
    path.write_text(json.dumps({"format": FORMAT, "version": 1, "page_id": page_id(run, task, items),
                                "annotator": "alice",
                                "answers": {i["id"]: a for i, a in zip(items, given, strict=True) if a is not None}}))
    return path


def test_answers_are_matched_after_normalising_case_and_spaces(tmp_path):
    run = _size_run(tmp_path / "images", ["larger", "smaller"] * 2)
    golds = [i["gold"] for i in annotation_items(run)[1]]
    given = [" Larger" if g == "larger" else "SMALLER " for g in golds]
    out = tmp_path / "human"
    code, _, err = invoke("annotate", "import", run, _answers(tmp_path / "alice.json", run, given), "--out", out)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["accuracy"]["mean"] == 100.0
    assert summary["metrics"]["answered_ratio"]["mean"] == 100.0


def test_a_file_mostly_unanswered_is_refused_unless_min_answered(tmp_path):
    run = _size_run(tmp_path / "images", ["larger", "smaller"] * 2)
    answers = _answers(tmp_path / "alice.json", run, ["larger", "big", None, None])
    out = tmp_path / "human"
    assert refused("annotate", "import", run, answers, "--out", out) == (
        f"Error: {answers}, field 'answers': answers 1 of 4 items (25.0 %), fewer than the 90 % required; "
        "pass --min-answered 0.25 to score it anyway")
    assert not out.exists()
    code, _, err = invoke("annotate", "import", run, answers, "--out", out, "--min-answered", "0.25")
    assert code == 0, err
    assert "1 answer(s) that are none of the options (e.g. 'big')" in err
    summary = json.loads((out / "summary.json").read_text())
    assert json.loads((out / "config.json").read_text())["settings"]["min_answered"] == 0.25  # replay accepts it
    assert summary["metrics"]["answered_ratio"]["mean"] == 25.0
    assert summary["details"]["ignored_answers"]["alice"]["unmatched"] == 1


def test_a_prompt_whose_label_is_not_its_tasks_is_refused(tmp_path):
    metas: list = []
    run = _size_run(tmp_path / "images", ["larger", 1], metas)
    out = tmp_path / "human"
    message = refused("annotate", "export", run, "--out", tmp_path / "page.html")
    assert message == (f"Error: {run}, field 'label': prompt {metas[1]['id']!r} has the label 1, not a size "
                       "label (larger, smaller)")
    assert not out.exists() and not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("second,message", [
    ({"unique_id": 0}, "line 2, field 'unique_id': repeats 0 of line 1"),
    ({"unique_id": "abc"}, "line 2, field 'unique_id': expected a number, got 'abc'"),
])
def test_sr2d_prompt_lines_with_a_repeated_or_bad_unique_id_are_refused(tmp_path, second, message):
    line = {"text": "a dog to the left of a cat", "num_objects": 2, "obj_1_attributes": ["dog"],
            "obj_2_attributes": ["cat"], "rel_type": "to the left of"}
    path = tmp_path / "sr2d.jsonl"
    write_jsonl(path, [{"id": "0", "unique_id": 0, **line}, {"id": "1", **line, **second}])
    sentence = f"Error: {path.resolve()}, {message}"
    assert refused("synthesize", "--prompts", path, "--backend", "shapes", "--out", tmp_path / "images") == sentence
    assert refused("datasets", "validate", path, "--kind", "prompts") == sentence


def test_a_setting_removed_from_a_run_config_is_named(tmp_path):
    run = tmp_path / "run"
    assert invoke("probe", "size", "--model", "dummy", "--out", run)[0] == 0
    config = json.loads((run / "config.json").read_text())
    del config["settings"]["folds"]
    edited = write(tmp_path / "edited.json", json.dumps(config))
    out = tmp_path / "replay"
    assert refused("run", edited, "--out", out) == f"Error: {edited}, field 'folds': is missing."
    assert not out.exists()


def test_probe_with_allow_duplicates_runs_counts_and_replays(tmp_path):
    path = all_pairs(tmp_path / "pairs.csv")
    path.write_text(path.read_text() + "ant,cup,0\n")  # line 14 repeats line 2
    assert probe_refuses(tmp_path, "size", "--pairs", path, "--folds", "2") == (
        f"Error: {path}, line 14: repeats the pair of line 2 (pass --allow-duplicates to keep repeats)")
    run = tmp_path / "run"
    code, _, err = invoke("probe", "size", "--model", "dummy", "--pairs", path, "--allow-duplicates",
                          "--folds", "2", "--out", run)
    assert code == 0, err
    assert "Warning: pairs.csv: 1 repeated pair(s) kept (--allow-duplicates)" in err
    assert "Warning: 9 of 13 pairs of pairs.csv are never tested with --folds 2" in err
    config = json.loads((run / "config.json").read_text())
    assert config["settings"]["dataset"]["allow_duplicates"] is True
    code, out, err = invoke("run", run / "config.json")
    assert code == 0, err
    assert out.splitlines()[-1] == f"confirmed: identity {config['identity'][:12]}"


# ---- posrel's person and object under two actions is its design, not a repeat ----
def test_the_builtin_posrel_set_warns_of_no_repeats_and_a_true_repeat_names_no_flag_not_given(tmp_path):
    data = tmp_path / "posrel.jsonl"
    assert invoke("datasets", "export", "posrel", "--out", data)[0] == 0
    code, out, err = invoke("datasets", "validate", data)
    assert code == 0, err
    assert "repeated" not in err and out.startswith(f"{data}: 256 posrel instances")
    lines = data.read_text().splitlines(keepends=True)
    data.write_text("".join(lines) + lines[0])  # the same person, action and object again
    code, _, err = invoke("datasets", "validate", data)
    assert code == 0, err
    assert "Warning: posrel.jsonl: 1 repeated pair(s) kept: each is scored and counted\n" in err
