"""spatialprobe.readers.vlmeval equals VLMEvalKit's own code, as transcribed and cited in
tests/official/ (vlmeval.py: can_infer; vlmeval_spatial.py: can_match_option and the rule verdict
around it), on thousands of random replies of every shape models write."""

from __future__ import annotations

import random
import string

import pytest
from official import vlmeval as theirs
from official import vlmeval_spatial as theirs_spatial
from official.replies import every_shape, replies

from spatialprobe.readers import vlmeval as ours

OPTION_SETS = [["left", "right", "above", "below"], ["yes", "no"], ["A", "B", "the cup", "USA", "right side"],
               ["far", "close", "left", "right", "above", "under"], ["behind the chair", "in front of the chair", "C"]]


def _replies(options, n):
    out = []
    for gold in string.ascii_uppercase[:len(options)]:
        out += [r.text for r in replies(options, gold, n, seed=7)] + [r.text for r in every_shape(options, gold)]
    rng = random.Random(3)
    noise = ["Z", "z", "A cat is on the left", "B is wrong because it is far", "Failed to obtain answer via API",
             "<think>A or B</think>C", "answer: (D)", "Option A: left\nOption B: right\nB", "The answer is ``A``."]
    out += noise + ["".join(rng.choice(string.ascii_letters + " .()\n:") for _ in range(rng.randint(0, 30)))
                    for _ in range(n)]
    return out


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: "/".join(o))
@pytest.mark.parametrize("verbose", [None, "1"], ids=["VERBOSE unset", "VERBOSE=1"])
def test_can_infer_equals_vlmevalkit_on_random_replies(options, verbose, monkeypatch):
    if verbose is None:
        monkeypatch.delenv("VERBOSE", raising=False)
    else:
        monkeypatch.setenv("VERBOSE", verbose)
    choices = dict(zip(string.ascii_uppercase, options, strict=False))
    texts = _replies(options, 600)
    assert len(texts) > 1800
    for text in texts:
        expected = theirs.can_infer(text, dict(choices))
        assert ours.can_infer(text, choices) == (expected or None), text


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: "/".join(o))
def test_can_match_option_and_its_verdict_equal_vlmevalkit_on_random_replies(options):
    texts = _replies(options, 600)
    for text in texts:
        assert ours.can_match_option(text) == (theirs_spatial.can_match_option(text) or None), text
        assert ours.can_match_option(text, options[:3]) == (theirs_spatial.can_match_option(text, options[:3])
                                                            or None), text
        for gold in "AB":
            assert ours.match_option_hit(text, gold) == (theirs_spatial.compute_mcq_hit(text, gold)[1] == 1.0)


def test_the_issue_replies_read_as_vlmevalkit_reads_them():
    choices = {"A": "left", "B": "right"}
    assert [ours.can_infer(r, choices) for r in ("(B)", "B. right", "The answer is B", "right", "B or A")] == [
        "B", "B", "B", "B", None]
    assert ours.can_infer("Cannot determine the answer", choices) == "Z"
    assert ours.reads_with("MMSIBench_wo_circular") == "can_match_option"
    assert ours.reads_with("3DSRBench") == "can_infer"
