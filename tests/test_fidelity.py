"""docs/fidelity.md's reader table is what the fidelity measurements give (tests/fidelity.py): every
benchmark's official reader, run through the engine on its own module's items, reads random
replies of every shape as the authors' transcribed code does and gives the authors' numbers."""

from __future__ import annotations

import pytest
from fidelity import DOCS, MEASURES, measure_all, rewritten, table
from fidelity_newest import NUMERIC
from official.replies import NUMERIC_SHAPES, SHAPES


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    return {m.benchmark: m for m in measure_all(tmp_path_factory.mktemp("fidelity"))}


def test_every_official_reader_gives_the_authors_number_on_random_replies_of_every_shape(measured):
    assert len(measured) == len(MEASURES)
    for m in measured.values():
        assert m.identical, (m.benchmark, m.read_differently, m.differences)
        assert m.cases >= 1000
        if m.shapes != {"scores"}:
            assert set(SHAPES) <= m.shapes, m.benchmark  # prose, parentheses, backticks, braces, empty ...
        if m.benchmark in NUMERIC:  # numbers, units, words, prose, two numbers, empty ...
            assert set(NUMERIC_SHAPES) <= m.shapes, m.benchmark


def test_strict_reads_many_of_the_same_replies_otherwise(measured):
    """The two numbers of a run differ where the replies are not bare letters: strict reads none of
    the prose the official readers interpret (and they read some of what strict reads otherwise)."""
    for name in ("SITE", "MMSI-Bench", "CV-Bench", "EmbSpatial-Bench", "BLINK", "3DSRBench", "SpatialMQA",
                 "ViewSpatial-Bench", "MindCube", "OmniSpatial (--option reader=re)", "SpatialScore (version_0)",
                 "VSI-Bench"):
        assert measured[name].strict_differs > measured[name].cases / 10, name


def test_the_committed_table_is_the_one_the_measurements_write(measured):
    """Run ``python tests/fidelity.py`` to rewrite it after a reader or a transcription changed."""
    text = DOCS.read_text(encoding="utf-8")
    assert rewritten(text, table(list(measured.values()))) == text
