"""Bad input, as a table of cases: what a new user might type, run through the real CLI.

Every case must end with exit code 2 and one sentence on stderr that names the file (with its
line and field where it has them) or the option; no traceback and no exception class name; and
nothing written that a later run could take for a result. The malformed files live in
``tests/bad_inputs/``; image runs are drawn by ``judge_helpers.write_run``.
"""

import json
import re
import shutil
from pathlib import Path

import pytest
from judge_helpers import write_run
from typer.testing import CliRunner

from spatialprobe.cli import app

BAD = Path(__file__).parent / "bad_inputs"
COLOUR = ["--detector", "colour", "--depth", "colour"]
SIZE_PLAN = [("larger", "larger", True), ("smaller", "smaller", True), ("larger", "larger", True)]
RESULT_FILES = ("summary.json", "predictions.jsonl", "table.md")
EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b")


def case(name, argv, *expected, run_dir_ok=False):
    """``argv`` may use {bad} (tests/bad_inputs), {tmp}, {run} (a size image run), {file} (a
    regular file) and {out} (where a run would go). ``expected``: fragments stderr must hold.
    ``run_dir_ok``: the input can only be found bad mid-run (a damaged image), so {out} may exist."""
    return pytest.param(argv.split(), expected, run_dir_ok, id=name)


