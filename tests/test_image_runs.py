"""Image runs are complete or refused: one reader of image runs for judge, visor,
annotate and qa image; one guarded image opener; coverage stated by vsr, spatialmqa and vsr-train;
tables printed unwrapped. Every case is a known answer: exit code, the sentence, the counts."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner
from vl_helpers import solid_image

from spatialprobe.cli import app
from spatialprobe.errors import DataError, RunInUse
from spatialprobe.imagestore import Completeness, PromptItem, open_image_run
from spatialprobe.synthesis import PromptSet, load_prompts, synthesize
from spatialprobe.tasks.sr2d import build_sr2d, is_spatial, load_sr2d, prompt_lines

SHAPES = {"size": 64, "device": "cpu", "precision": "auto"}
COLOUR = ["--detector", "colour", "--depth", "colour", "--no-gallery"]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def one_line(text: str) -> str:
    return " ".join(text.split())


def error_of(result) -> str:
    """The one ``Error:`` line among stderr's lines (progress bars of model loading around it)."""
    errors = [line for line in result.stderr.replace("\r", "\n").splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def size_run(path: Path, prompts: int = 6, per_prompt: int = 2) -> Path:
    """A finished shapes image run of ``prompts`` size instances x ``per_prompt`` images."""
    chosen = load_prompts("size")
    chosen = dataclasses.replace(chosen, items=chosen.items[:prompts])
    synthesize(chosen, path, "shapes", SHAPES, images_per_prompt=per_prompt, batch_size=16)
    return path


def kill_images(run: Path, count: int) -> list[str]:
    """What a killed synthesize leaves: the last ``count`` images neither recorded nor written."""
    with sqlite3.connect(run / "run.sqlite") as conn:
        keys = sorted(k for (k,) in conn.execute("SELECT key FROM results"))[-count:]
        for key in keys:
            path = json.loads(conn.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()[0])["path"]
            (run / path).unlink()
            conn.execute("DELETE FROM results WHERE key = ?", (key,))
    return keys


def refusal(run: Path, held: int, expected: int) -> str:
    return (f"Error: {run}: holds {held} of {expected} images (prompts x images per prompt); it is unfinished "
            "or was killed: finish it with the same synthesize command, or pass --partial to use the "
            "images it holds")


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# ---- complete or refused ------------------------------------------------------------------------

def test_unfinished_run_refused_with_counts_partial_recorded_and_a_distinct_identity(tmp_path):
    run = size_run(tmp_path / "images")
    kill_images(run, 3)
    result = invoke("judge", "size", run, *COLOUR, "--out", tmp_path / "j")
    assert result.exit_code == 2 and one_line(result.output) == refusal(run, 9, 12)
    assert not (tmp_path / "j").exists()
    for args in (["annotate", "export", run, "--out", tmp_path / "page.html"],
                 ["visor", run, "--detector", "colour", "--out", tmp_path / "v"]):
        refused = invoke(*args)
        assert refused.exit_code == 2 and one_line(refused.output) == refusal(run, 9, 12), args

    partial = invoke("judge", "size", run, *COLOUR, "--partial", "--out", tmp_path / "j")
    assert partial.exit_code == 0, partial.output
    first = "Image run: PARTIAL, 9 of 12 images (prompts x images per prompt; read with --partial)."
    assert (tmp_path / "j" / "table.md").read_text().splitlines()[0] == first
    assert first in partial.stdout.splitlines()
    assert ("Warning: the image run is unfinished: judged 9 of its 12 images (--partial, recorded in "
            "summary.json).") in one_line(partial.stderr)
    summary = json.loads((tmp_path / "j" / "summary.json").read_text())
    config = json.loads((tmp_path / "j" / "config.json").read_text())
    record = {"images": 9, "expected": 12, "partial": True, "being_written": False}
    assert summary["details"]["image_run"] == record and summary["accuracy"]["n"] == 9
    assert config["settings"]["source"]["completeness"] == record

    # finished with the same synthesize command, it is read without --partial: another identity
    size_run(run)
    whole = invoke("judge", "size", run, *COLOUR, "--out", tmp_path / "j-whole")
    assert whole.exit_code == 0, whole.output
    assert (tmp_path / "j-whole" / "table.md").read_text().splitlines()[0] == \
        "Image run: 12 of 12 images (complete)."
    other = json.loads((tmp_path / "j-whole" / "config.json").read_text())
    assert other["identity"] != config["identity"]
    assert other["settings"]["source"]["completeness"] == {"images": 12, "expected": 12, "partial": False,
                                                           "being_written": False}
    # --partial on a finished run reads it as complete: the same identity as without (another
    # identity in the same --out would be refused), and nothing is judged again
    before = tree_digest(tmp_path / "j-whole")
    again = invoke("judge", "size", run, *COLOUR, "--partial", "--out", tmp_path / "j-whole")
    assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "j-whole" / "config.json").read_text())["identity"] == other["identity"]
    assert set(tree_digest(tmp_path / "j-whole")) == set(before)


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.ftruncate(fd, 0); os.pwrite(fd, f"{os.getpid()}\\n".encode(), 0)
print("held", flush=True)
time.sleep(120)
"""


def test_a_run_synthesize_still_writes_is_refused_until_its_lock_is_free(tmp_path):
    run = size_run(tmp_path / "images", prompts=2, per_prompt=1)
    writer = subprocess.Popen([sys.executable, "-c", HOLD, str(run / "run.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "held\n"
        result = invoke("judge", "size", run, *COLOUR, "--out", tmp_path / "j")
        assert result.exit_code == 2 and not (tmp_path / "j").exists()
        assert one_line(result.output) == (
            f"Error: {run} is being written by another spatialprobe process (pid {writer.pid}, which holds "
            "its run.lock); wait for it to finish, or pass --partial to read the images finished so far.")
        with pytest.raises(RunInUse):
            open_image_run(run)
        completeness = open_image_run(run, partial=True)[1]
        assert completeness == Completeness(2, 2, True, str(writer.pid))
        assert Completeness.line(completeness.to_dict()) == (
            "Image run: PARTIAL, 2 of 2 images (prompts x images per prompt, still being written; read "
            "with --partial).\n\n")
    finally:
        writer.kill()
        writer.wait()
    assert invoke("judge", "size", run, *COLOUR, "--out", tmp_path / "j").exit_code == 0


# ---- read-only ----------------------------------------------------------------------------------

def test_the_reader_opens_the_database_read_only_and_falls_back_to_immutable(tmp_path, monkeypatch):
    """Tests run as root, where chmod stops no write: the reader's connections are checked instead
    (SQLite's mode=ro; immutable=1 where mode=ro cannot open, as on a read-only mount without the
    WAL's shared-memory file), and the database file is unchanged byte for byte."""
    import spatialprobe.imagestore as imagestore

    run = size_run(tmp_path / "images", prompts=2, per_prompt=1)
    before = hashlib.sha256((run / "run.sqlite").read_bytes()).hexdigest()
    opened: list[tuple[str, bool]] = []
    connect = sqlite3.connect

    def recording(database, *args, **kwargs):
        opened.append((str(database), bool(kwargs.get("uri"))))
        return connect(database, *args, **kwargs)

    monkeypatch.setattr(imagestore.sqlite3, "connect", recording)
    store, completeness = open_image_run(run)
    assert len(list(store.images())) == 2 and completeness.images == 2
    uri = (run / "run.sqlite").resolve().as_uri()
    assert set(opened) == {(f"{uri}?mode=ro", True)}

    def read_only_mount(database, *args, **kwargs):
        if str(database).endswith("?mode=ro"):
            raise sqlite3.OperationalError("unable to open database file")
        return recording(database, *args, **kwargs)

    opened.clear()
    monkeypatch.setattr(imagestore.sqlite3, "connect", read_only_mount)
    assert len(open_image_run(run)[0].rows()) == 2
    assert set(opened) == {(f"{uri}?immutable=1", True)}
    assert hashlib.sha256((run / "run.sqlite").read_bytes()).hexdigest() == before
    monkeypatch.setattr(imagestore.sqlite3, "connect", connect)
    for leftover in run.glob("run.sqlite-*"):
        leftover.unlink()
    (run / "run.sqlite").write_bytes(b"not a database" * 100)  # a damaged database: one sentence
    with pytest.raises(DataError) as err:
        open_image_run(run)
    assert str(err.value) == (f"{run / 'run.sqlite'}: not a readable image run database (file is not a "
                              "database)")


def test_judge_reads_an_image_run_on_a_read_only_mount(tmp_path):
    """A real read-only bind mount in a private mount namespace (skipped where one cannot be made)."""
    run = size_run(tmp_path / "images", prompts=2, per_prompt=1)
    for leftover in run.glob("run.sqlite-*"):  # a cleanly closed database: no WAL files to reuse
        leftover.unlink()
    mount = tmp_path / "ro"
    mount.mkdir()
    before = tree_digest(run)
    script = (f"mount --bind {run} {mount} && mount -o remount,ro,bind {mount} && touch {mount}/x 2>/dev/null; "
              f"test ! -e {mount}/x && {sys.executable} -m spatialprobe judge size {mount} "
              f"{' '.join(COLOUR)} --out {tmp_path / 'j'}")
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {run} {mount}"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no private mount namespace here (unshare -m / mount --bind not permitted)")
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "j" / "table.md").read_text().splitlines()[0] == "Image run: 2 of 2 images (complete)."
    assert tree_digest(run) == before


