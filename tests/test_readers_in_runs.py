"""Both readers in every run, through the command line: ``spatialprobe bench site`` asked of a
model adapter whose replies the test writes (tests/scripted_replier.py, chosen by its folder's
config.json as a checkpoint is), random replies of every shape (tests/official/replies.py). The
run's summary carries each official metric under SITE's reader (equal to the authors' code,
tests/official/site.py) and under strict, with intervals, the disagreement count and examples;
table.md shows both; ``report A B`` pairs every official metric; ``compare`` heads with the
first; ``audit parse`` names the benchmark's own reader."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest
import scripted_replier
from official import site as o_site
from official.replies import SHAPES, reply
from typer.testing import CliRunner
from vl_helpers import solid_image

from spatialprobe.cli import app

N = 74  # two replies of each of the 37 shapes


def _copy(root: Path) -> list[dict]:
    rng = random.Random(3)
    words = ["left", "right", "above", "below", "behind"]
    docs = []
    for n in range(N):
        k = rng.randint(2, 5)
        solid_image(root / f"{n}.png", (3 * n % 255, 90, 40), size=8)
        docs.append({"id": f"q{n}", "question": f"Where is object {n}?", "options": rng.sample(words, k),
                     "answer": rng.choice(string.ascii_uppercase[:k]), "category": "spatial relationship reasoning",
                     "dataset": f"d{n % 2}", "visual": [f"{n}.png"]})
    (root / "site.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    return docs


def _replies(docs: list[dict], seed: int) -> dict[str, str]:
    """Item id -> a reply: each shape twice, the letter meant the gold one about half the time."""
    rng = random.Random(seed)
    return {d["id"]: reply(rng, d["options"], d["answer"], SHAPES[n % len(SHAPES)]).text for n, d in enumerate(docs)}


def _bench(root: Path, replies: dict[str, str], docs: list[dict], out: Path) -> dict:
    model = scripted_replier.write(out.parent / f"{out.name}-model",
                                   {d["question"]: replies[d["id"]] for d in docs})
    said = CliRunner().invoke(app, ["bench", "site", "--data", str(root / "site.jsonl"), "--images", str(root),
                                    "--model", str(model), "--protocol", "generate", "--out", str(out)])
    assert said.exit_code == 0, said.output
    return json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    docs = _copy(root)
    found = []
    with scripted_replier.registered():
        for seed in (0, 1):
            replies = _replies(docs, seed)
            found.append((_bench(root, replies, docs, root / f"run{seed}"), replies, root / f"run{seed}"))
    return docs, found


def _authors(docs: list[dict], replies: dict[str, str]) -> tuple[float, float]:
    out = [o_site.spatial_process_results(d, [replies[d["id"]]], rng=random.Random(f"site|{d['id']}")) for d in docs]
    return (o_site.spatial_aggregate_results([o["accuracy"] for o in out]),
            o_site.spatial_aggregate_results([o["chance_adjusted_acc"] for o in out]))


def _strict(docs: list[dict], replies: dict[str, str]) -> list[bool]:
    """Right under strict, written out: the stripped reply is the gold letter or the gold option's
    text in any case (the plain reader of tests/official/README.md)."""
    right = []
    for d in docs:
        text, gold = replies[d["id"]].strip(), d["answer"]
        right.append(text == gold or text.lower() == d["options"][ord(gold) - 65].lower())
    return right


def test_every_run_reports_both_readers_numbers_with_intervals_and_their_disagreements(runs):
    docs, found = runs
    for summary, replies, _ in found:
        m = summary["metrics"]
        accuracy, adjusted = _authors(docs, replies)
        assert round(m["accuracy"]["mean"], 5) == accuracy  # SITE's number, as their code gives it
        assert round(m["chance_adjusted_accuracy"]["mean"], 5) == adjusted
        strict = _strict(docs, replies)
        assert m["strict_accuracy"]["mean"] == pytest.approx(100 * sum(strict) / len(docs))
        for name in ("accuracy", "chance_adjusted_accuracy", "strict_accuracy", "strict_chance_adjusted_accuracy"):
            assert m[name]["ci"] is not None and m[name]["ci"][0] <= m[name]["mean"] <= m[name]["ci"][1]
        readers = summary["details"]["readers"]
        assert (readers["official"], readers["strict"]) == ("site", "strict")
        assert readers["n"] > N / 2 and readers["of"] == N and sum(readers["by_kind"].values()) == readers["n"]
        assert all(len(v) <= 3 for v in readers["examples"].values()) and readers["examples"]["official only"]
        example = readers["examples"]["official only"][0]
        assert example["reply"] in replies.values() and example["strict"] == "--"


def test_the_disagreement_count_is_the_rows_the_two_readers_read_differently(runs):
    _, found = runs
    summary, _, run = found[0]
    rows = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    assert summary["details"]["readers"]["n"] == sum(r["pred"] != r["pred_strict"] for r in rows)
    assert {"read", "read_strict", "pred_generate_strict", "site_value_strict"} <= set(rows[0])


def test_the_table_shows_each_official_metric_under_both_readers(runs):
    _, found = runs
    summary, _, run = found[0]
    table = (run / "table.md").read_text()
    assert "| official metric | site | strict |" in table
    assert f"they read {summary['details']['readers']['n']:,} of {N:,} answers differently" in table
    assert "| chance_adjusted_accuracy | " in table and "- official only: `" in table


def test_report_pairs_every_official_metric_and_compare_heads_with_the_first(runs, tmp_path):
    _, found = runs
    (_, _, a), (_, _, b) = found
    report = CliRunner().invoke(app, ["report", str(a), str(b)])
    assert report.exit_code == 0, report.output
    assert report.output.splitlines()[0] == "| run | ask site acc | ask site chance_adjusted_accuracy |"
    paired = report.output.split("## Paired")[1]
    for label in ("| accuracy |", "| chance_adjusted_accuracy (mean) |", "| strict_accuracy (accuracy) |",
                  "| strict_chance_adjusted_accuracy (mean) |"):
        assert label in paired, label
    compared = CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(tmp_path / "cmp")])
    assert compared.exit_code == 0, compared.output
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert (result["metric"], result["statistic"]) == ("accuracy", "accuracy")


def test_audit_parse_tabulates_every_reader_naming_the_benchmarks_own(runs):
    _, found = runs
    summary, _, run = found[0]
    parsed = CliRunner().invoke(app, ["audit", "parse", str(run)])
    assert parsed.exit_code == 0, parsed.output
    assert "the benchmark's own reader is `site`" in parsed.output
    line = next(x for x in parsed.output.splitlines() if x.startswith("| reader site (official) |"))
    assert f"| {summary['metrics']['accuracy']['mean']:.1f} [" in line
    strict = next(x for x in parsed.output.splitlines() if x.startswith("| reader strict |"))
    assert f"| {summary['metrics']['strict_accuracy']['mean']:.1f} [" in strict


def test_mmsi_asks_its_authors_prompt_under_wording_official_and_reads_their_backticks(tmp_path):
    from spatialprobe.readers.mmsi import POST_PROMPT

    docs = []
    for n in range(6):
        solid_image(tmp_path / f"{n}a.png", size=8)
        solid_image(tmp_path / f"{n}b.png", size=8)
        docs.append({"id": f"m{n}", "question": f"Which is nearer in scene {n}? Options: A: cup, B: chair, C: lamp, "
                     "D: bed", "answer": "ABCD"[n % 4], "question_type": "camera",
                     "images": [f"{n}a.png", f"{n}b.png"]})
    (tmp_path / "mmsi.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    said = {d["question"].split("?")[0] + "?": f"The answer is ``{d['answer']}``." for d in docs}
    model = scripted_replier.write(tmp_path / "model", {q + " Options: A: cup, B: chair, C: lamp, D: bed": r
                                                        for q, r in said.items()})
    with scripted_replier.registered():
        run = CliRunner().invoke(app, ["bench", "mmsi", "--data", str(tmp_path / "mmsi.jsonl"), "--images",
                                       str(tmp_path), "--model", str(model), "--protocol", "generate",
                                       "--wording", "official", "--out", str(tmp_path / "run")])
        assert run.exit_code == 0, run.output
        refused = CliRunner().invoke(app, ["bench", "site", "--data", str(tmp_path / "mmsi.jsonl"), "--model",
                                           str(model), "--wording", "official", "--out", str(tmp_path / "no")])
    assert refused.exit_code == 2 and "--wording official does not apply to site" in refused.output
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert all(r["question"].endswith("\n" + POST_PROMPT) for r in rows)  # the authors' prompt, verbatim
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["metrics"]["accuracy"]["mean"] == 100.0  # the letter within double backticks, as theirs
    assert summary["metrics"]["strict_accuracy"]["mean"] == 0.0  # not a bare letter
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["settings"]["source"]["wording"] == "official"  # part of the run's identity