CASES = [
    # probe
    case("probe-unknown-task", "probe volume --model dummy --out {out}", "unknown task 'volume'"),
    case("probe-data-missing", "probe size --model dummy --data {tmp}/nope.jsonl --out {out}",
         "nope.jsonl: file not found"),
    case("probe-data-directory", "probe size --model dummy --data {bad} --out {out}",
         "bad_inputs: is a directory, not a file"),
    case("probe-data-bad-field-line3",
         "probe size --model dummy --data {bad}/release_bad_label_line3.jsonl --out {out}",
         "release_bad_label_line3.jsonl, line 3, field 'label'"),
    case("probe-data-not-utf8",
         "probe size --model dummy --data {bad}/release_not_utf8_line2.jsonl --out {out}",
         "release_not_utf8_line2.jsonl, line 2: not UTF-8 text"),
    case("probe-data-bad-json", "probe size --model dummy --data {bad}/release_bad_json_line2.jsonl "
         "--out {out}", "release_bad_json_line2.jsonl, line 2: not valid JSON"),
    case("probe-data-empty", "probe size --model dummy --data {bad}/release_empty.jsonl --out {out}",
         "release_empty.jsonl: file has no records"),
    case("probe-data-and-pairs", "probe size --model dummy --data {bad}/release_empty.jsonl "
         "--pairs {bad}/pairs_no_answer_column.csv --out {out}", "--data", "--pairs", "not both"),
    case("probe-pairs-no-answer-column",
         "probe size --model dummy --pairs {bad}/pairs_no_answer_column.csv --out {out}",
         "pairs_no_answer_column.csv", "'label'"),
    case("probe-candidates-top-level-list", "probe size --model dummy --candidates "
         "{bad}/candidates_top_level_list.json --out {out}",
         "candidates_top_level_list.json: expected a JSON object", "got a list"),
    case("probe-candidates-truncated", "probe size --model dummy --candidates "
         "{bad}/candidates_truncated.json --out {out}", "candidates_truncated.json, line 2: not valid JSON"),
    case("probe-candidates-other-task", "probe size --model dummy --candidates "
         "{bad}/candidates_other_task.json --out {out}", "candidates_other_task.json, field 'task'"),
    case("probe-candidates-missing", "probe size --model dummy --candidates {tmp}/none.json --out {out}",
         "none.json: file not found"),
    case("probe-out-is-a-file", "probe size --model dummy --out {file}", "--out", "is a file, not a directory"),
    case("probe-folds-0", "probe size --model dummy --folds 0 --out {out}", "Invalid value for '--folds'"),
    case("probe-folds-1", "probe size --model dummy --folds 1 --out {out}", "Invalid value for '--folds'"),
    case("probe-folds-negative", "probe size --model dummy --folds -3 --out {out}",
         "Invalid value for '--folds'"),
    case("probe-folds-more-than-objects", "probe size --model dummy --folds 100 --out {out}",
         "--folds 100 is more than the 25 objects of size"),
    case("probe-batch-size-0", "probe size --model dummy --batch-size 0 --out {out}",
         "Invalid value for '--batch-size'"),
    case("probe-posrel-data-is-size", "probe posrel --model dummy --data {tmp}/size.jsonl --out {out}",
         "size.jsonl, line 1, field 'question': 'Is an ant larger than a bird?' is not a posrel question",
         "its label 0 is not a posrel label; is this a size file?"),
    case("probe-height-data-is-size", "probe height --model dummy --data {tmp}/size.jsonl --out {out}",
         "size.jsonl, line 1, field 'question'", "is not a height question ('taller')"),
    case("probe-pairs-self", "probe size --model dummy --pairs {bad}/pairs_self_line3.csv --out {out}",
         "pairs_self_line3.csv, line 3: compares 'dog' with itself"),
    case("probe-pairs-unbalanced-quote", "probe size --model dummy --pairs "
         "{bad}/pairs_unbalanced_quote_line5.csv --out {out}",
         "pairs_unbalanced_quote_line5.csv, line 5, field 'obj_a': a quoted value runs from here to line 7"),
    case("probe-allow-duplicates-without-pairs", "probe size --model dummy --allow-duplicates --out {out}",
         "--allow-duplicates applies to a --pairs file; without --pairs it does not apply."),
    # datasets validate
    case("validate-unknown-task", "datasets validate {tmp}/size.jsonl --task banana",
         "--task 'banana' is not a task; choose from size, height, posrel, posrel2d, posrel3d, weight."),
    case("validate-posrel-data-is-size", "datasets validate {tmp}/size.jsonl --task posrel",
         "size.jsonl, line 1, field 'question'", "is not a posrel question"),
    case("validate-pairs-self", "datasets validate {bad}/pairs_self_line3.csv --pairs",
         "pairs_self_line3.csv, line 3: compares 'dog' with itself"),
    case("validate-qa-repeated-id", "datasets validate {bad}/qa_repeated_id_line3.jsonl --kind qa",
         "qa_repeated_id_line3.jsonl, line 3, field 'id': repeats 'q0' of line 1"),
    case("validate-folds-too-many-for-tests", "datasets validate {tmp}/size.jsonl --folds 3",
         "--folds 3 leaves fold(s)", "without dev or test instances"),
    case("validate-directory", "datasets validate {bad}", "bad_inputs: is a directory, not a file"),
    case("validate-bad-field-line3", "datasets validate {bad}/release_bad_label_line3.jsonl",
         "release_bad_label_line3.jsonl, line 3, field 'label'"),
    case("validate-not-utf8", "datasets validate {bad}/release_not_utf8_line2.jsonl",
         "release_not_utf8_line2.jsonl, line 2: not UTF-8 text"),
    case("validate-folds-0", "datasets validate {bad}/release_bad_label_line3.jsonl --folds 0",
         "Invalid value for '--folds'"),
    case("validate-folds-more-than-objects", "datasets validate {tmp}/size.jsonl --folds 30",
         "--folds 30 is more than the 4 objects of size.jsonl"),
    # judge
    case("judge-not-an-image-run", "judge size {tmp} --out {out}", "is not an image run"),
    case("judge-truncated-png", "judge size {run_truncated} --out {out} --detector colour --depth colour",
         "_00.png: not a readable image (image file is truncated)", run_dir_ok=True),
    case("judge-missing-png", "judge size {run_missing} --out {out} --detector colour --depth colour",
         "1 of 3 image files are missing", ".png", "--skip-missing"),
    case("judge-device-without-a-model", "judge posrel {run} --detector colour --device cuda --out {out}",
         "--device cuda does not apply: the colour-coded test detector and depth run no model."),
    case("judge-batch-size-0", "judge size {run} --batch-size 0 --out {out}",
         "Invalid value for '--batch-size'"),
    case("judge-threshold-above-1", "judge posrel {run} --threshold 2 --out {out}",
         "Invalid value for '--threshold'"),
    case("judge-out-is-a-file", "judge size {run} --out {file} --detector colour --depth colour",
         "--out", "is a file, not a directory"),
    # annotate import
    case("annotate-answers-top-level-list", "annotate import {run} {bad}/answers_top_level_list.json "
         "--out {out}", "answers_top_level_list.json, field 'format'"),
    case("annotate-answers-not-utf8", "annotate import {run} {bad}/answers_not_utf8.json --out {out}",
         "answers_not_utf8.json: not UTF-8 text"),
    case("annotate-answers-missing", "annotate import {run} {tmp}/alice.json --out {out}",
         "alice.json: file not found"),
    case("annotate-not-an-image-run", "annotate import {tmp} {bad}/answers_top_level_list.json",
         "is not an image run"),
    # synthesize
    case("synthesize-prompts-missing", "synthesize --prompts {tmp}/prompts.txt --backend diffusers "
         "--model none --out {out}", "prompts.txt: no such file"),
    case("synthesize-prompts-bad-field-line3", "synthesize --prompts {bad}/prompts_empty_text_line3.jsonl "
         "--backend diffusers --model none --out {out}",
         "prompts_empty_text_line3.jsonl, line 3, field 'text'"),
    case("synthesize-images-per-prompt-0", "synthesize --prompts size -n 0 --backend diffusers "
         "--model none --out {out}", "Invalid value for '--images-per-prompt'"),
    case("synthesize-batch-size-0", "synthesize --prompts size --batch-size 0 --backend diffusers "
         "--model none --out {out}", "Invalid value for '--batch-size'"),
    case("synthesize-steps-0", "synthesize --prompts size --steps 0 --backend diffusers --model none "
         "--out {out}", "Invalid value for '--steps'"),
    case("synthesize-out-is-a-file", "synthesize --prompts size --backend diffusers --model none "
         "--out {file}", "--out", "is a file, not a directory"),
    case("synthesize-unknown-backend", "synthesize --prompts size --backend dalle --out {out}",
         "unknown backend 'dalle'"),
    case("synthesize-diffusers-option-for-vqgan", "synthesize --prompts size --backend vqgan-clip "
         "--vqgan none --steps 20 --out {out}",
         "--steps applies to the diffusers backend only; the vqgan-clip backend does not take it."),
    case("probe-device-for-dummy", "probe size --model dummy --device cuda --out {out}",
         "--device cuda does not apply to the dummy scorer: it runs no model."),
    case("synthesize-precision-for-shapes", "synthesize --prompts size --backend shapes --precision bf16 "
         "--out {out}", "--precision does not apply to --backend shapes: it draws its scenes without a model."),
    case("synthesize-device-for-shapes", "synthesize --prompts size --backend shapes --device cuda --out {out}",
         "--device does not apply to --backend shapes: it draws its scenes without a model."),
    case("synthesize-vqgan-option-for-diffusers", "synthesize --prompts size --backend diffusers "
         "--model none --iterations 20 --out {out}",
         "--iterations applies to the vqgan-clip backend only; the diffusers backend does not take it."),
    case("synthesize-vqgan-speed-for-diffusers", "synthesize --prompts size --backend diffusers "
         "--model none --fast --out {out}",
         "--fast applies to the vqgan-clip backend only; the diffusers backend does not take it."),
    case("synthesize-workers-without-ray", "synthesize --prompts size --backend diffusers --model none "
         "--workers 2 --out {out}", "--workers sets the number of Ray workers and needs --ray"),
    # visor
    case("visor-nothing-to-score", "visor", "give an image RUN"),
    case("visor-detections-without-prompts", "visor --detections {bad}/detections_top_level_list.json",
         "--detections needs --prompts"),
    case("visor-prompts-truncated", "visor --detections {bad}/detections_top_level_list.json "
         "--prompts {bad}/sr2d_truncated.json --out {out}", "sr2d_truncated.json, line 2: not valid JSON"),
    case("visor-threshold-above-1", "visor {run} --threshold 1.5 --out {out}",
         "Invalid value for '--threshold'"),
    # qa
    case("qa-text-data-bad-field-line3", "qa text --model none --data "
         "{bad}/release_bad_label_line3.jsonl --out {out}",
         "release_bad_label_line3.jsonl, line 3, field 'label'"),
    case("qa-text-repeated-id", "qa text --model none --data {bad}/qa_repeated_id_line3.jsonl --out {out}",
         "qa_repeated_id_line3.jsonl, line 3, field 'id': repeats 'q0' of line 1"),
    case("qa-text-integer-id", "qa text --model none --data {bad}/qa_integer_id_line3.jsonl --out {out}",
         "qa_integer_id_line3.jsonl, line 3, field 'id': expected str, got 3"),
    case("qa-export-data-not-utf8", "qa export --data {bad}/release_not_utf8_line2.jsonl --out {tmp}/qa.jsonl",
         "release_not_utf8_line2.jsonl, line 2: not UTF-8 text"),
    case("qa-image-not-an-image-run", "qa image --images {tmp} --model none --out {out}",
         "is not a synthesis run"),
    case("qa-text-batch-size-0", "qa text --model none --task size --batch-size 0 --out {out}",
         "Invalid value for '--batch-size'"),
    # vsr
    case("vsr-data-folder-missing", "vsr --model none --data {tmp}/vsr --images {tmp} --out {out}",
         "test.jsonl: file not found"),
    case("vsr-data-bad-field-line3", "vsr --model none --data {bad}/vsr_bad_line3 --images {tmp} "
         "--out {out}", "test.jsonl, line 3, field 'label'"),
    case("vsr-batch-size-0", "vsr --model none --data {bad}/vsr_bad_line3 --images {tmp} --batch-size 0 "
         "--out {out}", "Invalid value for '--batch-size'"),
    case("vsr-limit-0", "vsr --model none --data {bad}/vsr_bad_line3 --images {tmp} --limit 0 --out {out}",
         "Invalid value for '--limit'"),
    case("vsr-out-is-a-file", "vsr --model none --data {bad}/vsr_bad_line3 --images {tmp} --out {file}",
         "--out", "is a file, not a directory"),
]


