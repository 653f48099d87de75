"""VSI-Bench and VSI-Bench-Debiased (spatialprobe/benchmarks/vsibench.py): the dataset folder with
its videos (tiny mp4s written with PyAV), frames sampled at the authors' positions, the Debiased
split as create_pq.py writes it, the first-token reader, MRA and the unweighted mean of categories
equal to thinking-in-space (tests/official) on thousands of random replies, and ``spatialprobe bench
vsibench`` through the CLI."""

from __future__ import annotations

import json
import random
import sys
from collections import Counter

import pytest
from bench_a_helpers import bench_a, needs_a_llava
from five_copies import vsibench as write_copy
from five_helpers import rows, run_scripted, scored_rows
from official import vsibench as theirs
from official.replies import replies
from typer.testing import CliRunner

from spatialprobe.benchmarks.video_frames import RULES, frame_indices
from spatialprobe.cli import app
from spatialprobe.engine.metrics import official_metrics
from spatialprobe.engine.rebuild import rebuild_source
from spatialprobe.errors import DataError, UsageError

pytest.importorskip("av")
NUMBERS = ["{g}", "{g}.", "{g} meters", "{h}", "{t}", "The answer is {g}", "about {g}", "two", "", "3.5 m", "-{g}",
           "{g}0", "{g} square meters", "0"]


def _numeric(gold: str, rng: random.Random) -> str:
    value = float(gold)
    return rng.choice(NUMBERS).format(g=gold, h=f"{value * rng.uniform(0.3, 1.7):.2f}", t=f"{value * 1.45:.4f}")


def _said(item, rng: random.Random) -> str:
    if item.options:
        return replies(list(item.options), item.gold, 1, seed=rng.randrange(10**9))[0].text
    return _numeric(item.gold, rng)


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    return write_copy(tmp_path_factory.mktemp("vsibench"), n=60)


def test_the_frame_positions_are_the_authors(tmp_path):
    for n in range(1, 80, 3):
        for k in (1, 4, 8, 16, 32):
            assert frame_indices("linspace", n, k) == theirs.decord_uniform_indices(n, k)
            assert frame_indices("pyav", n, k) == theirs.pyav_indices(n, k)
            assert frame_indices("gpt4v", n, k) == theirs.gpt4v_indices(n, k)
            assert frame_indices("vila", n, k) == theirs.vila_indices(n, k)
            assert frame_indices("internvl2", n, k) == theirs.internvl2_indices(30.0, n - 1, num_segments=k)
            assert frame_indices("lmms", n, k) == theirs.lmms_frame_indices(n, k)
    assert set(RULES) == {"linspace", "pyav", "gpt4v", "vila", "internvl2", "lmms"}


@pytest.mark.parametrize("rule", ["linspace", "internvl2", "pyav"])
def test_the_frames_shown_are_decoded_at_those_positions(copy, rule):
    folder, _ = copy
    source = rebuild_source({"name": "vsibench", "data": str(folder), "options": {"frames": "5", "sampling": rule}}, 0)
    from PIL import Image

    frame_counts = {"arkitscenes": 17, "scannet": 21, "scannetpp": 25}
    for item in source.items[:3]:
        shown = (item.image, *item.views)
        grey = [Image.open(path).getpixel((16, 16))[0] for path in shown]
        assert [round(g / 10) for g in grey] == frame_indices(rule, frame_counts[item.fields["dataset"]], 5)


