"""The registered reply readers (spatialprobe/readers/): each official reader reads every reply
shape to the letter its authors' code reads (tests/official/, which imports nothing of
spatialprobe); ``strict`` reads only an option's exact letter or text; every benchmark names a
registered reader; ``spatialprobe ls`` lists them."""

from __future__ import annotations

import random
import string

import pytest
from official import blink as o_blink
from official import lmms_first_letter as o_lmms
from official import mmsi as o_mmsi
from official import site as o_site
from official import vlmeval as o_vlmeval
from official import vlmeval_spatial as o_vlmeval_spatial
from official.replies import SHAPES, reply
from typer.testing import CliRunner

from spatialprobe import registry
from spatialprobe.cli import app
from spatialprobe.readers.base import Asked, get, names

WORDS = ["left", "right", "above", "below", "behind", "in front"]


def _items(n: int, seed: int):
    rng = random.Random(seed)
    for k in range(n):
        options = rng.sample(WORDS, rng.randint(2, 5))
        letters = string.ascii_uppercase[:len(options)]
        gold = rng.choice(letters)
        yield Asked(f"i{k}", tuple(options), tuple(letters), gold), reply(rng, options, gold, SHAPES[k % len(SHAPES)])


THEIRS = {
    "site": lambda text, asked: o_site.parse_multi_choice_response(text.strip(), list(asked.letters),
                                                                   random.Random(f"site|{asked.key}")),
    "mmsi": lambda text, asked: o_mmsi.letter_readme(text),
    "mmsi-code": lambda text, asked: o_mmsi.extract_code(text),
    "mmsi-lmms": lambda text, asked: o_mmsi.letter_lmms(text),
    "lmms-first-letter": lambda text, asked: o_lmms._extract_answer_letter(text) or None,
    "vlmeval-can-infer": lambda text, asked: o_vlmeval.can_infer(
        text, dict(zip(asked.letters, asked.options, strict=True)), verbose=False) or None,
    "blink": lambda text, asked: _blink(text, asked),
    "vlmeval-can-match-option": lambda text, asked: o_vlmeval_spatial.can_match_option(text) or None,
}


def _blink(text, asked):
    found = o_blink.read(text, {"question": "q", "choices": list(asked.options)})
    return found[1] if found and found != o_blink.JUDGE_FAILED and len(found) == 3 else None


@pytest.mark.parametrize("name", sorted(THEIRS))
def test_each_official_reader_reads_every_shape_as_its_authors_code(name):
    reader = get(name)
    for asked, drawn in _items(37 * 30, hash(name) % 1000):
        ours = reader.reply(drawn.text, asked)
        assert ours.label == THEIRS[name](drawn.text, asked), (drawn.shape, drawn.text, ours.reason)


@pytest.mark.parametrize(("text", "read"), [
    ("B", "B"), ("  B\n", "B"), ("right", "B"), ("RIGHT", "B"), (" Right ", "B"), ("(B)", None), ("B.", None),
    ("**B**", None), ("`B`", None), ("Right.", None), ("b", None), ("The answer is B", None), ("B or C", None),
    ("B. right", None), ("It is right", None), ("", None), ("E", None)])
def test_strict_reads_only_an_options_exact_letter_or_text(text, read):
    asked = Asked("k", ("left", "right", "above"), ("A", "B", "C"), "B")
    assert get("strict").reply(text, asked).label == read


def test_the_readers_of_scores_break_ties_as_their_authors_do():
    asked = Asked("k", ("on", "left", "under"), ("on", "left", "under"), "under")
    assert get("strict").scores([1.0, 0.0, 1.0], asked).label == "on"  # the first of equal ones, as asked
    assert get("whatsup").scores([1.0, 0.0, 1.0], asked).label == "under"  # a tie with the right caption: right
    yes_no = Asked("k", ("No", "Yes"), ("no", "yes"), "yes")
    assert get("comfort").scores([-1.0, -1.0], yes_no).label == "no"  # P(yes) = 0.5 is no
    assert get("comfort").scores([-1.0, -0.9], yes_no).label == "yes"


def test_site_draws_its_random_letter_seeded_by_the_item():
    asked = Asked("q7", ("left", "right", "above", "below"), tuple("ABCD"), "A")
    first = get("site").reply("no idea", asked)
    assert first.label in "ABCD" and get("site").reply("no idea", asked) == first
    assert "random letter" in first.reason


def test_every_benchmark_names_a_registered_official_reader():
    """Each of the ten benchmarks with an authors' reader names it (a module's ``reader="NAME"``);
    every named reader is registered, cited and described."""
    import importlib
    import re
    from pathlib import Path

    own = {"site": "site", "mmsi": "mmsi", "cv-bench": "lmms-first-letter", "embspatial": "lmms-first-letter",
           "3dsrbench": "vlmeval-can-infer", "blink": "blink", "spatialeval": "spatialeval",
           "spatialmqa": "spatialmqa", "whatsup": "whatsup", "comfort": "comfort"}
    for name in registry.names("source"):
        module = importlib.import_module(registry.lookup("source", name).__module__)
        text = Path(str(module.__file__)).read_text(encoding="utf-8")
        named = {n.strip('"') for pair in re.findall(r'reader=("[\w-]+")(?: if \w+ else ("[\w-]+"))?', text)
                 for n in pair if n}
        assert named <= set(names()), name
        if name in own:
            assert own[name] in named, name
    for name in names():
        reader = get(name)
        assert reader.name == name and reader.cited and reader.summary


def test_ls_lists_the_readers():
    listed = CliRunner().invoke(app, ["ls"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    rows = [line for line in listed.output.splitlines() if line.startswith("│ reader ")]
    assert {line.split("│")[2].strip() for line in rows} == set(names())