# ---- deleted and damaged image files --------------------------------------------------------------

def sr2d_run(path: Path, count: int = 4, per_prompt: int = 2) -> Path:
    records = [r for r in build_sr2d() if is_spatial(r)][:count]
    path.parent.mkdir(parents=True, exist_ok=True)
    prompts = path.parent / "sr2d.jsonl"
    prompts.write_text("".join(json.dumps(line) + "\n" for line in prompt_lines(records)))
    synthesize(load_prompts(str(prompts)), path, "shapes", SHAPES, images_per_prompt=per_prompt, batch_size=16)
    return path


def test_visor_refuses_a_deleted_png_or_skips_and_counts_it(tmp_path):
    run = sr2d_run(tmp_path / "images")
    gone = run / "images" / "1_01.png"
    gone.unlink()
    result = invoke("visor", run, "--detector", "colour", "--out", tmp_path / "v")
    assert result.exit_code == 2 and not (tmp_path / "v").exists()
    assert one_line(result.output) == (f"Error: {run}: 1 of 8 image files are missing ({gone}); restore them, "
                                       "or pass --skip-missing to score the rest (recorded in the run)")
    skipped = invoke("visor", run, "--detector", "colour", "--skip-missing", "--out", tmp_path / "v")
    assert skipped.exit_code == 0, skipped.output
    summary = json.loads((tmp_path / "v" / "summary.json").read_text())
    assert summary["details"]["images"] == 7 and summary["details"]["non_spatial_skipped"] == 0
    assert summary["details"]["missing_images"] == {
        "n": 1, "note": f"1 of 8 image files are missing ({gone})", "files": ["images/1_01.png"]}
    assert json.loads((tmp_path / "v" / "config.json").read_text())["settings"]["skip_missing"] is True
    assert f"Warning: 1 of 8 image files are missing ({gone}); scored the rest" in one_line(skipped.stderr)


