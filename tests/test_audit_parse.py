"""The answer-extraction audit (spatialprobe.audit.parse): a golden corpus of replies from the
threads that found parsers moving scores fixes each extractor's reading, and a run whose replies
are known gets known accuracies per extractor, flips and range."""

from __future__ import annotations

import json

import pytest

from spatialprobe.audit.parse import audit_run, extractors, parse_table
from spatialprobe.readers.option_parser import spatialmqa_option

MC = ("left of", "right of", "above", "below")
YN = ("Yes", "No")
NUM = ("0", "90", "180", "270")
NAMES = ("toolkit", "strict letter", "first letter", "last letter", "final answer", "option text", "yes/no words",
         "substring", "number")
# reply, options, the index each extractor of NAMES reads (None: unparsed)
GOLDEN = [
    ("Answer seems to be A... Answer: B", MC, (1, None, 0, 1, 1, None, None, None, None)),
    ("Answer: C\nAnswer: D", MC, (2, None, 2, 3, 3, None, None, None, None)),
    ("The final answer is \\boxed{B}.", MC, (None, None, 1, 1, 1, None, None, None, None)),
    ("<think>Maybe A, or C.</think> Answer: B", MC, (1, None, 0, 1, 1, None, None, None, None)),
    ("none", YN, (None, None, None, None, None, None, None, 1, None)),  # SpatialEval: "none" read as "no"
    ("No.", YN, (1, None, None, None, 1, 1, 1, 1, None)),
    ("90", NUM, (1, None, None, None, 1, 1, None, 0, 1)),  # SpatialEval: "90" read as "0"
    ("0 degrees", NUM, (0, None, None, None, 0, 0, None, 0, 0)),
    ("It is to the right of the car, I think.", MC, (1, None, None, None, 1, 1, None, 1, None)),
    ("(B)", MC, (1, 1, 1, 1, 1, None, None, None, None)),
    ("Yes, the cat is left of the dog.", YN, (0, None, None, None, 0, 0, 0, 0, None)),
    ("I don't know", MC, (None,) * 9),
]


@pytest.mark.parametrize(("reply", "options", "expected"), GOLDEN, ids=[g[0][:30] for g in GOLDEN])
def test_each_extractor_reads_the_golden_replies_as_recorded(reply, options, expected):
    found = extractors()
    assert tuple(found[name](reply, options) for name in NAMES) == expected


def test_spatialmqa_lenient_rule_reads_a_letter_and_none_by_substring():
    lenient = extractors(spatialmqa_option)["lenient"]
    assert lenient("B", MC) == 2  # "b" occurs in "above": the benchmark's rule, reproduced
    assert lenient("none", YN) == 1 and lenient("right of", MC) == 1


REPLIES = ["A", "Answer seems to be A... Answer: B", "\\boxed{C}", "<think>A?</think> Answer: D", "right of",
           "The answer is (A)", "I cannot tell", "below, I think"]
GOLD = ["left of", "right of", "above", "below", "right of", "left of", "right of", "below"]


