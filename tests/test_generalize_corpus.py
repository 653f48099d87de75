"""The streaming corpus filter: normalisation, word boundaries, chunk boundaries, resuming."""

from __future__ import annotations

import pytest
from generalize_helpers import write_corpus

from spatialprobe.generalize.corpus_filter import CorpusFilter, filter_phrases, normalize, normalize_phrase

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


@pytest.mark.parametrize("chunk", [100, 101, 4096])
def test_carried_tail_does_not_forget_the_character_before_it(tmp_path, chunk):
    # The first chunk ends 1 character after "a wizard drives the car", so the carried tail
    # begins with the phrase; in the text it is glued to "n" ("na wizard"): never a match.
    phrase = "a wizard drives the car"
    keep = max(len(normalize_phrase(p)) for p in PHRASES) + 1  # the carried tail's length
    after = " " + "y" * (keep - len(phrase) - 2) + " "  # the first chunk ends after this
    text = "x" * (chunk - keep - 2) + " n" + phrase + after + "and more text"
    assert text.encode()[:chunk].decode().endswith(phrase + after)
    path = tmp_path / "c.txt"
    path.write_text(text, encoding="utf-8")
    assert filter_phrases(PHRASES, [path], chunk_bytes=chunk).found == {}
    path.write_text(text.replace(" n" + phrase, "  " + phrase), encoding="utf-8")
    assert set(filter_phrases(PHRASES, [path], chunk_bytes=chunk).found) == {phrase}


def test_chunk_must_hold_a_character(tmp_path):
    with pytest.raises(ValueError, match="at least 4"):
        CorpusFilter(PHRASES, chunk_bytes=2)


def _whole_text_matches(phrases, text):
    """Reference: normalise the whole text at once and test every occurrence of every phrase."""
    buffer, found = normalize(text), set()
    for phrase in {normalize_phrase(p) for p in phrases}:
        start = buffer.find(phrase)
        while start >= 0:
            end = start + len(phrase)
            if not (start and buffer[start - 1].isalnum()) and not (end < len(buffer) and buffer[end].isalnum()):
                found.add(phrase)
                break
            start = buffer.find(phrase, start + 1)
    return found


def test_any_chunking_finds_what_the_whole_text_holds(tmp_path):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    words = st.sampled_from(["a", "an", "the car", "the", "car", "carpet", "n", "A", "CAR",
                             "é", "ü", ".", ",", " ", "  ", "\n", "\t"])
    phrases = ["the car.", "an é", "a car"]
    path = tmp_path / "c.txt"

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(words, max_size=40), st.integers(min_value=4, max_value=40))
    def check(tokens, chunk):
        text = " ".join(tokens) if len(tokens) % 2 else "".join(tokens)
        path.write_text(text, encoding="utf-8")
        assert set(filter_phrases(phrases, [path], chunk_bytes=chunk).found) == \
            _whole_text_matches(phrases, text)

    check()