def _image_run(path: Path, damage: str | None) -> Path:
    metas = write_run(path, "size", SIZE_PLAN)
    second = next((path / "images").glob(f"{metas[1]['id']}_*.png"))
    if damage == "truncated":
        shutil.copyfile(BAD / "truncated.png", second)
    elif damage == "missing":
        second.unlink()
    return path


def _places(tmp_path: Path, argv: list[str]) -> dict[str, str]:
    places = {"bad": str(BAD), "tmp": str(tmp_path / "work"), "out": str(tmp_path / "work" / "out"),
              "file": str(tmp_path / "work" / "notes.txt")}
    (tmp_path / "work").mkdir()
    Path(places["file"]).write_text("not a run\n")
    (tmp_path / "work" / "size.jsonl").write_text(
        (BAD / "release_bad_label_line3.jsonl").read_text().replace('"yes"', "1"))
    for key, damage in (("run", None), ("run_truncated", "truncated"), ("run_missing", "missing")):
        if any("{" + key + "}" in arg for arg in argv):
            places[key] = str(_image_run(tmp_path / key, damage))
    return places


def _result_files(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.name in RESULT_FILES]


@pytest.mark.parametrize("argv,expected,run_dir_ok", CASES)
def test_bad_input_is_refused_with_one_clear_sentence(tmp_path, monkeypatch, argv, expected, run_dir_ok):
    places = _places(tmp_path, argv)
    monkeypatch.chdir(tmp_path / "work")  # a default --out (runs/...) would land here
    args = [arg.format(**places) for arg in argv]
    result = CliRunner().invoke(app, args)

    stderr = result.stderr
    assert result.exit_code == 2, f"{args}\n{result.output}\n{result.exception!r}"
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and not EXCEPTION_NAME.search(result.output), result.output
    if stderr.startswith("Error: "):  # ours: exactly one line
        assert len(stderr.strip().splitlines()) == 1, stderr
    message = " ".join(re.sub(r"[│╭╮╰╯─]", " ", stderr).split())  # typer's usage box, unwrapped
    for fragment in expected:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert not _result_files(tmp_path / "work"), _result_files(tmp_path / "work")
    if not run_dir_ok:
        assert not (tmp_path / "work" / "out").exists()
        assert not (tmp_path / "work" / "runs").exists()