def test_the_dataset_folder_is_read_with_its_types_units_and_debiased_split(copy):
    folder, records = copy
    source = rebuild_source({"name": "vsibench", "data": str(folder), "options": {"frames": "4"}}, 0)
    assert len(source.items) == 60 and source.dataset.startswith("vsibench@")
    assert Counter(i.fields["question_type"] for i in source.items) == dict.fromkeys(theirs.MCA_QUESTION_TYPES
                                                                                     + theirs.NA_QUESTION_TYPES, 6)
    assert len({i.fields["video"] for i in source.items}) == 3 and source.spec.clusters == ("video",)
    mca = source.items[0]
    assert mca.options == tuple(o[3:] for o in records[0]["options"]) and 1 + len(mca.views) == 4
    assert mca.question == "\n".join(["These are frames of a video.", records[0]["question"],
                                      "Options:\n" + "\n".join(records[0]["options"]),
                                      "Answer with the option's letter from the given choices directly."])
    numeric = next(i for i in source.items if not i.options)
    assert numeric.question.endswith("\nPlease answer the question using a single word or phrase.")
    debiased = rebuild_source({"name": "vsibench", "data": str(folder), "subset": "debiased",
                               "options": {"frames": "4"}}, 0)
    kept, _ = theirs.split_debiased(records, (folder / "pruned_ids.txt").read_text())
    assert [i.key for i in debiased.items] == [str(r["id"]) for r in kept]
    assert debiased.dataset.startswith("vsibench-debiased@") and debiased.dataset != source.dataset
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    alone = folder.parent / "debiased-only"
    alone.mkdir()
    pq.write_table(pa.Table.from_pylist([{**r, "options": r["options"]} for r in kept]),
                   alone / "test_debiased.parquet")
    parquet = rebuild_source({"name": "vsibench", "data": str(alone), "subset": "debiased",
                              "images": str(folder), "options": {"frames": "4"}}, 0)
    assert [i.key for i in parquet.items] == [i.key for i in debiased.items]


def _official(items, said, records):
    by_id = {str(r["id"]): r for r in records}
    return theirs.aggregate([theirs.process_result(by_id[i.key], t) for i, t in zip(items, said, strict=True)])


def test_the_official_numbers_equal_thinking_in_space_on_random_replies(copy):
    folder, records = copy
    from spatialprobe.benchmarks.local_copy import text_only

    with text_only():  # the scoring alone: no frame is decoded
        source = rebuild_source({"name": "vsibench", "data": str(folder)}, 0)
    rng = random.Random(13)
    for _ in range(50):  # 3,000 replies
        said = [_said(i, rng) for i in source.items]
        got = scored_rows(source, said)
        metrics, _ = official_metrics(got, source.spec, source.official)
        expected = _official(source.items, said, records)
        assert metrics["vsibench"].mean == pytest.approx(expected["overall"], abs=1e-9)
        per_type = theirs._per_type([theirs.process_result(r, t) for r, t in zip(records, said, strict=True)])
        for key, value in per_type.items():  # "<type>_accuracy" or "<type>_MRA:.5:.95:.05", fractions
            kind = key.rsplit("_accuracy", 1)[0].rsplit("_MRA", 1)[0]
            assert metrics["score"].breakdown[f"question_type {kind}"].mean == pytest.approx(100 * value, abs=1e-9)
        mca = [theirs.process_result(r, t)["accuracy"] for r, t in zip(records, said, strict=True) if r["options"]]
        assert metrics["accuracy"].mean == pytest.approx(100 * sum(mca) / len(mca), abs=1e-9)
        na = [theirs.process_result(r, t)["MRA:.5:.95:.05"]
              for r, t in zip(records, said, strict=True) if not r["options"]]
        assert metrics["mra"].mean == pytest.approx(100 * sum(na) / len(na), abs=1e-9)


