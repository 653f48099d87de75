"""Subterm sources against a tiny ConceptNet database and a tiny WordNet directory."""

from __future__ import annotations

import pytest
from generalize_helpers import make_conceptnet_db, make_wordnet_dir

from spatialprobe.generalize.subterms import ConceptNetSubterms, WordNetSubterms, find_wordnet

pytest.importorskip("conceptnet_lite")


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))


def test_conceptnet_isa_subterms_english_only(tmp_path):
    terms = ConceptNetSubterms(make_conceptnet_db(tmp_path / "cn.db"))
    assert terms.subterms("woman") == ["ballerina", "enchantress"]  # not the German "hexe"
    assert terms.subterms("car") == ["ambulance", "convertible"]  # RelatedTo "garage" is not IsA
    assert terms.subterms("man") == ["wizard"]
    assert terms.subterms("camel") == []


def test_conceptnet_depth_two_follows_isa_chains(tmp_path):
    terms = ConceptNetSubterms(make_conceptnet_db(tmp_path / "cn.db"), depth=2)
    assert terms.subterms("man") == ["archmage", "wizard"]


def test_conceptnet_missing_database_never_downloads(tmp_path):
    with pytest.raises(FileNotFoundError, match="--conceptnet"):
        ConceptNetSubterms(tmp_path / "absent.db")
    assert not (tmp_path / "absent.db").exists()


def test_wordnet_hyponyms_of_the_first_sense(tmp_path):
    terms = WordNetSubterms(make_wordnet_dir(tmp_path / "wn"))
    assert terms.subterms("man") == ["bachelor", "wizard"]  # not "pawn" (second sense)
    assert terms.subterms("woman") == ["ballerina", "enchantress", "sorceress"]
    assert terms.subterms("car") == ["ambulance", "convertible"]
    assert terms.subterms("camel") == []


def test_wordnet_depth_and_senses(tmp_path):
    terms = WordNetSubterms(make_wordnet_dir(tmp_path / "wn"), depth=2, senses=2)
    assert terms.subterms("man") == ["archmage", "bachelor", "pawn", "wizard"]


def test_wordnet_directory_without_data_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"index\.noun"):
        find_wordnet(tmp_path)


def test_wordnet_named_individuals_are_not_subterms(tmp_path):
    terms = WordNetSubterms(make_wordnet_dir(tmp_path / "wn"), depth=2)
    assert terms.reader.synsets("cave")[0].instance_hyponyms()  # the fixture has Lascaux
    assert terms.subterms("cave") == []


@pytest.mark.parametrize("content", [b"plain text, not a database\n" * 10, None])
def test_conceptnet_other_file_is_refused_and_left_unchanged(tmp_path, content):
    import sqlite3

    path = tmp_path / "other.db"
    if content is None:  # an SQLite file of something else
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE runs (path TEXT)")
    else:
        path.write_bytes(content)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="not a conceptnet-lite database"):
        ConceptNetSubterms(path)
    assert path.read_bytes() == before


def test_wordnet_from_nltks_zip_found_on_its_data_path(tmp_path, monkeypatch):
    import shutil

    import nltk

    data = tmp_path / "nltk_data"
    make_wordnet_dir(tmp_path / "build" / "wordnet")
    (data / "corpora").mkdir(parents=True)
    shutil.make_archive(str(data / "corpora" / "wordnet"), "zip", tmp_path / "build", "wordnet")
    monkeypatch.setattr(nltk.data, "path", [str(data)])
    terms = WordNetSubterms(None)
    assert terms.root == data / "corpora" / "wordnet.zip"
    assert terms.subterms("woman") == ["ballerina", "enchantress", "sorceress"]
    assert WordNetSubterms(data / "corpora" / "wordnet.zip").subterms("car") == ["ambulance", "convertible"]


def test_a_wordnet_folder_without_lexnames_is_one_sentence(tmp_path):
    from spatialprobe.errors import DataError
    from spatialprobe.generalize.subterms import WordNetSubterms

    for name in ("index.noun", "data.noun"):
        (tmp_path / name).write_text("")
    with pytest.raises(DataError, match=r"not a complete WordNet data directory \(.*lexnames.*\); pass nltk's"):
        WordNetSubterms(tmp_path)
