"""Rules 6 and 8: the index is a cache of the run folders (never a point of failure), and
``report`` shows every run: one row each, labelled by what differs, damaged runs named and skipped."""

import json
import shutil
import sqlite3

import pytest
from typer.testing import CliRunner

from spatialprobe import store
from spatialprobe.cli import app
from spatialprobe.reports.tables import pm
from spatialprobe.runner.summary import Metric, build_summary

INDEX_WARNING = "Warning: the index of runs"


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def probe(out, task="size", *options):
    result = invoke("probe", task, "--model", "dummy", "--candidates", "manual", "--folds", "2",
                    "--out", out, *options)
    assert result.exit_code == 0, result.output
    return json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    """Three dummy probe runs of size that differ only by their seed."""
    root = tmp_path_factory.mktemp("seeds")
    summaries = [probe(root / f"seed{n}", "size", "--seed", str(n)) for n in range(3)]
    return root, summaries


def rows_of(output):
    return [line for line in output.splitlines() if line.startswith("| ") and not line.startswith("| run ")]


def test_three_seeds_are_three_rows_labelled_by_seed_in_any_order(seeds):
    root, summaries = seeds
    first = invoke("report", root / "seed2", root / "seed0", root / "seed1")
    again = invoke("report", root / "seed1", root / "seed2", root / "seed0")
    assert first.exit_code == again.exit_code == 0, first.output
    assert first.output == again.output
    assert first.output.splitlines()[0] == "| run | probe size acc | probe size macro-F1 |"
    assert rows_of(first.output) == [
        f"| dummy · seed={n} [untrained] | {pm(s['accuracy'])} | {pm(s['macro_f1'])} |"
        for n, s in enumerate(summaries)]


def test_two_runs_keep_their_a_and_b_for_the_paired_test(seeds):
    root, summaries = seeds
    result = invoke("report", root / "seed1", root / "seed0")
    assert result.exit_code == 0, result.output
    assert rows_of(result.output)[:2] == [
        f"| A: dummy · seed=1 [untrained] | {pm(summaries[1]['accuracy'])} | {pm(summaries[1]['macro_f1'])} |",
        f"| B: dummy · seed=0 [untrained] | {pm(summaries[0]['accuracy'])} | {pm(summaries[0]['macro_f1'])} |"]


