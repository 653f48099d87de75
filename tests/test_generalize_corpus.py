"""The streaming corpus filter: normalisation, word boundaries, chunk boundaries, resuming."""

from __future__ import annotations

import pytest

from generalize_helpers import write_corpus
from spatialprobe.datasets.corpus_filter import CorpusFilter, filter_phrases, normalize

PHRASES = ["A wizard drives the ambulance.", "An enchantress rides the camel.",
           "A ballerina paints the canoe.", "A wizard drives the car."]


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALPROBE_HOME", str(tmp_path / "home"))


def test_normalize_lowercases_and_collapses_whitespace():
    assert normalize("A  Wizard\n\tDRIVES") == "a wizard drives"
    assert normalize("x \n") == "x "
    assert normalize(" \n") == " "


def test_finds_planted_phrases_with_case_and_line_breaks(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", ["Then A WIZARD\ndrives the  ambulance, fast.",
                                               "a ballerina paints the canoe"])
    found = filter_phrases(PHRASES, [corpus]).found
    assert set(found) == {"a wizard drives the ambulance", "a ballerina paints the canoe"}


def test_word_boundaries(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", ["a wizard drives the carpet.", "una wizard drives the car"])
    assert filter_phrases(PHRASES, [corpus]).found == {}


@pytest.mark.parametrize("chunk", [64, 1000, 4099])
def test_phrase_across_a_chunk_boundary(tmp_path, chunk):
    text = ("x" * (chunk - 10)) + " an enchantress rides\nthe camel. é" + "y" * 50
    path = tmp_path / "c.txt"
    path.write_text(text, encoding="utf-8")
    found = filter_phrases(PHRASES, [path], chunk_bytes=chunk).found
    assert set(found) == {"an enchantress rides the camel"}


def test_multibyte_character_cut_by_a_chunk(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("é" * 40 + " a wizard drives the car " + "ü" * 40, encoding="utf-8")
    found = filter_phrases(PHRASES, [path], chunk_bytes=7).found
    assert set(found) == {"a wizard drives the car"}


def test_resume_continues_from_the_checkpoint(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", ["a wizard drives the ambulance",
                                               "a ballerina paints the canoe"])
    state = tmp_path / "state.json"
    scan = CorpusFilter(PHRASES, state, chunk_bytes=4096)
    seen = []

    class Stop(Exception):
        pass

    def stop_after_two(n):
        seen.append(n)
        if len(seen) == 2:
            raise Stop

    with pytest.raises(Stop):
        scan.scan([corpus], progress=stop_after_two)
    resumed = CorpusFilter(PHRASES, state, chunk_bytes=4096)
    offset = next(iter(resumed.state["files"].values()))["offset"]
    assert offset == 2 * 4096
    result = resumed.scan([corpus])
    assert result.bytes_scanned == corpus.stat().st_size - offset
    assert set(result.found) == {"a wizard drives the ambulance", "a ballerina paints the canoe"}
    assert CorpusFilter(PHRASES, state).scan([corpus]).bytes_scanned == 0  # all done


def test_state_of_other_phrases_is_refused(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", [])
    state = tmp_path / "state.json"
    filter_phrases(PHRASES, [corpus], state_path=state)
    with pytest.raises(ValueError, match="other phrases"):
        CorpusFilter(["a man drives the bus"], state)
