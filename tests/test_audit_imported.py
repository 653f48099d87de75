"""The audits on runs imported from other harnesses: ``audit blind`` on the
items the log kept (or the source it was joined to), set against the harness's own verdicts, and
``audit parse`` on the replies the log kept, with the harness's verdict as one more row."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spatialprobe.audit.parse import audit_run
from spatialprobe.audit.run_rows import gold_index, run_source
from spatialprobe.cli import app
from spatialprobe.files import read_json
from spatialprobe.interop.imported_run import import_logs

runner = CliRunner()
DATA = Path(__file__).parent / "data" / "interop"
SHARED = Path(__file__).resolve().parents[2] / "shared"


def invoke(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def test_an_lm_eval_log_is_audited_blind_on_the_choices_it_kept(tmp_path):
    """The committed lm-eval fixture (a multiple-choice task, ``doc.choices``, gold an index)."""
    invoke("import", "lm-eval", *DATA.glob("lm_eval/samples_*.jsonl"), "--out", tmp_path)
    (run,) = tmp_path.iterdir()
    source, _ = run_source(run)
    assert source.items[0].options == ("yes", "no") and source.items[0].question.startswith("Is the ant")
    assert [i.gold for i in source.items] == ["A" if r["gold"] == "0" else "B" for r in
                                               map(json.loads, (run / "predictions.jsonl").read_text().splitlines())]
    out = invoke("audit", "blind", run, "--folds", "2", "--out", tmp_path / "audit.json")
    found = read_json(tmp_path / "audit.json")
    assert found["n"] == 10 and found["chance"] == 50.0
    assert found["vision"]["accuracy"] == 60.0  # what lm-eval printed: its own verdicts, never re-judged
    assert "| the imported run (the harness's verdicts) − blind | 60.0 − " in out
    refused = runner.invoke(app, ["audit", "parse", str(run)])  # log-likelihood: nothing was generated
    assert refused.exit_code == 2 and "its log kept none (a log-likelihood task" in refused.output


def plain_log(path: Path, n: int, wrong: set[int]) -> None:
    """A paper's per-item predictions with a planted shortcut: ``inside`` questions are yes, ``left
    of`` questions no, two questions a scene; the model is right except on ``wrong``."""
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["id", "scene", "question", "options", "gold", "pred"])
        for i in range(n):
            relation = "inside" if i % 2 else "left of"
            gold = "yes" if relation == "inside" else "no"
            pred = gold if i not in wrong else ("no" if gold == "yes" else "yes")
            out.writerow([f"q{i}", f"s{i // 2}", f"Is the cup {relation} the box?", '["yes", "no"]', gold, pred])


def test_a_planted_shortcut_in_an_imported_log_is_found_and_set_against_the_harness(tmp_path):
    plain_log(tmp_path / "preds.csv", 40, wrong={0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
    invoke("import", "plain", tmp_path / "preds.csv", "--id", "id", "--prediction", "pred", "--gold", "gold",
           "--question", "question", "--options", "options", "--cluster", "scene", "--out", tmp_path / "runs")
    (run,) = (tmp_path / "runs").iterdir()
    invoke("audit", "blind", run, "--out", tmp_path / "audit.json")
    found = read_json(tmp_path / "audit.json")
    assert found["grouped_by"] == "clusters (scene)" and found["n"] == 40
    assert found["classifiers"]["logistic"]["accuracy"] == 100.0  # the template word gives every answer away
    assert found["guard"]["passed"]
    vision = found["vision"]
    assert (vision["accuracy"], vision["blind"], vision["difference"]) == (75.0, 100.0, -25.0)
    refused = runner.invoke(app, ["audit", "blind", str(run), "--debias", str(tmp_path / "sub")])
    assert refused.exit_code == 2 and "no source here asks the items" in refused.output  # no run could take it


def vlmeval_tsv(path: Path) -> list[tuple[str, str]]:
    """An unscored VLMEvalKit prediction file (``MODEL_DATASET.tsv``) of golden replies: (reply, gold)."""
    replies = [("B", "B"), ("Answer seems to be A... Answer: B", "B"), ("\\boxed{C}", "C"), ("(A) left", "A"),
               ("C. The ball is under the table", "A"), ("A", "B")]
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle, delimiter="\t")
        out.writerow(["index", "question", "A", "B", "C", "answer", "prediction"])
        for n, (reply, gold) in enumerate(replies):
            out.writerow([n, "Where is the ball?", "left", "right", "under", gold, reply])
    return replies


def test_the_parse_audit_of_an_imported_log_reads_its_replies_beside_the_harness_verdict(tmp_path):
    (tmp_path / "outputs" / "tiny").mkdir(parents=True)
    replies = vlmeval_tsv(tmp_path / "outputs" / "tiny" / "tiny_SpatialTiny.tsv")
    ((run, summary),) = import_logs("vlmeval", [tmp_path / "outputs" / "tiny" / "tiny_SpatialTiny.tsv"],
                                    tmp_path / "runs", {})
    found = audit_run(run)
    assert "harness verdict" not in found["extractors"]  # VLMEvalKit gave none: the import read the replies
    harness, strict = found["extractors"]["VLMEvalKit's can_infer (as imported)"], found["extractors"]["strict letter"]
    assert harness["accuracy"] == pytest.approx(summary["accuracy"]["mean"]) == pytest.approx(100 * 3 / 6)
    # can_infer reads "\boxed{C}" (braces are punctuation to it); "Answer seems to be A... Answer: B" names two
    # letters, and the letter of "C. The ball is under the table" is not among its last four words: unread
    assert harness["unparsed"] == pytest.approx(100 * 2 / 6) and summary["details"]["unreadable"] == 2
    assert (strict["accuracy"], strict["unparsed"]) == (pytest.approx(100 / 6), pytest.approx(400 / 6))
    assert found["extractors"]["final answer"]["accuracy"] == pytest.approx(100 * 4 / 6)
    assert "1" in set(found["flips"]["keys"])  # right by the final answer, not by VLMEvalKit's reading
    best = max(v["accuracy"] for v in found["extractors"].values())
    assert found["extractors"][found["range"]["best"]]["accuracy"] == best == pytest.approx(100 * 4 / 6)
    assert len(replies) == found["n"] == 6
    out = invoke("audit", "parse", run)
    assert "| VLMEvalKit's can_infer (as imported) | 33.3 | 50.0" in out
    invoke("export", run, "--format", "eee", "--out", tmp_path / "eee")  # replies and options travel with it
    invoke("import", "eee", *tmp_path.glob("eee/data/spatialprobe/*/*/*_samples.jsonl"), "--out", tmp_path / "back")
    (back,) = (tmp_path / "back").iterdir()
    again = audit_run(back)
    assert again["extractors"] == found["extractors"] and again["flips"] == found["flips"]


def test_gold_is_read_as_an_option_its_letter_or_its_position():
    options = ("left", "right", "2")
    assert [gold_index(g, options) for g in ("Right", "(A)", "C.", "1", "2", "up", "D")] == [1, 0, 2, 1, 2, None, None]


def test_an_imported_log_without_options_or_a_source_is_refused_naming_what_helps(tmp_path):
    (tmp_path / "p.csv").write_text("id,pred,gold\na,yes,yes\nb,no,yes\n")
    invoke("import", "plain", tmp_path / "p.csv", "--id", "id", "--prediction", "pred", "--gold", "gold", "--out",
           tmp_path / "runs")
    (run,) = (tmp_path / "runs").iterdir()
    result = runner.invoke(app, ["audit", "blind", str(run)])
    assert result.exit_code == 2 and "--source NAME --data FILE" in result.output


VSR_TEST = SHARED / "data" / "vsr" / "random" / "test.jsonl"


@pytest.mark.skipif(not VSR_TEST.is_file(), reason="../shared/data/vsr absent")
def test_a_log_joined_to_vsr_is_audited_on_its_items_grouped_by_image(tmp_path):
    lines = VSR_TEST.read_text().splitlines()[:300]
    gold = ["yes" if json.loads(line)["label"] == 1 else "no" for line in lines]
    path = tmp_path / "preds.csv"  # doc_id: the position in the source's file
    path.write_text("doc_id,pred,gold,reply\n" + "".join(f"{i},yes,{g},Yes it is.\n" for i, g in enumerate(gold)))
    invoke("import", "plain", path, "--id", "doc_id", "--prediction", "pred", "--gold", "gold", "--reply", "reply",
           "--source", "vsr", "--data", VSR_TEST, "--out", tmp_path / "runs")
    (run,) = (tmp_path / "runs").iterdir()
    source, rows = run_source(run)
    assert len(source.items) == 300 and source.spec.clusters == ("image",)
    assert [i.key for i in source.items] == [r["instance_id"] for r in rows]
    invoke("audit", "blind", run, "--out", tmp_path / "audit.json")
    found = read_json(tmp_path / "audit.json")
    assert found["grouped_by"] == "images"
    assert found["vision"]["accuracy"] == pytest.approx(100 * gold.count("yes") / 300)
    parsed = audit_run(run)  # the replies read against the source's own wording (yes / no)
    assert parsed["extractors"]["yes/no words"]["accuracy"] == pytest.approx(100 * gold.count("yes") / 300)
    assert parsed["extractors"]["harness verdict"]["accuracy"] == parsed["extractors"]["yes/no words"]["accuracy"]


def test_a_log_value_json_has_no_type_for_is_kept_as_text():
    import datetime

    from spatialprobe.interop.base import text

    assert text(datetime.date(2026, 11, 26)) == '"2026-11-26"' and text(["a", 1]) == '["a", 1]'
