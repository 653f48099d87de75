"""SpatialEval (spatialprobe/benchmarks/spatialeval.py): a small copy in its Hugging Face layout
(``tqa/`` and ``vqa/`` folders of Parquet files, images embedded) through the real loader and
``spatialprobe bench`` with a tiny LLaVA; the exact-match parser against the authors' quirk; the
official reader equals the authors' evals/evaluation.py as transcribed in tests/official/spatialeval.py
(``official_correct``, no model-specific branch) on random replies."""

from __future__ import annotations

import io
import json
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from official import spatialeval as o_spatialeval

from spatialprobe.benchmarks.spatialeval import from_settings
from spatialprobe.readers.spatialeval import reference_prediction

QUESTIONS = [  # (id, text's question, options, gold letter)
    ("spatialmap.1.0", "In which direction is the Inn relative to the Cafe?",
     ["Northeast", "Northwest", "Southwest", "Southeast"], "B"),
    ("spatialmap.1.2", "How many objects are in the Southwest of the Cafe?", ["0", "90", "3", "1"], "A"),
    ("mazenav.1.2", "Is the path from S to E the shortest?", ["Yes", "No"], "B"),
    ("mazenav.2.2", "Is the path from S to E the shortest?", ["Yes", "No"], "A"),
    ("spatialgrid.1.1", "What animal is in the top-left block?", ["cat", "dog", "rabbit", "giraffe"], "C"),
    ("spatialreal.1.0", "How many chairs are there?", ["2", "4", "6", "8"], "B"),
]


def _png(colour):
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _rows(mode: str) -> list[dict]:
    rows = []
    for n, (key, question, options, letter) in enumerate(QUESTIONS):
        listed = ", ".join(f"{chr(65 + i)}. {o}" for i, o in enumerate(options))
        text = f"{'' if mode == 'vqa' else 'Consider the map described here. '}{question} Available options: {listed}."
        row = {"id": key, "text": text, "oracle_answer": options[ord(letter) - 65], "oracle_option": letter,
               "oracle_full_answer": f"{letter}. {options[ord(letter) - 65]}"}
        if mode != "tqa":
            row["image"] = {"bytes": _png((40 * n, 0, 0)), "path": f"{n}.png"}
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("SpatialEval")
    for mode in ("tqa", "vqa"):
        (root / mode).mkdir()
        pq.write_table(pa.Table.from_pylist(_rows(mode)), root / mode / "test-00000-of-00001.parquet")
    return root


def _source(copy, mode="tqa", **options):
    return from_settings({"name": "spatialeval", "data": str(copy), "subset": mode, "options": options}, 0)


def test_the_layout_reads_with_options_gold_scenes_and_images(copy, tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path))
    tqa = _source(copy)
    assert [i.gold for i in tqa.items] == ["northwest", "0", "no", "yes", "rabbit", "4"]
    assert tqa.items[0].options == ("Northeast", "Northwest", "Southwest", "Southeast")
    assert tqa.items[0].fields["scene"] == "spatialmap.1" and all(i.image is None for i in tqa.items)
    vqa = _source(copy, "vqa", task="mazenav")
    assert [i.key for i in vqa.items] == ["mazenav.1.2", "mazenav.2.2"] and Path(vqa.items[0].image).is_file()
    from spatialprobe.errors import UsageError

    with pytest.raises(UsageError, match="--option task=maze is not a SpatialEval task"):
        _source(copy, task="maze")


def test_strict_does_not_count_none_as_no_nor_90_as_0_where_the_authors_parser_does(copy):
    from spatialprobe.readers.base import Asked
    from spatialprobe.readers.spatialeval import read_spatialeval
    from spatialprobe.readers.strict import read_strict

    items = {i.key: i for i in _source(copy).items}
    maze, count = (Asked(i.key, i.options, i.labels, i.gold, i.fields)
                   for i in (items["mazenav.1.2"], items["spatialmap.1.2"]))
    assert read_spatialeval("None of the paths.", maze).label == "no" == maze.gold  # the quirk: counted right
    assert read_spatialeval("There are 90 objects.", count).label == "0" == count.gold
    assert read_strict("None of the paths.", maze).label is None  # strict: nothing read, wrong
    assert read_strict("There are 90 objects.", count).label is None


def test_bench_with_a_tiny_llava_that_always_says_yes(copy, tmp_path, monkeypatch):
    """By generation, a model that replies "Yes Yes" to everything is right on the one yes question
    of six under the authors' parser (no digits, no "no" in "yes"), on none under strict."""
    from bench_helpers import yes_llava
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    llava = yes_llava()
    if llava is None:
        pytest.skip("../shared/models is not present")
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))
    out = tmp_path / "run"
    said = CliRunner().invoke(app, ["bench", "spatialeval", "--data", str(copy), "--subset", "vqa",
                                    "--model", str(llava), "--out", str(out), "--device", "cpu",
                                    "--protocol", "generate", "--max-new-tokens", "2"])
    assert said.exit_code == 0, said.output
    summary = json.loads((out / "summary.json").read_text())
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert {r["reply"].strip(" .").lower()[:3] for r in rows} == {"yes"}
    assert summary["metrics"]["accuracy"]["mean"] == pytest.approx(100 / 6)
    assert summary["metrics"]["strict_accuracy"]["mean"] == 0.0  # "Yes Yes" is no option's text: strict reads none
    read = [r for r in rows if r["pred"] != "--"]  # what the authors' extractor read something in
    assert summary["details"]["readers"]["n"] == len(read) == 5  # all of them strict reads nothing in


PIECES = ["Yes", "No", "none", "not", "no", "nine", "0", "90", "3", "12", "two", "A. Northeast", "B. 3",
          "northwest", "The Inn is in the southeast of the Cafe", "There are 4 right turns", "a total of 5 turns",
          "the answer is 2", "cat", "rabbit", "dog", "C. Oak Inn is here", "\n\n1. ", "is the shortest path",
          "Answer:** 7", ".", ",", "(B)"]


@pytest.mark.parametrize("task, qid, golds", [
    ("spatialmap", 0, ["northeast", "southwest"]), ("spatialmap", 1, ["oak inn", "cafe"]),
    ("spatialmap", 2, ["0", "3", "no"]), ("spatialmap", 3, ["1"]), ("mazenav", 0, ["4", "0"]),
    ("mazenav", 1, ["5", "2"]), ("mazenav", 2, ["yes", "no"]), ("spatialgrid", 0, ["3", "12"]),
    ("spatialgrid", 1, ["cat", "rabbit"])])
def test_reference_mode_equals_the_authors_evaluation_on_random_replies(task, qid, golds):
    rng = random.Random(f"{task}-{qid}")
    for _ in range(334):
        gold = rng.choice(golds)
        reply = " ".join(rng.choice(PIECES) for _ in range(rng.randint(0, 5)))
        want = o_spatialeval.official_correct(reply, f"{task}.0.{qid}", gold)
        got = reference_prediction(reply, gold, task, qid)
        assert (got == gold) == bool(want), (reply, task, qid, gold)
        assert want is not None or got == "--"