# ---- what a refusal can be overruled with, and what is recorded when it is ------------------

def test_judge_skip_missing_judges_the_rest_and_records_the_gap(tmp_path):
    run = _image_run(tmp_path / "images", "missing")
    out = tmp_path / "judged"
    result = CliRunner().invoke(app, ["judge", "size", str(run), *COLOUR, "--skip-missing",
                                      "--no-gallery", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Warning: 1 of 3 image files are missing" in result.stderr
    config = json.loads((out / "config.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert config["settings"]["skip_missing"] is True
    assert summary["accuracy"]["n"] == 2 and config["settings"]["source"]["images"] == 2
    missing = summary["details"]["missing_images"]
    assert missing["n"] == 1 and len(missing["files"]) == 1
    assert missing["files"][0].startswith("images/")


def test_annotate_import_warns_about_unknown_ids_and_non_text_answers(tmp_path):
    from spatialprobe.judging.annotation_page import annotation_items, page_id

    run = _image_run(tmp_path / "images", None)
    task, items = annotation_items(run)
    ids = [i["id"] for i in items]
    answers = {ids[0]: "larger", ids[1]: 1, ids[2]: ["smaller"], "no-such-item": "larger",
               "another-stray": "smaller"}
    path = tmp_path / "alice.json"
    path.write_text(json.dumps({"format": "spatialprobe-annotations", "version": 1,
                                "page_id": page_id(run, task, items), "annotator": "alice",
                                "answers": answers}))
    out = tmp_path / "human"
    result = CliRunner().invoke(app, ["annotate", "import", str(run), str(path), "--out", str(out),
                                      "--min-answered", "0.3"])  # 1 of 3 answered
    assert result.exit_code == 0, result.output
    assert ("alice.json (alice): ignored 2 answer(s) to item ids not on the page (e.g. "
            "'no-such-item', 'another-stray') and 2 answer(s) that are not text") in result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["details"]["ignored_answers"]["alice"] == {
        "file": str(path), "unknown_ids": 2, "first_unknown_ids": ["no-such-item", "another-stray"],
        "non_string": 2, "first_non_string_ids": [ids[1], ids[2]], "unmatched": 0, "first_unmatched": []}
    assert summary["metrics"]["answered_accuracy"]["breakdown"]["alice"]["n"] == 1  # only the text answer
