"""``generalize``: the built-in posrel set with tiny WordNet/ConceptNet sources and a corpus."""

from __future__ import annotations

import json

import pytest
from generalize_helpers import make_conceptnet_db, make_wordnet_dir, write_corpus
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.generalize.scenarios import generalize, generalize_records, scenario_text
from spatialprobe.generalize.subterms import WordNetSubterms
from spatialprobe.tasks import data as task_data


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))


def test_scenario_text_fixes_the_article():
    assert scenario_text("enchantress", "lights", "sparkler") == "An enchantress lights the sparkler."
    assert scenario_text("wizard", "is driving", "minibus") == "A wizard is driving the minibus."


def test_records_keep_action_label_and_pronoun(tmp_path):
    terms = WordNetSubterms(make_wordnet_dir(tmp_path / "wn"))
    rows, missing = generalize_records(task_data.load("posrel"), terms, replace="both")
    # Only "bus" has subterms among the built-in objects: man -> 2, woman -> 3 persons, 4 actions.
    assert len(rows) == 4 * 2 + 4 * 3
    assert {"boy", "girl", "camel", "taxi"} <= missing
    by_text = {r["text"]: r for r in rows}
    row = by_text["An enchantress is cleaning the minibus."]
    assert row["pronoun"] == "She" and row["label"] == 3 and row["action"] == "is cleaning"
    assert row["source_text"] == "A woman is cleaning the bus."
    assert by_text["A wizard drives the minibus."]["pronoun"] == "He"
    assert by_text["A wizard drives the minibus."]["label"] == 0  # inside, as for "drives the bus"


def test_person_only_keeps_the_object(tmp_path):
    terms = WordNetSubterms(make_wordnet_dir(tmp_path / "wn"))
    rows, _ = generalize_records(task_data.load("posrel"), terms, replace="person", max_per_scenario=1)
    assert all(r["obj_b"] == r["source_obj_b"] for r in rows)
    assert len({r["source_text"] for r in rows}) == len(rows)  # one per source scenario


def test_generalize_drops_corpus_scenarios_and_loads_as_a_dataset(tmp_path):
    terms = WordNetSubterms(make_wordnet_dir(tmp_path / "wn"))
    corpus = write_corpus(tmp_path / "books.txt", ["Then a wizard\ndrives the minibus home."])
    out = tmp_path / "general.jsonl"
    report = generalize(task_data.load("posrel"), terms, out, corpus=[corpus])
    assert (report.candidates, report.in_corpus, report.kept) == (20, 1, 19)
    ds = task_data.load(str(out))
    assert ds.task == "posrel" and len(ds) == 19
    assert "A wizard drives the minibus." not in {i.text for i in ds.instances}
    inst = next(i for i in ds.instances if i.text == "A ballerina is driving the minibus.")
    assert (inst.label, inst.action, inst.pronoun, inst.fold_keys) == ("inside", "is driving", "She",
                                                                      ("minibus",))
    meta = json.loads((tmp_path / "general.jsonl.meta.json").read_text())
    assert meta["subterms"]["source"] == "wordnet" and meta["in_corpus"] == 1
    assert meta["source_dataset"].startswith("posrel@posrel-")


def test_cli_with_conceptnet(tmp_path):
    pytest.importorskip("conceptnet_lite")
    db = make_conceptnet_db(tmp_path / "cn.db")
    corpus = write_corpus(tmp_path / "books.txt", ["a ballerina cleans the minibus."])
    out = tmp_path / "cn.jsonl"
    result = CliRunner().invoke(app, ["generalize", "--conceptnet", str(db), "--corpus", str(corpus),
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    texts = {i.text for i in task_data.load(str(out)).instances}
    # ConceptNet: man -> wizard, woman -> ballerina, enchantress; bus -> minibus; 4 actions each.
    assert len(texts) == 4 * 3 - 1
    assert "A ballerina cleans the minibus." not in texts
    assert "An enchantress is driving the minibus." in texts


def test_cli_requires_one_source(tmp_path):
    result = CliRunner().invoke(app, ["generalize", "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code != 0


class _Subterms:
    name = "fake"

    def __init__(self, table):
        self.table = table

    def subterms(self, word):
        return self.table.get(word, [])

    def describe(self):
        return {"source": self.name}


def test_source_scenarios_are_never_re_emitted():
    terms = _Subterms({"man": ["boy", "wizard"]})  # ConceptNet holds "boy IsA man"
    rows, _ = generalize_records(task_data.load("posrel"), terms, replace="person")
    texts = {r["text"] for r in rows}
    assert "A boy drives the bus." not in texts  # already in the source set
    assert "A wizard drives the bus." in texts
    assert all(r["source_obj_a"] == "man" for r in rows)


@pytest.mark.parametrize("extra, message", [
    (["--source", "absent.jsonl"], "absent.jsonl"),
    (["--corpus", "absent.txt"], "Corpus file not found"),
    (["--replace", "verb"], "replace must be one of"),
    (["--source", "size"], "Only scenarios of a position task (posrel) can be generalized"),
])
def test_cli_bad_input_is_one_error_line(tmp_path, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    make_wordnet_dir(tmp_path / "wn")
    result = CliRunner().invoke(app, ["generalize", "--wordnet", "wn", "--out", "x.jsonl", *extra])
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output and not (tmp_path / "x.jsonl").exists()


def test_rerun_with_other_settings_rescans_instead_of_refusing(tmp_path):
    make_wordnet_dir(tmp_path / "wn")
    corpus = write_corpus(tmp_path / "books.txt", ["A wizard drives the minibus."])
    args = ["generalize", "--wordnet", str(tmp_path / "wn"), "--corpus", str(corpus),
            "--out", str(tmp_path / "g.jsonl")]
    first = CliRunner().invoke(app, args)
    second = CliRunner().invoke(app, [*args, "--replace", "person"])
    assert first.exit_code == 0 and second.exit_code == 0, second.output
    rows = [json.loads(line) for line in (tmp_path / "g.jsonl").read_text().splitlines()]
    assert rows and all(r["obj_b"] == r["source_obj_b"] for r in rows)


def test_gendered_subterms_get_their_own_pronoun_others_inherit():
    # IsA data is noisy: a policewoman listed under "man" is still "She".
    terms = _Subterms({"man": ["policewoman", "archer", "human"], "woman": ["fireman", "dancer"],
                       "bus": ["minibus"]})
    rows, _ = generalize_records(task_data.load("posrel"), terms, replace="both")
    pronoun = {(r["obj_a"], r["source_obj_a"]): r["pronoun"] for r in rows}
    assert pronoun == {("policewoman", "man"): "She", ("archer", "man"): "He", ("human", "man"): "He",
                       ("fireman", "woman"): "He", ("dancer", "woman"): "She"}
    texts = {r["text"] for r in rows}
    assert "An archer drives the minibus." in texts and "A human drives the minibus." in texts