def test_annotate_export_refuses_a_deleted_png_or_skips_and_counts_it(tmp_path):
    run = size_run(tmp_path / "images", prompts=3, per_prompt=1)
    gone = next(run.glob("images/*.png"))
    gone.unlink()
    page = tmp_path / "page.html"
    result = invoke("annotate", "export", run, "--out", page)
    assert result.exit_code == 2 and not page.exists()
    assert one_line(result.output) == (f"Error: {run}: 1 of 3 image files are missing ({gone}); restore them, "
                                       "or pass --skip-missing to ask about the rest (recorded in the run)")
    skipped = invoke("annotate", "export", run, "--skip-missing", "--out", page)
    assert skipped.exit_code == 0 and skipped.stdout == f"wrote {page} (2 images)\n"
    assert page.read_text().count('"image": "data:image/jpeg;base64,') == 2
    assert '"missing_images": {"n": 1, ' in page.read_text()


@pytest.mark.parametrize("damage, sentence", [
    (lambda p: p.write_bytes(b""), "image file is empty (0 bytes)"),
    (lambda p: p.write_bytes(p.read_bytes()[:60]), "not a readable image (image file is truncated)"),
    (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + b"x" * 40), "not a readable image (Truncated File Read)")])
def test_damaged_images_are_one_sentence_naming_the_file(tmp_path, damage, sentence):
    from spatialprobe.vision import open_image

    run = size_run(tmp_path / "images", prompts=2, per_prompt=1)
    bad = sorted(run.glob("images/*.png"))[0]
    damage(bad)
    with pytest.raises(DataError) as err:
        open_image(bad)
    assert str(err.value) == f"{bad}: {sentence}"
    for args in (["annotate", "export", run, "--out", tmp_path / "page.html"],
                 ["judge", "size", run, *COLOUR, "--out", tmp_path / "j"]):
        result = invoke(*args)
        assert result.exit_code == 2 and one_line(result.output) == f"Error: {bad}: {sentence}", args


