"""The two answer protocols: likelihood choice, parsed generation, and their comparison."""

from __future__ import annotations

from typing import ClassVar

import pytest

from spatialprobe.engine.protocols import Question, ask, check_protocol, protocols_of
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.metrics.protocol_comparison import agreement, parse_failure_rate, protocol_comparison


class Fixed:
    """A model that likes one word (scores it 0, the rest -1) and replies with fixed texts."""

    name = "fixed"
    protocols: ClassVar[tuple[str, ...]] = ("score", "generate")

    def __init__(self, liked: str, replies: dict[str, str]):
        self.liked, self.replies, self.calls = liked, replies, []

    def score(self, requests, progress=None):
        self.calls.append(("score", len(requests)))
        return [tuple(0.0 if o == self.liked else -1.0 for o in r.options) for r in requests]

    def generate(self, requests, progress=None):
        self.calls.append(("generate", len(requests)))
        return [self.replies[r.prompt] for r in requests]


def test_likelihood_picks_the_best_option_whatever_their_order_and_ties_go_first():
    model = Fixed("below", {})
    forward = ask(model, [Question("Where?", ("above", "below", "inside"))], "likelihood")
    backward = ask(model, [Question("Where?", ("inside", "below", "above"))], "likelihood")
    assert forward[0]["likelihood"]["option"] == backward[0]["likelihood"]["option"] == "below"
    assert forward[0]["likelihood"]["scores"] == [-1.0, 0.0, -1.0]
    assert ask(Fixed("none", {}), [Question("q", ("yes", "no"))], "likelihood")[0]["likelihood"]["option"] == "yes"


def test_generate_parses_replies_and_names_failures_and_both_batches_once_per_protocol():
    replies = {"q1": "(B)", "q2": "Yes, it is.", "q3": "I cannot tell.", "q4": "True."}
    model = Fixed("no", replies)
    questions = [Question("q1", ("left of", "right of")), Question("q2", ("yes", "no")),
                 Question("q3", ("yes", "no")), Question("q4", ("yes", "no"))]
    answers = ask(model, questions, "both")
    assert [a["generate"]["option"] for a in answers] == ["right of", "yes", None, "yes"]
    assert [a["generate"]["rule"] for a in answers] == ["letter", "text", "failure", "yes/no"]
    assert [a["likelihood"]["option"] for a in answers] == ["left of", "no", "no", "no"]
    assert model.calls == [("score", 4), ("generate", 4)]


def test_a_protocol_the_model_lacks_is_refused_in_one_sentence():
    class ScoreOnly:
        name = "clip"
        protocols: ClassVar[tuple[str, ...]] = ("score",)

    assert check_protocol(ScoreOnly(), "likelihood") == ("likelihood",)
    with pytest.raises(UsageError, match=r"the clip model cannot answer by --protocol both \(it has no "
                                         r"generate\); it answers by likelihood\."):
        check_protocol(ScoreOnly(), "both")
    with pytest.raises(UsageError, match="--protocol must be one of likelihood, generate, both"):
        protocols_of("vote")


def _rows():
    # 8 items on 4 images; likelihood always right; generate right on 4, wrong on 2, failed on 2
    gold = ["yes", "no"] * 4
    gen = ["yes", "no", "yes", "no", "no", "yes", None, None]
    return [{"instance_id": f"i{n}", "image": f"im{n // 2}", "gold": g, "pred": g, "pred_likelihood": g,
             "pred_generate": p} for n, (g, p) in enumerate(zip(gold, gen, strict=True))]


def test_the_comparison_of_protocols_has_known_accuracies_agreement_and_failure_rate():
    rows = _rows()
    assert parse_failure_rate(rows) == 25.0
    assert agreement(rows) == 50.0
    spec = Resampling(("yes", "no"), ("image",), key=("instance_id",), pooled=True, unit="images")
    result = protocol_comparison(rows, spec, resamples=200)
    acc = result["accuracy"]
    assert (acc["likelihood"], acc["generate"], acc["difference"]) == (100.0, 50.0, 50.0)
    assert result["agreement"] == 50.0 and result["parse_failure_rate"] == 25.0
    same = protocol_comparison([{**r, "pred_generate": r["gold"]} for r in rows], spec, resamples=200)
    assert same["accuracy"]["difference"] == 0.0 and same["accuracy"]["p"] == 1.0
    assert same["agreement"] == 100.0