def test_bench_asks_the_frames_and_reports_the_authors_overall(copy, tmp_path):
    folder, records = copy
    source = rebuild_source({"name": "vsibench", "data": str(folder), "options": {"frames": "4"}}, 0)
    rng = random.Random(21)
    script = {i.question: [_said(i, rng)] for i in source.items}
    summary = run_scripted("vsibench", folder, script, tmp_path, "--option", "frames=4")
    expected = _official(source.items, [script[i.question][0] for i in source.items], records)
    metrics = summary["metrics"]
    assert metrics["vsibench"]["mean"] == pytest.approx(expected["overall"])
    assert metrics["vsibench"]["ci"][0] < metrics["vsibench"]["mean"] < metrics["vsibench"]["ci"][1]
    assert summary["intervals"]["clusters"] == ["video"]
    assert summary["details"]["frames"] == {"count": 4, "sampling": "linspace", "decoder": "PyAV"}
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["settings"]["source"]["options"] == {"frames": "4"}
    found = rows(tmp_path)
    assert all(r["mra"] is None for r in found if r["question_type"] in theirs.MCA_QUESTION_TYPES)
    # strict beside each official number: a letter exactly, or exactly a number (its MRA as theirs)
    assert summary["details"]["readers"]["official"] == "vsibench"
    by_key = {i.key: i for i in source.items}
    strict_mra, strict_right = [], []
    for row in found:
        item, text = by_key[row["instance_id"]], row["reply"].strip()
        if item.options:
            strict_right.append(text == item.gold or text.lower() == item.options[ord(item.gold) - 65].lower())
        else:
            try:
                strict_mra.append(theirs.MRA(float(text), float(item.gold)))
            except ValueError:
                strict_mra.append(0.0)
    assert any(strict_mra) and any(strict_right)
    assert metrics["strict_mra"]["mean"] == pytest.approx(100 * sum(strict_mra) / len(strict_mra))
    assert metrics["strict_accuracy"]["mean"] == pytest.approx(100 * sum(strict_right) / len(strict_right))
    assert metrics["strict_mra"]["ci"] is not None and metrics["strict_vsibench"]["ci"] is not None


def test_without_pyav_the_run_is_refused_naming_the_extra(copy, tmp_path, monkeypatch):
    folder, _ = copy
    monkeypatch.setitem(sys.modules, "av", None)
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))  # no frame cached
    said = CliRunner().invoke(app, ["bench", "vsibench", "--data", str(folder), "--model", "dummy",
                                    "--out", str(tmp_path / "run")])
    assert said.exit_code == 2 and "'video' extra" in said.output and "pip install 'spatialprobe[video]'" in said.output


def test_bad_options_and_records_are_refused(copy, tmp_path):
    folder, records = copy
    with pytest.raises(UsageError, match="sampling is one of linspace"):
        rebuild_source({"name": "vsibench", "data": str(folder), "options": {"sampling": "random"}}, 0)
    with pytest.raises(UsageError, match="needs the pruned ids"):
        rebuild_source({"name": "vsibench", "data": str(folder / "test.jsonl"), "subset": "debiased",
                        "options": {"pruned": str(tmp_path / "none.txt")}}, 0)
    broken = tmp_path / "test.jsonl"
    broken.write_text("".join(json.dumps({**r, "ground_truth": "0"} if n == 6 else r) + "\n"
                              for n, r in enumerate(records)))
    with pytest.raises(DataError, match=r"line 7, field 'ground_truth': 0: MRA divides"):
        rebuild_source({"name": "vsibench", "data": str(broken), "images": str(folder)}, 0)


@needs_a_llava
def test_a_tiny_model_is_asked_the_frames(copy, tmp_path):
    folder, records = copy
    metrics = bench_a("vsibench", folder, tmp_path / "run", "--option", "frames=2", "--limit", "20")
    mca = [r for r in records[:20] if r["options"]]
    assert metrics["accuracy"]["mean"] == pytest.approx(100 * sum(r["ground_truth"] == "A" for r in mca) / len(mca))


def test_the_questions_are_audited_blind_without_their_videos(tmp_path):
    folder, _ = write_copy(tmp_path / "copy", n=60)
    for mp4 in folder.glob("*/*.mp4"):
        mp4.unlink()  # the questions alone: no video is needed
    said = CliRunner().invoke(app, ["audit", "blind", "vsibench", "--data", str(folder), "--folds", "3"])
    assert said.exit_code == 0, said.output
    assert "(24 items without options left out): 36 items, 3 folds grouped by videos" in said.output