def test_skip_missing_also_leaves_out_damaged_images_counted_with_the_reason(tmp_path):
    run = size_run(tmp_path / "images", prompts=3, per_prompt=1)
    gone, empty = sorted(run.glob("images/*.png"))[:2]
    gone.unlink()
    empty.write_bytes(b"")
    result = invoke("judge", "size", run, *COLOUR, "--skip-missing", "--out", tmp_path / "j")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "j" / "summary.json").read_text())
    assert summary["accuracy"]["n"] == 1
    assert summary["details"]["missing_images"] == {
        "n": 2, "note": f"2 of 3 image files are missing or unreadable (1 unreadable) ({gone}, {empty})",
        "files": [f"images/{gone.name}", f"images/{empty.name}"],
        "unreadable": {f"images/{empty.name}": "image file is empty (0 bytes)"}}
    page = tmp_path / "page.html"
    exported = invoke("annotate", "export", run, "--skip-missing", "--out", page)
    assert exported.exit_code == 0 and exported.stdout == f"wrote {page} (1 images)\n"


def test_qa_image_refuses_a_damaged_image_in_one_sentence(tmp_path):
    from qa_helpers import make_vilt

    from spatialprobe.tasks import data as task_data
    from spatialprobe.tasks.yes_no import build_qa

    posrel = load_prompts("posrel")
    synthesize(dataclasses.replace(posrel, items=posrel.items[:2]), tmp_path / "images", "shapes", SHAPES)
    bad = sorted((tmp_path / "images").glob("images/*.png"))[0]
    bad.write_bytes(b"")
    texts = [i.full_text for i in build_qa(task_data.load("posrel")).items]
    model = make_vilt(tmp_path / "vilt", texts, {"yes": 1.0, "no": 0.0})
    result = invoke("qa", "image", "--images", tmp_path / "images", "--model", model, "--out", tmp_path / "qa",
                    "--device", "cpu")
    assert result.exit_code == 2 and error_of(result) == f"Error: {bad}: image file is empty (0 bytes)"
    assert not (tmp_path / "qa" / "summary.json").exists()


# ---- vsr and spatialmqa: coverage ----------------------------------------------------------------

VSR = [{"image": f"00000000000{n}.jpg", "caption": "The cat is left of the dog.", "label": 1,
        "relation": "left of", "annotator_id": 1, "vote_true_validator_id": "[]", "vote_false_validator_id": "[]"}
       for n in range(1, 4)]


def test_vsr_refuses_missing_images_and_states_coverage_with_skip_missing(tmp_path):
    from vl_helpers import tiny_clip

    (tmp_path / "vsr" / "random").mkdir(parents=True)
    (tmp_path / "vsr" / "random" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in VSR))
    solid_image(tmp_path / "coco" / "000000000001.jpg")
    clip = tiny_clip(tmp_path / "clip")
    args = ["vsr", "--model", clip, "--data", tmp_path / "vsr", "--images", tmp_path / "coco", "--device", "cpu"]
    refused = invoke(*args, "--out", tmp_path / "run")
    assert refused.exit_code == 2 and not (tmp_path / "run").exists()
    assert one_line(refused.output) == (
        f"Error: {tmp_path / 'coco'}: 2 of 3 examples have no image here (first: 000000000002.jpg); add the "
        "images, or pass --skip-missing to evaluate the 1 that have one (counted and recorded)")
    result = invoke(*args, "--out", tmp_path / "run", "--skip-missing")
    assert result.exit_code == 0, result.output
    line = "Coverage: 1 of 3 examples (2 images missing, skipped with --skip-missing)."
    assert (tmp_path / "run" / "table.md").read_text().splitlines()[0].startswith(line)
    assert result.stdout.endswith(f"over 1 of 3 examples; results in {tmp_path / 'run'}\n")
    assert f"{line} Missing images are listed in summary.json." in one_line(result.stderr)
    details = json.loads((tmp_path / "run" / "summary.json").read_text())["details"]
    assert details["coverage"] == {"used": 1, "total": 3, "skipped_missing": 2, "skip_missing": True, "limit": None}
    # --limit (a smoke test on part of a folder) reads what is there and says so
    limited = invoke(*args, "--out", tmp_path / "one", "--limit", "2")
    assert limited.exit_code == 0, limited.output
    assert (tmp_path / "one" / "table.md").read_text().splitlines()[0].startswith(
        "Coverage: 1 of 3 examples (--limit 2; 1 images missing, skipped).")
    # a damaged image is one sentence naming it, not a traceback
    (tmp_path / "coco" / "000000000001.jpg").write_bytes(b"")
    damaged = invoke(*args, "--out", tmp_path / "bad", "--skip-missing")
    assert damaged.exit_code == 2
    assert error_of(damaged) == f"Error: {tmp_path / 'coco' / '000000000001.jpg'}: image file is empty (0 bytes)"


