"""Benchmarks' prompt files (T2I-CompBench 2-D / 3-D, GenEval position) read with their protocol,
and synthesize -> judge reproducing it: images per prompt, image- and prompt-level scores.

The fixtures are a handful of lines written here in each file's exact format (T2I-CompBench's
spatial_val.txt: CRLF line ends, no final newline, "a airplane"; GenEval's
evaluation_metadata.jsonl: one JSON record a line, position and other tags mixed); no peer file
is copied. Expected scores are worked out from the images the seed drew (asserted first).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.errors import DataError
from spatialprobe.imagestore import ImageStore
from spatialprobe.synthesis import load_prompts
from spatialprobe.synthesis.benchmark_prompts import PROTOCOLS

runner = CliRunner()

T2I_2D = ["a giraffe next to a lamp", "a girl on the top of a frog", "a mouse on side of a key",
          "a bee on the right of a refrigerator", "a airplane on the bottom of a woman",
          "a mouse near a bowl", "a frog on the left of a book"]
T2I_3D = ["a dog in front of a desk", "a cat behind a boy", "a chair hidden by a mouse",
          "a desk hidden by a desk"]


def geneval_record(a, relation, b):
    return {"tag": "position", "include": [{"class": b, "count": 1},
                                           {"class": a, "count": 1, "position": [relation, 0]}],
            "prompt": f"a photo of a {a} {relation} a {b}"}


OTHER_TAGS = [{"tag": "single_object", "include": [{"class": "bench", "count": 1}], "prompt": "a photo of a bench"},
              {"tag": "counting", "include": [{"class": "orange", "count": 3}],
               "exclude": [{"class": "orange", "count": 4}], "prompt": "a photo of three oranges"}]


def write_t2i(folder, lines, name="spatial_val.txt"):
    path = folder / name
    path.write_bytes("\r\n".join(lines).encode())  # as the released file: CRLF, no final newline
    return path


def write_geneval(folder, records, name="evaluation_metadata.jsonl"):
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def invoke(*args, code=0):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output + repr(result.exception)
    return result


# ---- reading the files --------------------------------------------------------------------------

def test_t2i_compbench_2d_lines_become_posrel2d_prompts_with_the_protocol(tmp_path):
    path = write_t2i(tmp_path, T2I_2D)
    prompts = load_prompts(str(path))
    assert prompts.spec == f"t2i-compbench:{path.resolve()}" and prompts.task == "posrel2d"
    assert prompts.protocol == PROTOCOLS["t2i-compbench"]
    assert prompts.protocol["images_per_prompt"] == 10 and prompts.protocol["rule"] == "t2i-compbench"
    assert [i.prompt_id for i in prompts.items] == [f"line-{n:04d}" for n in range(1, 8)]
    assert [(i.meta["obj_a"], i.meta["label"], i.meta["obj_b"]) for i in prompts.items] == [
        ("giraffe", "beside", "lamp"), ("girl", "above", "frog"), ("mouse", "beside", "key"),
        ("bee", "right of", "refrigerator"), ("airplane", "below", "woman"), ("mouse", "beside", "bowl"),
        ("frog", "left of", "book")]
    second = prompts.items[1]
    assert second.prompt == "a girl on the top of a frog"
    assert second.meta == {"task": "posrel2d", "obj_a": "girl", "obj_b": "frog", "label": "above",
                           "relation_phrase": "on the top of", "line": 2,
                           "benchmark": PROTOCOLS["t2i-compbench"], "benchmark_objects": ["person", "frog"]}
    assert prompts.notes == ()


def test_t2i_compbench_3d_lines_become_posrel3d_prompts(tmp_path):
    path = write_t2i(tmp_path, T2I_3D, "3d_spatial_val.txt")
    prompts = load_prompts(str(path))
    assert prompts.task == "posrel3d" and prompts.protocol == PROTOCOLS["t2i-compbench-3d"]
    assert prompts.protocol["rule"] == "t2i-compbench-3d" and prompts.protocol["images_per_prompt"] == 10
    assert [(i.meta["obj_a"], i.meta["label"], i.meta["obj_b"], i.meta["relation_phrase"])
            for i in prompts.items] == [("dog", "in front of", "desk", "in front of"),
                                        ("cat", "behind", "boy", "behind"),
                                        ("chair", "hidden", "mouse", "hidden by"),
                                        ("desk", "hidden", "desk", "hidden by")]
    assert prompts.items[1].meta["benchmark_objects"] == ["cat", "person"]
    assert prompts.notes == ("line(s) 4 name the same object twice: a judge finds one box for both, "
                             "as the benchmark's script does",)


def test_geneval_position_records_are_read_and_other_tags_skipped_with_a_note(tmp_path):
    records = [geneval_record("dog", "right of", "teddy bear"), *OTHER_TAGS,
               geneval_record("wine glass", "above", "kite")]
    prompts = load_prompts(str(write_geneval(tmp_path, records)))
    assert prompts.task == "posrel2d" and prompts.protocol == PROTOCOLS["geneval"]
    assert prompts.protocol["images_per_prompt"] == 4 and prompts.protocol["prompt_score"] == "any"
    assert [i.prompt_id for i in prompts.items] == ["00000", "00003"]  # GenEval's folder of the line
    first = prompts.items[0]
    assert first.prompt == "a photo of a dog right of a teddy bear"
    assert first.meta == {"task": "posrel2d", "obj_a": "dog", "obj_b": "teddy bear", "label": "right of",
                          "relation_phrase": "right of", "line": 1, "benchmark": PROTOCOLS["geneval"],
                          "geneval_metadata": records[0]}
    assert prompts.notes == ("skipped 2 GenEval record(s) of other tags (single_object 1, counting 1): "
                             "they ask for objects, counts or colours, not a relation between two objects",)


def test_an_explicit_benchmark_spec_reads_any_file_name_and_plain_names_stay_plain(tmp_path):
    plain = write_t2i(tmp_path, T2I_2D[:2], "mine.txt")
    assert load_prompts(str(plain)).protocol is None  # plain prompt lines, as before
    assert load_prompts(str(plain)).items[1].meta == {"line": 2, "template": "none"}
    explicit = load_prompts(f"t2i-compbench:{plain}")
    assert explicit.spec == f"t2i-compbench:{plain.resolve()}"
    assert [i.meta["label"] for i in explicit.items] == ["beside", "above"]
    again = load_prompts(explicit.spec)  # the recorded spec loads the same prompts
    assert again.version == explicit.version
    renamed = write_geneval(tmp_path, [geneval_record("cup", "left of", "cow")], "positions.jsonl")
    assert load_prompts(str(renamed)).protocol == PROTOCOLS["geneval"]  # told by its records
    assert load_prompts(f"geneval:{renamed}").items[0].meta["label"] == "left of"


def test_a_line_that_is_not_a_t2i_compbench_prompt_is_named_with_its_line_and_field(tmp_path):
    path = write_t2i(tmp_path, ["a dog on the left of a cat", "a dog under a cat"])
    with pytest.raises(DataError) as err:
        load_prompts(str(path))
    relations = ", ".join(repr(p) for p in ("on the left of", "on the right of", "on the top of",
                                            "on top of", "on the bottom of", "on bottom of",
                                            "on side of", "next to", "near"))
    assert str(err.value) == (
        f"{path.resolve()}, line 2, field 'text': 'a dog under a cat' is not a T2I-CompBench 2-D "
        f"spatial prompt: expected 'a OBJECT RELATION a OBJECT' with a relation of {relations} (read "
        "as t2i-compbench because of its name 'spatial_val.txt'; rename a file of plain prompt lines "
        "so that it does not start with 'spatial' or '3d_spatial')")
    three_d = write_t2i(tmp_path, ["a dog in front of a cat", "a dog on the left of a cat"], "x.txt")
    with pytest.raises(DataError, match=r"x.txt, line 2, field 'text': 'a dog on the left of a cat' is not "
                                        r"a T2I-CompBench\+\+ 3-D spatial prompt: .* \(read as "
                                        r"t2i-compbench-3d as given\)$"):
        load_prompts(f"t2i-compbench-3d:{three_d}")


@pytest.mark.parametrize("change, field, message", [
    (lambda r: r["include"][1].update(count=2), "include[1].count",
     "expected 1 (the position rule reads one box of each object), got 2"),
    (lambda r: r["include"][1].update(position=["near", 0]), "include[1].position",
     "expected [RELATION, 0] with a relation of left of, right of, above, below (relative to the "
     "first object), got ['near', 0]"),
    (lambda r: r["include"][0].pop("class"), "include[0].class", "expected an object name, got None"),
    (lambda r: r.pop("tag"), "tag", "expected GenEval's task tag (a string), got None"),
    (lambda r: r.update(prompt=""), "prompt", "expected the prompt text, got ''"),
])
def test_a_bad_geneval_record_is_named_with_its_line_and_field(tmp_path, change, field, message):
    bad = geneval_record("dog", "right of", "cat")
    change(bad)
    path = write_geneval(tmp_path, [geneval_record("cup", "left of", "cow"), bad])
    with pytest.raises(DataError) as err:
        load_prompts(f"geneval:{path}")
    assert str(err.value) == f"{path.resolve()}, line 2, field '{field}': {message}"


def test_a_geneval_file_without_position_records_is_refused(tmp_path):
    path = write_geneval(tmp_path, OTHER_TAGS)
    with pytest.raises(DataError) as err:
        load_prompts(str(path))
    assert str(err.value) == (f"{path.resolve()}, field 'tag': the file holds no GenEval position "
                              "records (tag 'position'), the only ones a position judge scores")


# ---- synthesize -> judge reproduces the protocol ------------------------------------------------

def drawn_reversed(run):
    made = sorted(ImageStore(run).rows(), key=lambda r: (r["prompt_id"], r["image_index"]))
    flags: dict[str, list[bool]] = {}
    for row in made:
        flags.setdefault(row["prompt_id"], []).append(row["drawn"]["reversed"])
    return flags


def judged(out):
    summary = json.loads((out / "summary.json").read_text())
    return summary, (out / "table.md").read_text()


def test_t2i_compbench_2d_end_to_end_gives_the_known_image_and_prompt_level_scores(tmp_path):
    lines = ["a dog on the left of a cat", "a bird on the top of a chair", "a cup on the right of a bowl",
             "a horse on the bottom of a lamp"]
    path = write_t2i(tmp_path, lines)
    run = tmp_path / "images"
    invoke("synthesize", "--prompts", path, "--backend", "shapes", "-n", "3", "--error-rate", "0.5",
           "--out", run)
    assert json.loads((run / "config.json").read_text())["settings"]["images_per_prompt"] == 3  # -n wins
    flags = drawn_reversed(run)
    assert flags == {"line-0001": [True, False, True], "line-0002": [True, True, True],  # what seed 0 drew
                     "line-0003": [False, False, False], "line-0004": [True, True, False]}
    invoke("judge", "posrel2d", run, "--detector", "colour", "--rule", "t2i-compbench", "--out", tmp_path / "j")
    summary, table = judged(tmp_path / "j")
    m = summary["metrics"]
    # A drawn relation scores 1 (both boxes whole: confidence 1; no overlap): 0.25 + 0.25 + 1/2 = 1.
    # A reversed one scores 0 for its position: 0.25 + 0.25 = 0.5, not under the 0.5 floor.
    image = {pid: [0.5 if f else 1.0 for f in fl] for pid, fl in flags.items()}
    assert m["t2i_compbench_score"]["mean"] == pytest.approx((5 * 1.0 + 7 * 0.5) / 12, abs=1e-12)
    per_prompt = [sum(v) / len(v) for v in image.values()]  # 2/3, 1/2, 1, 2/3
    assert m["t2i_compbench_prompt_score"]["mean"] == pytest.approx(sum(per_prompt) / 4, abs=1e-12)
    assert m["t2i_compbench_prompt_score"]["n"] == 4 and m["t2i_compbench_prompt_score"]["ci"] is not None
    assert m["accuracy"]["mean"] == pytest.approx(100 * 5 / 12, abs=1e-12)
    assert summary["details"]["prompt_set"]["departures"] == [
        "3 image(s) per prompt judged, where its protocol makes 10"]
    assert ("Prompts: T2I-CompBench 2-D spatial (10 images per prompt, --rule t2i-compbench); departs "
            "from it: 3 image(s) per prompt judged, where its protocol makes 10") in table
    assert "T2I-CompBench prompt-level score (mean over 4 prompts of their images' mean): 0.7083" in table


def test_geneval_end_to_end_gives_the_known_image_and_prompt_level_accuracy(tmp_path):
    records = [geneval_record("dog", "right of", "cat"), OTHER_TAGS[0],
               geneval_record("cup", "above", "bowl"), geneval_record("horse", "left of", "lamp")]
    path = write_geneval(tmp_path, records)
    run = tmp_path / "images"
    result = invoke("synthesize", "--prompts", path, "--backend", "shapes", "--error-rate", "0.5",
                    "--seed", "2", "--out", run)
    assert "note: 4 images per prompt, as GenEval position's protocol makes them (-n overrides)" in result.output
    assert json.loads((run / "config.json").read_text())["settings"]["images_per_prompt"] == 4
    flags = drawn_reversed(run)
    assert flags == {"00000": [True] * 4, "00002": [False, True, True, True],  # what seed 2 drew
                     "00003": [False, True, True, True]}
    invoke("judge", "posrel2d", run, "--detector", "colour", "--rule", "geneval", "--out", tmp_path / "j")
    summary, table = judged(tmp_path / "j")
    m = summary["metrics"]
    # an image is correct when drawn as asked (2 of 12); a prompt when any of its 4 is (2 of 3);
    # the registry computes 100 × (a/b), as scikit-learn does, so the last bit may differ
    assert m["geneval_position_accuracy"]["mean"] == pytest.approx(100.0 * 2 / 12, rel=1e-12)
    assert m["geneval_prompt_accuracy"]["mean"] == pytest.approx(100.0 * 2 / 3, rel=1e-12)
    assert m["geneval_prompt_accuracy"]["n"] == 3
    assert summary["details"]["prompt_set"]["departures"] == []
    assert "GenEval prompt-level accuracy (prompts with a correct image, of 3; its " \
           "evaluation/summary_scores.py): 66.7%" in table
    # judged by another rule: the image-level score of that rule, no prompt-level score, and said
    invoke("judge", "posrel2d", run, "--detector", "colour", "--rule", "t2i-compbench", "--out", tmp_path / "k")
    other, table = judged(tmp_path / "k")
    assert "geneval_prompt_accuracy" not in other["metrics"] and "t2i_compbench_prompt_score" not in other["metrics"]
    assert other["details"]["prompt_set"]["departures"] == [
        "judged with --rule t2i-compbench, where its protocol uses --rule geneval (no prompt-level score)"]


def test_without_a_benchmark_file_images_per_prompt_stays_one(tmp_path):
    plain = tmp_path / "mine.txt"
    plain.write_text("a dog on the left of a cat\n")
    result = invoke("synthesize", "--prompts", plain, "--backend", "shapes", "--out", tmp_path / "run")
    assert "images per prompt" not in result.output
    assert json.loads((tmp_path / "run" / "config.json").read_text())["settings"]["images_per_prompt"] == 1


def test_the_3d_split_makes_its_protocols_ten_images_per_prompt(tmp_path):
    path = write_t2i(tmp_path, T2I_3D[:2], "3d_spatial_val.txt")
    result = invoke("synthesize", "--prompts", path, "--backend", "shapes", "--out", tmp_path / "run")
    assert "note: 10 images per prompt, as T2I-CompBench++ 3-D spatial's protocol makes them" in result.output
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["settings"]["images_per_prompt"] == 10 and config["settings"]["task"] == "posrel3d"
    assert config["settings"]["prompt_set"]["spec"] == f"t2i-compbench-3d:{path.resolve()}"
    assert len(ImageStore(tmp_path / "run").rows()) == 20
