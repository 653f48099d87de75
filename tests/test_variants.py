"""Robustness protocols on the ask engine (:mod:`spatialprobe.engine.variants`,
:mod:`spatialprobe.engine.robustness`): known answers on a tiny lettered source.

Twelve questions with four lettered options (relation words) about six images (two questions an
image: the cluster). A model wired to answer ``A`` scores the share of ``A``-gold items and a
consistent accuracy of 0 under ``circular``; a model that prefers one option *text* wherever it stands loses nothing;
planted answers give the hand-counted pair and set accuracy; the gap's interval is the textbook
cluster-robust one, computed here from the cluster sums.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import numpy as np
import pytest
from scipy import stats

from spatialprobe.benchmarks.base import Source, SourceItem
from spatialprobe.engine.build import AskOptions, ask_kind
from spatialprobe.engine.rebuild import rebuild_source
from spatialprobe.engine.run import ask_run
from spatialprobe.engine.variants import parse_variants, swapped, with_variants
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.runner.settings import Component

RELATIONS = ("left", "right", "above", "below")
OBJECTS = ("cup", "fork", "lamp", "book", "vase", "shoe")
QUESTION = "Where is the {a} relative to the {b} in photo {n}?\nOptions:\n{options}\nAnswer with the option's letter."
GOLD_INDEX = (0, 1, 2, 3, 0, 1, 0, 2, 3, 0, 1, 2)
"""The gold option of each item, as lettered in the source: four items have gold A."""


def _item(n: int, options: tuple[str, ...], gold: str, **fields) -> SourceItem:
    lettered = "\n".join(f"{chr(65 + k)}. {o}" for k, o in enumerate(options))
    a, b = OBJECTS[n % 6], OBJECTS[(n + 1) % 6]
    return SourceItem(f"q{n}", QUESTION.format(a=a, b=b, n=n, options=lettered), options, options, gold, None, (a, b),
                      {"image": f"img{n // 2}", **fields})


def _source(items, variants=None) -> Source:
    return Source("tiny", "tiny", "tiny@1", RELATIONS, tuple(items),
                  Resampling(RELATIONS, ("image",), unit="images"), settings={"name": "tiny"},
                  variants=variants or {})


def lettered_source() -> Source:
    items = []
    for n, g in enumerate(GOLD_INDEX):
        options = RELATIONS[n % 4:] + RELATIONS[:n % 4]
        items.append(_item(n, options, options[g]))
    return _source(items)


class FirstOption:
    """Answers option A: the first by likelihood, the letter when it generates."""

    name = "first"
    protocols: ClassVar[tuple[str, ...]] = ("score", "generate")

    def score(self, requests, progress=None):
        return [tuple(-float(k) for k in range(len(r.options))) for r in requests]

    def generate(self, requests, progress=None):
        return ["A" for _ in requests]


class Prefers:
    """Order-blind: scores each option by its text alone (a fixed liking of the relation words)."""

    name = "prefers"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    liking: ClassVar[dict[str, float]] = {"below": 3.0, "left": 2.0, "above": 1.0, "right": 0.0}

    def score(self, requests, progress=None):
        return [tuple(self.liking[o] for o in r.options) for r in requests]


class Planted:
    """Answers each question (by its prompt) with a planted option text; the first otherwise."""

    name = "planted"
    protocols: ClassVar[tuple[str, ...]] = ("score",)

    def __init__(self, answers: dict[str, str]):
        self.answers = answers

    def score(self, requests, progress=None):
        return [tuple(0.0 if o == self.answers.get(r.prefix, r.options[0]) else -1.0 for o in r.options)
                for r in requests]


def _ask(source, model, out, **options):
    return ask_run(source, model, Component("fake", {"model": model.name}), None, out,
                   condition="none", **options)


def test_a_model_answering_a_scores_the_share_of_a_gold_and_0_consistent_under_circular(tmp_path):
    source = with_variants(lettered_source(), ["circular"])
    assert len(source.items) == 12 * 4 and source.settings["protocol_variants"] == ["circular"]
    rotated = {i.key: i for i in source.items}["q1~c1"]  # options right, above, below, left; gold above: B -> A
    assert rotated.question.split("Options:\n")[1].startswith("A. above\nB. below\nC. left\nD. right")
    assert rotated.gold == "above" and rotated.labels == rotated.options
    for protocol in ("likelihood", "generate"):
        summary = _ask(source, FirstOption(), tmp_path / protocol, protocol=protocol)
        m = summary["metrics"]
        share_a = 100 * GOLD_INDEX.count(0) / 12
        assert m["accuracy"]["mean"] == pytest.approx(share_a)  # the headline: the source's own items
        assert m["circular_vanilla"]["mean"] == pytest.approx(share_a)
        assert m["circular_consistent"]["mean"] == 0.0
        assert m["circular_gap"]["mean"] == pytest.approx(share_a)
        assert summary["details"]["variants"]["circular"]["groups"] == 12
    # the answer prior of a source with no training split: its test items' majority, said so
    assert summary["details"]["answer_prior"]["from"] == "the test items (no training split)"
    assert m["answer_prior"]["mean"] == pytest.approx(100 * 4 / 12)


def test_an_order_blind_model_loses_nothing_under_circular(tmp_path):
    source = with_variants(lettered_source(), ["circular"])
    m = _ask(source, Prefers(), tmp_path / "run", protocol="likelihood")["metrics"]
    liked = sum(max(i.options, key=Prefers.liking.get) == i.gold for i in lettered_source().items)
    assert m["circular_vanilla"]["mean"] == pytest.approx(100 * liked / 12) == m["circular_consistent"]["mean"]
    assert m["circular_gap"]["mean"] == 0.0


def test_declared_pair_and_set_groups_give_the_hand_counted_consistent_accuracy(tmp_path):
    # What'sUp-style: pairs of 2 (same image), sets of 4 (two images)
    items = [_item(n, RELATIONS, RELATIONS[n % 4], pair_id=f"p{n // 2}", set_id=f"s{n // 4}") for n in range(12)]
    wrong = {1, 4, 5, 10}  # planted wrong answers: pairs p0, p2 (both), p5 wrong; sets s0, s1, s2 all wrong
    answers = {i.question: (i.gold if n not in wrong else RELATIONS[(n + 1) % 4]) for n, i in enumerate(items)}
    source = _source(items, {"pair": "pair_id", "set": "set_id"})
    summary = _ask(source, Planted(answers), tmp_path / "run", protocol="likelihood")
    m = summary["metrics"]
    assert m["accuracy"]["mean"] == pytest.approx(100 * 8 / 12) == m["pair_vanilla"]["mean"]
    assert m["pair_consistent"]["mean"] == pytest.approx(100 * 3 / 6)  # p1, p3, p4 right
    assert m["set_consistent"]["mean"] == 0.0
    assert m["pair_gap"]["mean"] == pytest.approx(100 * 8 / 12 - 50)
    table = (tmp_path / "run" / "table.md").read_text()
    assert "pair: consistent accuracy, every item of a group right (6 groups by pair_id)" in table
    assert "consistency gap" in table and "strict accuracy" not in table
    # with circular asked too, the pairs hold the source's own items only: the same pair accuracy
    again = _ask(with_variants(source, ["circular"]), Planted(answers), tmp_path / "both", protocol="likelihood")
    assert again["metrics"]["pair_consistent"]["mean"] == m["pair_consistent"]["mean"]
    assert again["details"]["variants"]["pair"]["rows"] == 12 and again["details"]["variants"]["circular"]["rows"] == 48


def test_a_run_written_when_consistent_was_called_strict_still_renders_and_replays_as_itself(tmp_path):
    """Before the rename the consistent accuracy was ``<protocol>_strict`` (a clash with the strict
    reader): such a summary still gives its table lines, and the run replays with the same identity,
    its summary rewritten under the new name."""
    import json

    from spatialprobe.engine.robustness import consistent_part, variants_lines

    items = [_item(n, RELATIONS, RELATIONS[n % 4], pair_id=f"p{n // 2}") for n in range(12)]
    answers = {i.question: (i.gold if n not in {1, 4} else RELATIONS[(n + 1) % 4]) for n, i in enumerate(items)}
    source = _source(items, {"pair": "pair_id"})
    new = _ask(source, Planted(answers), tmp_path / "run", protocol="likelihood")
    old = json.loads(json.dumps(new))
    old["metrics"]["pair_strict"] = old["metrics"].pop("pair_consistent")
    old["details"]["variants"]["pair"]["strict"] = old["details"]["variants"]["pair"].pop("consistent")
    (tmp_path / "run" / "summary.json").write_text(json.dumps(old))
    assert consistent_part(old["metrics"], "pair") == new["metrics"]["pair_consistent"]
    assert variants_lines(old) == variants_lines(new)
    again = _ask(source, Planted(answers), tmp_path / "run", protocol="likelihood")
    assert again["identity"] == new["identity"] and "pair_strict" not in again["metrics"]
    assert again["metrics"]["pair_consistent"] == new["metrics"]["pair_consistent"]


def test_the_gap_interval_is_the_paired_cluster_robust_interval_computed_by_hand(tmp_path):
    items = [_item(n, RELATIONS, RELATIONS[n % 4], pair_id=f"p{n // 2}") for n in range(12)]
    wrong = {1, 4, 5, 7, 10}
    answers = {i.question: (i.gold if n not in wrong else RELATIONS[(n + 1) % 4]) for n, i in enumerate(items)}
    m = _ask(_source(items, {"pair": "pair_id"}), Planted(answers), tmp_path / "run",
             protocol="likelihood")["metrics"]
    right = np.array([n not in wrong for n in range(12)], dtype=float)
    ok = np.array([right[2 * g] * right[2 * g + 1] for g in range(6)])  # a pair is one image: one cluster
    v, s = right.mean(), ok.mean()
    # influence of each cluster (image) on vanilla − consistent; variance K/(K−1) Σ S_c²; t on K−1 df
    influence = np.array([(right[2 * c:2 * c + 2] - v).sum() / 12 - (ok[c] - s) / 6 for c in range(6)])
    se = 100 * np.sqrt(6 / 5 * (influence ** 2).sum())
    half = stats.t.ppf(0.975, 5) * se
    gap = 100 * (v - s)
    assert m["pair_gap"]["mean"] == pytest.approx(gap)
    assert m["pair_gap"]["ci"] == pytest.approx([gap - half, gap + half], abs=1e-4)


def test_swap_exchanges_relation_words_and_keeps_the_fact(tmp_path):
    assert swapped("Is the Cup left of the lamp, in front of it, or below?") == \
        "Is the Cup right of the lamp, behind it, or above?"
    source = with_variants(lettered_source(), ["swap"])
    by_key = {i.key: i for i in source.items}
    assert by_key["q0~swap"].options == ("right", "left", "below", "above") and by_key["q0~swap"].gold == "left"
    # an order-blind model answers the same fact whatever the wording: its swap consistency is total
    m = _ask(source, Prefers(), tmp_path / "blind", protocol="likelihood")["metrics"]
    assert m["swap_gap"]["mean"] == 0.0 and m["swap_vanilla"]["mean"] == pytest.approx(m["accuracy"]["mean"])
    # answering A: right on the A-gold items, never on their swaps (A now names the opposite relation)
    m = _ask(source, FirstOption(), tmp_path / "first", protocol="likelihood")["metrics"]
    assert m["swap_vanilla"]["mean"] == pytest.approx(100 * 4 / 12) and m["swap_consistent"]["mean"] == 0.0


def test_settings_that_do_not_apply_are_refused_and_a_replay_makes_the_same_items(monkeypatch):
    with pytest.raises(UsageError, match="no variant the engine generates"):
        parse_variants("mirror")
    yes_no = _source([SourceItem("y0", "Is the cup left of the fork?", ("Yes", "No"), ("left", "right"), "left",
                                 None, ("cup", "fork"), {"image": "i"})])
    with pytest.raises(UsageError, match="circular applies to questions with lettered options"):
        with_variants(yes_no, ["circular"])
    with pytest.raises(UsageError, match="swap applies to items"):
        with_variants(yes_no, ["swap"])
    own = _source(lettered_source().items, {"circular": "qid_base"})
    with pytest.raises(UsageError, match="declares circular itself"):
        with_variants(own, ["circular"])
    from spatialprobe import registry

    monkeypatch.setattr(registry, "lookup", lambda kind, name: lambda settings, seed: lettered_source())
    again = rebuild_source(with_variants(lettered_source(), ["circular", "swap"]).settings, 0)
    assert [i.key for i in again.items] == [i.key for i in with_variants(lettered_source(), ["circular", "swap"]).items]
    assert again.details["protocol_variants"]["swap"] == {"generated": 12, "skipped": 0}


def test_the_ask_path_generates_variants_from_asked(monkeypatch):
    import spatialprobe.engine.build as asking
    import spatialprobe.engine.load as ask_sources
    import spatialprobe.models.choice as choice
    import spatialprobe.models.options as options

    monkeypatch.setattr(choice, "choose", lambda model, wordings, command, backend: ("fake", None))
    monkeypatch.setattr(options, "resolve", lambda name, given: {})
    monkeypatch.setattr(options, "sharding", lambda *args: {})
    monkeypatch.setattr(ask_sources, "load_model", lambda *args: FirstOption())
    monkeypatch.setattr(asking, "_declared", lambda name, attribute: FirstOption.protocols if attribute == "protocols"
                        else ())
    monkeypatch.setattr(asking, "_option", lambda name, key: False)
    kind = ask_kind(lettered_source(), "first", AskOptions(condition="none", protocol_variants=("circular",)), "bench")
    assert len(kind.items()) == 48 and kind.settings.source["protocol_variants"] == ["circular"]


class TwoEyes:
    """Reads a multi-view item: the gold option's index is 2·(first image white) + (second white);
    with no image it answers A; it takes several images a question (``multi_image``)."""

    name = "two-eyes"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    multi_image = True

    def score(self, requests, progress=None):
        out = []
        for r in requests:
            bits = [im.getpixel((0, 0))[0] > 64 for im in r.image] if r.image is not None else [False, False]
            out.append(tuple(0.0 if k == 2 * bits[0] + bits[1] else -1.0 for k in range(len(r.options))))
        return out


def _views_source(folder) -> Source:
    from vl_helpers import solid_image

    items = []
    for n in range(8):
        gold = n % 4
        paths = [folder / f"{n}-{k}.png" for k in range(2)]
        for path, white in zip(paths, (gold // 2, gold % 2), strict=True):
            solid_image(path, (255, 255, 255) if white else (0, 0, 0))
        item = _item(n, RELATIONS, RELATIONS[gold])
        items.append(SourceItem(item.key, item.question, item.options, item.labels, item.gold, str(paths[0]),
                                (OBJECTS[n % 6],), item.fields, views=(str(paths[1]),)))
    return _source(items)


def test_multi_view_items_show_every_view_and_their_blind_baselines_have_known_answers(tmp_path):
    source = _views_source(tmp_path)
    summary = ask_run(source, TwoEyes(), Component("fake", {"model": "two-eyes"}), None, tmp_path / "run",
                      protocol="likelihood", blind=True)
    m, gains = summary["metrics"], summary["details"]["vision_gain"]
    assert m["accuracy"]["mean"] == 100.0
    assert m["accuracy_none"]["mean"] == 25.0  # no image: A, gold on 2 of 8
    assert m["accuracy_blank"]["mean"] == 25.0  # gray views read white, white: D, gold on 2 of 8
    assert gains["none"]["gain"] == gains["blank"]["gain"] == 75.0
    with pytest.raises(UsageError, match="takes one image a question"):
        ask_run(source, Prefers(), Component("fake", {"model": "prefers"}), None, tmp_path / "one",
                protocol="likelihood")


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    """A tiny random LLaVA with its genuine processor (built once for this file)."""
    from mllm_helpers import build

    return build("llava", tmp_path_factory.mktemp("llava"))


def test_a_multimodal_llm_sees_both_views_in_one_turn(tmp_path, llava):
    from spatialprobe.models.base import ScoreRequest
    from spatialprobe.models.mllm import MultimodalLLM
    from spatialprobe.vision import open_image

    source = _views_source(tmp_path)
    model = MultimodalLLM(str(llava), device="cpu")
    item = source.items[1]
    first, view = open_image(item.image), open_image(item.views[0])
    both = ScoreRequest(item.question, "", item.options, (first, view))
    one, two = model.score([ScoreRequest(item.question, "", item.options, first), both])
    assert model.chat_text("q", 2).count("<image>") == 2
    assert one != two and model.score([both]) == [pytest.approx(two)]


def test_report_pairs_a_run_with_variants_on_the_source_own_items(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    _ask(with_variants(lettered_source(), ["circular"]), FirstOption(), tmp_path / "a", protocol="likelihood")
    _ask(lettered_source(), Prefers(), tmp_path / "b", protocol="likelihood")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert "variants (--protocol-variants) are not paired; the items are." in result.output.replace("\n", " ")
    assert "cannot be paired" not in result.output


def test_an_unknown_protocol_variant_is_refused_on_the_command_line(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    result = CliRunner().invoke(app, ["spatialmqa", "--model", "m", "--data", str(tmp_path), "--images", str(tmp_path),
                                      "--out", str(tmp_path / "run"), "--protocol-variants", "circular,mirror"])
    assert result.exit_code == 2 and "--protocol-variants 'mirror' is no variant" in result.output


class Captions:
    """A contrastive model: scores each caption by its relation word alone, wherever it stands."""

    name = "captions"
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("contrastive",)

    def score(self, requests, progress=None):
        return [tuple(Prefers.liking[o.split()[-1]] for o in r.options) for r in requests]


def test_a_contrastive_wording_is_rotated_alike_and_its_order_blind_scorer_loses_nothing(tmp_path):
    from spatialprobe.benchmarks.base import Wording

    items = [replace(i, wordings={"contrastive": Wording("", tuple(f"the cup is {o}" for o in i.options), i.labels)})
             for i in lettered_source().items]
    source = with_variants(_source(items), ["circular"])
    rotated = {i.key: i for i in source.items}["q0~c1"].wording("contrastive")
    assert rotated.options[0] == "the cup is right" and rotated.labels[0] == "right"
    summary = ask_run(source, Captions(), Component("fake", {"model": "captions"}), None, tmp_path / "run",
                      condition="none")
    assert summary["details"]["wording"] == "contrastive"
    m = summary["metrics"]
    assert m["circular_gap"]["mean"] == 0.0 and m["circular_consistent"]["mean"] == pytest.approx(m["accuracy"]["mean"])


OPTIONS: dict[str, str] = {}
"""This file is also the benchmark module ``tiny-views`` of the bench command test (no options)."""


def views_benchmark(settings, seed):
    """The multi-view source as a benchmark module builds it: from ``--data`` (a folder), ``--limit``."""
    from pathlib import Path

    from spatialprobe.benchmarks.base import given, recorded

    found = given(settings)
    source = _views_source(Path(found["data"]))
    items = source.items[:found["limit"]] if found["limit"] else source.items
    return replace(source, name="tiny-views", items=items,
                   settings=recorded("tiny-views", found, found["data"], "1"))


def test_bench_asks_a_benchmark_module_blind_with_variants_of_its_multi_view_items(tmp_path, monkeypatch, llava):
    import json

    from typer.testing import CliRunner

    from spatialprobe import registry
    from spatialprobe.cli import app

    monkeypatch.setitem(registry._REGISTRY.setdefault("source", {}), "tiny-views",
                        (f"{__name__}:views_benchmark", "a test benchmark"))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["bench", "tiny-views", "--model", str(llava), "--data", str(tmp_path / "data"),
                                      "--limit", "3", "--out", str(out), "--blind", "--device", "cpu",
                                      "--protocol-variants", "circular"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    m, d = summary["metrics"], summary["details"]
    assert set(d["vision_gain"]) == {"blank", "none", "shuffled"} and d["coverage"]["used"] == 3
    assert d["variants"]["circular"]["groups"] == 3 and m["circular_gap"]["mean"] == pytest.approx(
        m["circular_vanilla"]["mean"] - m["circular_consistent"]["mean"], abs=1e-5)
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 3 * 4 + 3 * 3  # each item under four conditions, its rotations under real only
    assert json.loads((out / "config.json").read_text())["settings"]["source"]["protocol_variants"] == ["circular"]
    assert "circular: consistency gap" in (out / "table.md").read_text()
    from spatialprobe.audit.run_rows import run_source

    source, audited = run_source(out)  # the audits read the source's own items, replayed without the rotations
    assert [i.key for i in source.items] == [r["instance_id"] for r in audited] == ["q0", "q1", "q2"]


def test_the_answer_prior_carries_its_interval_over_the_source_unit(tmp_path):
    from spatialprobe.metrics.intervals import metric_intervals

    source = lettered_source()
    summary = _ask(source, FirstOption(), tmp_path / "run", protocol="likelihood")
    m, label = summary["metrics"], summary["details"]["answer_prior"]["label"]
    assert sum(i.gold == label for i in source.items) == max(sum(i.gold == r for i in source.items) for r in RELATIONS)
    majority = [{"instance_id": i.key, "image": i.fields["image"], "gold": i.gold, "pred": label}
                for i in source.items]
    expected = metric_intervals(majority, replace(source.spec, metrics={"accuracy": "accuracy"}))["accuracy"][""]
    assert m["answer_prior"]["ci"] == pytest.approx(list(expected)) and m["answer_prior"]["ci"][0] < 33.4