def test_spatialmqa_damaged_image_is_one_sentence(tmp_path):
    from vl_helpers import tiny_clip

    record = {"image": "a.jpg", "question": "Where is the cat relative to the dog?",
              "options": ["left of", "right of"], "answer": "left of"}
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "coco").mkdir()
    (tmp_path / "coco" / "a.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    result = invoke("spatialmqa", "--model", tiny_clip(tmp_path / "clip"), "--data", tmp_path / "data",
                    "--images", tmp_path / "coco", "--out", tmp_path / "run", "--device", "cpu")
    assert result.exit_code == 2
    assert error_of(result) == f"Error: {tmp_path / 'coco' / 'a.jpg'}: not a readable image (Truncated File Read)"


# ---- tables print unwrapped -----------------------------------------------------------------------

def test_judge_and_visor_tables_are_not_wrapped_when_piped(tmp_path):
    run = size_run(tmp_path / "images", prompts=2, per_prompt=1)
    result = invoke("judge", "size", run, *COLOUR, "--out", tmp_path / "j")
    assert result.exit_code == 0, result.output
    table = (tmp_path / "j" / "table.md").read_text().splitlines()
    assert max(len(line) for line in table) > 80  # a row wider than a terminal
    printed = result.stdout.splitlines()
    start = printed.index(table[0])
    assert printed[start:start + len(table)] == table
    sr2d = sr2d_run(tmp_path / "sr2d" / "images", count=2, per_prompt=1)
    result = invoke("visor", sr2d, "--detector", "colour", "--out", tmp_path / "v")
    table = (tmp_path / "v" / "table.md").read_text().splitlines()
    assert max(len(line) for line in table) > 80
    printed = result.stdout.splitlines()
    start = printed.index(table[0])
    assert printed[start:start + len(table)] == table


# ---- SR2D prompts --------------------------------------------------------------------------------

def test_sr2d_repeated_unique_id_and_empty_attributes_are_named(tmp_path):
    records = [r for r in build_sr2d() if is_spatial(r)][:3]
    path = tmp_path / "sr2d.json"
    path.write_text(json.dumps([records[0], records[1], dict(records[2], unique_id=records[0]["unique_id"])]))
    with pytest.raises(DataError) as err:
        load_sr2d(path)
    assert str(err.value) == (f"{path}, field '[2].unique_id': record [2] has unique_id 0, as record [0] has; "
                              "each prompt needs its own (VISOR keys images by it)")
    path.write_text(json.dumps([records[0], dict(records[1], obj_1_attributes=[])]))
    with pytest.raises(DataError) as err:
        load_sr2d(path)
    assert str(err.value) == (f"{path}, field '[1].obj_1_attributes': expected a list whose first item is "
                              "the object's class name, got []")
    # an image run of prompt lines sharing one unique_id: refused by visor, naming both prompts
    lines = prompt_lines(records[:2])
    lines[1] = dict(lines[1], unique_id=lines[0]["unique_id"])
    prompts = tmp_path / "dup.jsonl"
    prompts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(DataError) as err:  # synthesize refuses the file before any image is made
        load_prompts(str(prompts))
    assert str(err.value) == f"{prompts}, line 2, field 'unique_id': repeats 0 of line 1"
    # a run made before that check (its prompts not read through load_prompts) is refused by visor
    items = tuple(PromptItem(line["id"], line["text"], {k: v for k, v in line.items() if k not in ("id", "text")})
                  for line in lines)
    synthesize(PromptSet(items, str(prompts)), tmp_path / "images", "shapes", SHAPES)
    result = invoke("visor", tmp_path / "images", "--detector", "colour", "--out", tmp_path / "v")
    assert result.exit_code == 2 and not (tmp_path / "v").exists()
    assert one_line(result.output) == (f"Error: {prompts}, field 'unique_id': prompt '1' has unique_id 0, as "
                                       "prompt '0' has; each prompt needs its own (VISOR keys images by it)")


def test_consistency_of_an_image_run_is_one_sentence(tmp_path):
    run = size_run(tmp_path / "images", prompts=2, per_prompt=1)
    before = tree_digest(run)
    result = invoke("consistency", run)
    assert result.exit_code == 2 and one_line(result.output) == (
        f"Error: {run} is an image run (spatialprobe synthesize): it holds images, not answers; judge it "
        f"first (spatialprobe judge size {run}) and give the judge run's directory.")
    assert tree_digest(run) == before