def test_runs_of_different_datasets_never_share_a_cell(tmp_path):
    data = tmp_path / "size.jsonl"
    assert invoke("datasets", "export", "size", "--out", data).exit_code == 0
    lines = data.read_text().splitlines()
    data.write_text("\n".join(lines[: len(lines) // 2]) + "\n")  # another dataset of the same task
    builtin, subset = probe(tmp_path / "builtin"), probe(tmp_path / "subset", "size", "--data", data)
    assert builtin["dataset"] != subset["dataset"]
    result = invoke("report", tmp_path / "builtin", tmp_path / "subset")
    assert result.exit_code == 0, result.output
    assert subset["dataset"].startswith("size.jsonl@") and builtin["dataset"].startswith("size@")
    headers = [line for line in result.output.splitlines() if line.startswith("| run ")]
    assert headers == [  # one table per dataset: no cell of one holds a number of the other
        f"| run | probe size [{subset['dataset']}] acc | probe size [{subset['dataset']}] macro-F1 |",
        f"| run | probe size [{builtin['dataset']}] acc | probe size [{builtin['dataset']}] macro-F1 |"]
    assert rows_of(result.output)[:2] == [
        f"| B: dummy · dataset={subset['dataset']} [untrained] | {pm(subset['accuracy'])} | "
        f"{pm(subset['macro_f1'])} |",
        f"| A: dummy · dataset={builtin['dataset']} [untrained] | {pm(builtin['accuracy'])} | "
        f"{pm(builtin['macro_f1'])} |"]


DAMAGE = {
    "truncated": lambda p: p.write_text('{"schema": "spatialprobe.summary/1", "kind": "pro'),
    "empty": lambda p: p.write_text(""),
    "list": lambda p: p.write_text("[1, 2]"),
}


def test_damaged_runs_are_named_and_skipped_the_others_reported(seeds, tmp_path):
    root, summaries = seeds
    damaged = []
    for name, damage in DAMAGE.items():
        shutil.copytree(root / "seed0", tmp_path / name)
        damage(tmp_path / name / "summary.json")
        damaged.append(tmp_path / name)
    shutil.copytree(root / "seed0", tmp_path / "noconfig")
    (tmp_path / "noconfig" / "config.json").unlink()
    result = invoke("report", *damaged, tmp_path / "noconfig", root / "seed1")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    assert warnings == [
        f"Warning: {tmp_path / 'truncated' / 'summary.json'} is not readable JSON (Unterminated string "
        "starting at: line 1 column 46 (char 45)); skipped.",
        f"Warning: {tmp_path / 'empty' / 'summary.json'} is not readable JSON (Expecting value: line 1 "
        "column 1 (char 0)); skipped.",
        f"Warning: {tmp_path / 'list' / 'summary.json'} holds a JSON list, not an object; skipped.",
        f"Warning: {tmp_path / 'noconfig' / 'config.json'} is missing; skipped."]
    assert rows_of(result.output) == [
        f"| dummy [untrained] | {pm(summaries[1]['accuracy'])} | {pm(summaries[1]['macro_f1'])} |"]


def test_a_truncated_predictions_file_is_named_instead_of_a_paired_test(seeds, tmp_path):
    root, _ = seeds
    shutil.copytree(root / "seed0", tmp_path / "cut")
    predictions = tmp_path / "cut" / "predictions.jsonl"
    predictions.write_text(predictions.read_text()[:-30])
    result = invoke("report", tmp_path / "cut", root / "seed0")
    assert result.exit_code == 0, result.output
    assert f"No paired test of A = `{tmp_path / 'cut'}`" in result.output
    assert (f"{predictions} cannot be read (Unterminated string starting at: line 1 column"
            in " ".join(result.output.split()))


def _fake_run(path, kind, task, metrics, dataset="d@1"):
    """A finished run folder of another kind, its summary in the one schema."""
    path.mkdir()
    summary = build_summary(kind=kind, task=task, model="m", dataset=dataset, seed=None, metrics=metrics,
                            details={}, identity="x", provenance={"created": "2026-01-01T00:00:00"})
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "config.json").write_text(json.dumps({"kind": kind, "identity": "x", "settings": {}, "runtime": {}}))
    return summary


def test_mixed_kinds_and_the_spatialmqa_f1_each_get_their_own_columns(seeds, tmp_path):
    root, summaries = seeds
    _fake_run(tmp_path / "images", "synthesize", None, {})  # no task, no metrics
    mqa = _fake_run(tmp_path / "mqa", "spatialmqa", "spatialmqa",
                    {"accuracy": Metric(60.0, None, 10), "macro_f1": Metric(41.0, None, 10),
                     "f1": Metric(57.25, None, 10)})
    vsr = _fake_run(tmp_path / "vsr", "vsr", "vsr-random", {"accuracy": Metric(70.0, None, 10),
                                                           "macro_f1": Metric(69.0, None, 10)})
    result = invoke("report", tmp_path / "images", tmp_path / "mqa", tmp_path / "vsr", root / "seed0")
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if line.startswith("| run ")] == [
        "| run | probe size acc | probe size macro-F1 |", "| run | synthesize acc | synthesize macro-F1 |",
        "| run | spatialmqa spatialmqa acc | spatialmqa spatialmqa macro-F1 | spatialmqa spatialmqa F1 "
        "| spatialmqa spatialmqa P | spatialmqa spatialmqa R |",  # its module's official list (the run recorded none)
        "| run | vsr vsr-random acc | vsr vsr-random macro-F1 |"]  # one table per benchmark and family
    s = summaries[0]
    assert rows_of(result.output) == [
        f"| dummy [untrained] | {pm(s['accuracy'])} | {pm(s['macro_f1'])} |",
        "| m | – | – |",
        "| m | 60.0 | 41.0 | 57.2 | – | – |",  # F1: the benchmark's 2PR/(P+R), beside macro-F1
        "| m | 70.0 | 69.0 |"]
    assert mqa["metrics"]["f1"]["mean"] == 57.25 and vsr["kind"] == "vsr"


def test_many_runs_of_several_kinds_get_a_table_each_rows_labelled_by_the_adapter_option_that_differs(
        seeds, tmp_path):
    # ask runs that differ in one adapter option were labelled by their folders
    root, _ = seeds
    runs = []
    for normalize, accuracy in (("sum", 50.0), ("char", 62.5)):
        path = tmp_path / f"ask-{normalize}"
        _fake_run(path, "ask", "size", {"accuracy": Metric(accuracy, None, 8), "macro_f1": Metric(40.0, None, 8)})
        config = json.loads((path / "config.json").read_text())
        config["settings"] = {"model": {"name": "hf-mllm", "args": {"model": "/models/llava", "normalize": normalize,
                                                                     "precision": "auto"}}, "protocol": "likelihood"}
        (path / "config.json").write_text(json.dumps(config))
        runs.append(path)
    _fake_run(tmp_path / "vsr", "vsr", "vsr-random", {"accuracy": Metric(70.0, None, 10),
                                                     "macro_f1": Metric(69.0, None, 10)})
    result = invoke("report", *runs, tmp_path / "vsr", *(root / f"seed{n}" for n in range(3)))
    assert result.exit_code == 0, result.output
    tables = result.output.split("\n\n")
    assert [t.splitlines()[0] for t in tables[:3]] == [
        "| run | probe size acc | probe size macro-F1 |", "| run | ask size acc | ask size macro-F1 |",
        "| run | vsr vsr-random acc | vsr vsr-random macro-F1 |"]
    assert tables[1].splitlines()[2:] == ["| m · normalize=char | 62.5 | 40.0 |", "| m · normalize=sum | 50.0 | 40.0 |"]
    assert [row.split(" | ")[0] for row in tables[0].splitlines()[2:]] == [
        f"| dummy · seed={n} [untrained]" for n in range(3)]


def test_runs_lists_settings_and_coverage(seeds):
    root, summaries = seeds
    result = invoke("runs", root)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == ("| created | kind | task | model | backend | dataset | settings | coverage | accuracy | "
                        "macro-F1 | path |")
    for n, s in enumerate(summaries):
        created = s["provenance"]["created"]
        assert (f"| {created} | probe | size | dummy | dummy | {s['dataset']} | folds=2 seed={n} | "
                f"{s['accuracy']['n']} scored | {s['accuracy']['mean']:.1f} | {s['macro_f1']['mean']:.1f} | "
                f"{root / f'seed{n}'} |") in lines


def _index_rows():
    with sqlite3.connect(store.home() / "index.sqlite") as conn:
        return sorted(conn.execute("SELECT * FROM runs").fetchall())


def test_runs_rebuild_recreates_the_rows_of_the_index(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for n in range(2):
        probe(tmp_path / "runs" / f"r{n}", "size", "--seed", str(n))
    before = _index_rows()
    assert [row[0] for row in before] == [str((tmp_path / "runs" / f"r{n}").resolve()) for n in range(2)]
    (tmp_path / "home" / "index.sqlite").unlink()
    result = invoke("runs", "--rebuild")  # default: ./runs
    assert result.exit_code == 0, result.output
    assert f"rebuilt {tmp_path / 'home' / 'index.sqlite'} from 2 run folder(s)." in result.output
    assert _index_rows() == before


def _unusable_home(tmp_path, monkeypatch, how):
    """A home that is a file, a corrupt index, or an index that cannot be written (read-only: as
    root, chmod does not stop writes, so sqlite's own error is raised where the index is opened)."""
    home = tmp_path / "home"
    if how == "file":
        home.write_text("not a directory\n")
    elif how == "corrupt":
        home.mkdir()
        (home / "index.sqlite").write_bytes(b"this is not a database" * 100)
    else:
        home.mkdir()

        connect = store.connect

        def read_only(path):
            if path.name == "index.sqlite":
                raise sqlite3.OperationalError("attempt to write a readonly database")
            return connect(path)
        monkeypatch.setattr(store, "connect", read_only)
    monkeypatch.setenv("SPATIALPROBE_HOME", str(home))
    return home


@pytest.mark.parametrize("how,reason", [
    ("file", "{home} is a file, not a directory"),
    ("corrupt", "file is not a database"),
    ("read-only", "attempt to write a readonly database"),
])
def test_an_unusable_index_is_one_warning_and_the_run_writes_its_files(tmp_path, monkeypatch, how, reason):
    home = _unusable_home(tmp_path, monkeypatch, how)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "runs" / "size"
    result = invoke("probe", "size", "--model", "dummy", "--candidates", "manual", "--folds", "2", "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir() if p.suffix != ".lock" and "sqlite" not in p.name) == [
        "config.json", "predictions.jsonl", "summary.json", "table.md"]
    sentence = (f"Warning: the index of runs {home / 'index.sqlite'} cannot be used "
                f"({reason.format(home=home)}); run folders are "
                "read and written as usual, and `spatialprobe runs --rebuild` rebuilds the index from them.")
    assert [line for line in result.stderr.splitlines() if INDEX_WARNING in line] == [sentence]
    summary = json.loads((out / "summary.json").read_text())
    number = f"{summary['accuracy']['mean']:.1f}"
    for command in ("runs", "report"):  # given the folders, neither reads the index
        listed = invoke(command, "runs" if command == "runs" else out)
        assert listed.exit_code == 0 and number in listed.output, listed.output
    if how != "read-only":  # an index that cannot be read: the folders under ./runs, said once
        for command in ("runs", "report"):
            store._WARNED.clear()  # as in a new process
            listed = invoke(command)
            assert listed.exit_code == 0 and number in listed.output, listed.output
            assert listed.stderr == sentence + "\n"
    store._WARNED.clear()