class Replier:
    """Replies to the i-th question with REPLIES[i] (the question names its number)."""

    name = "replier"
    protocols = ("generate",)

    def generate(self, requests, progress=None):
        return [REPLIES[int(r.prompt.split("#")[1].split()[0])] for r in requests]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A SpatialMQA-format run (8 questions, no images) whose replies are REPLIES."""
    from spatialprobe.benchmarks.spatialmqa import spatialmqa_source
    from spatialprobe.engine.run import ask_run
    from spatialprobe.runner.settings import Component

    folder = tmp_path_factory.mktemp("parse")
    path = folder / "mqa" / "test.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps({"image": f"{n:012d}.jpg", "question": f"Where is the cup #{n} ?",
                                        "options": list(MC), "answer": g}) + "\n" for n, g in enumerate(GOLD)))
    source, settings = spatialmqa_source(path, None)
    ask_run(source, Replier(), Component("fake", {"model": "replier"}), settings, folder / "run",
            protocol="generate", condition="none")
    return folder / "run"


def test_a_run_with_known_replies_gets_known_scores_flips_and_range(run):
    found = audit_run(run)
    e = found["extractors"]
    assert found["n"] == 8 and found["reader_matches_run"] and found["official_reader"] == "spatialmqa"
    assert (e["toolkit"]["accuracy"], e["toolkit"]["unparsed"]) == (75.0, 25.0)
    assert (e["final answer"]["accuracy"], e["final answer"]["unparsed"]) == (87.5, 12.5)
    assert (e["strict letter"]["accuracy"], e["strict letter"]["unparsed"]) == (12.5, 87.5)
    assert set(found["not_applicable"]) == {"yes/no words", "number", "reader spatialeval"}
    # every registered reader; the benchmark's own (SpatialMQA's lenient verdict as its scripts run it:
    # a letter is the option it names, other replies graded as they are, "below, I think" right) and
    # strict give the run's two numbers
    summary = json.loads((run / "summary.json").read_text())["metrics"]
    assert e["reader spatialmqa (official)"]["accuracy"] == summary["accuracy"]["mean"] == 37.5
    assert e["reader strict"]["accuracy"] == summary["strict_accuracy"]["mean"] == 25.0
    assert "reader spatialeval" in found["not_applicable"]  # it needs SpatialEval's task fields
    assert found["range"]["best"] == "final answer" and found["range"]["difference"] == 87.5 - min(
        v["accuracy"] for k, v in e.items() if k not in found["not_applicable"])
    assert found["flips"]["n"] == 7 and "test-00006" not in found["flips"]["keys"]  # all wrong alike
    assert "| final answer | 12.5 | 87.5 [" in parse_table(found)


def test_the_commands_audit_a_runs_replies_and_set_its_accuracy_against_the_blind_one(run):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    parsed = CliRunner().invoke(app, ["audit", "parse", str(run)])
    assert parsed.exit_code == 0, parsed.output
    assert "| toolkit | 25.0 | 75.0 [" in parsed.output
    assert "| reader spatialmqa (official) | 62.5 | 37.5 [" in parsed.output
    blind = CliRunner().invoke(app, ["audit", "blind", str(run), "--folds", "2"])
    assert blind.exit_code == 0, blind.output
    assert "| the run with its images − blind | 37.5 − " in blind.output  # the run's own accuracy


def test_a_run_restricted_to_a_subset_file_records_it_in_its_identity_and_replays_it(run, tmp_path):
    from spatialprobe.audit.run_rows import run_source
    from spatialprobe.engine.rebuild import restrict
    from spatialprobe.engine.run import ask_run
    from spatialprobe.engine.subset import write_subset
    from spatialprobe.runner.settings import Component

    source, _ = run_source(run)
    subset = write_subset({"dataset": source.dataset, "keys": ["test-00000", "test-00004"]}, tmp_path)
    kept = restrict(source, subset)
    summary = ask_run(kept, Replier(), Component("fake", {"model": "replier"}), None, tmp_path / "sub",
                      protocol="generate", condition="none")
    config = json.loads((tmp_path / "sub" / "config.json").read_text())
    assert config["settings"]["source"]["items"]["sha256"].startswith("sha256:")
    assert config["identity"] != json.loads((run / "config.json").read_text())["identity"]
    # SpatialMQA's official accuracy: "right of" is right, and so is the letter "A" (the gold "left of")
    assert summary["metrics"]["accuracy"]["n"] == 2 and summary["metrics"]["accuracy"]["mean"] == 100.0
    replayed, rows = run_source(tmp_path / "sub")  # the subset applied again from config.json
    assert [i.key for i in replayed.items] == ["test-00000", "test-00004"] and len(rows) == 2


def test_a_folder_that_is_no_run_is_refused_in_one_sentence(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    result = CliRunner().invoke(app, ["audit", "parse", str(tmp_path)])
    assert result.exit_code == 2 and "has no config.json: not a finished run folder" in result.output
