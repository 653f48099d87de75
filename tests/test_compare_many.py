"""`spatialprobe compare RUN...`: many models on the same items, against independent code.

Four runs of one planted yes/no source (40 items in 10 images, 4 per image), written through the
real run spine (the ask kind) by models that answer as planted:

* ``best`` is right everywhere (40/40);
* ``mid`` is wrong on the first item of every image (30/40), and ``copy`` answers as ``mid``;
* ``low`` is wrong on the second item of every image and on the first of images 0-4 (25/40).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from interval_helpers import wilson
from many_helpers import write_ask, yes_no_source
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from test_imports_exact import invoke, refused
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.errors import UsageError
from spatialprobe.files import read_jsonl
from spatialprobe.metrics.paired import paired_differences, resampling_of
from spatialprobe.reports.compare import compare

KEYS = [f"q{n:02d}" for n in range(40)]
GOLDS = ["yes" if n % 2 == 0 else "no" for n in range(40)]
IMAGES = [f"img{n // 4}" for n in range(40)]
PLAN = {"best": [True] * 40,
        "mid": [n % 4 != 0 for n in range(40)],
        "copy": [n % 4 != 0 for n in range(40)],
        "low": [not (n % 4 == 1 or (n % 4 == 0 and n // 4 < 5)) for n in range(40)]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("many")
    source = yes_no_source(KEYS, GOLDS, IMAGES)
    return {name: write_ask(source, root / name, name, right) for name, right in PLAN.items()}


@pytest.fixture(scope="module")
def result(runs):
    return compare([runs[n] for n in ("low", "mid", "copy", "best")], resamples=500, seed=0)


def pair(result, a, b):
    return next(p for p in result["pairs"] if {p["a"].split(" ")[0], p["b"].split(" ")[0]} == {a, b})


def model(result, name):
    return next(m for m in result["models"] if m["label"].split(" ")[0] == name)


def test_scores_are_the_planted_shares_with_the_lmms_eval_clustered_variance(result, runs):
    assert [model(result, n)["score"] for n in ("best", "mid", "copy", "low")] == [100.0, 75.0, 75.0, 62.5]
    # lmms-eval's clustered_stderr (EvolvingLMMs-Lab/lmms-eval commit 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3,
    # lmms_eval/api/metrics.py, line 763; Miller 2024 eq. 4), re-coded:
    # SE^2 = var(s)/n (ddof 1) + (1/n^2) sum_c [(sum_i d_ic)^2 - sum_i d_ic^2], d = s - mean
    s = np.array(PLAN["low"], dtype=float)
    n, d = len(s), s - s.mean()
    clusters = np.array([int(i[3:]) for i in IMAGES])
    sums, squares = np.bincount(clusters, weights=d), np.bincount(clusters, weights=d * d)
    lmms = math.sqrt(d.var(ddof=1) / n + float((sums ** 2 - squares).sum()) / n ** 2)
    # the toolkit's variance is the same sum of within-cluster covariances without lmms-eval's
    # row term (var/n minus the squares it takes back), times the K/(K-1) small-sample factor:
    k = 10
    ours = k / (k - 1) * (lmms ** 2 - d.var(ddof=1) / n + (d * d).sum() / n ** 2)
    assert ours == pytest.approx(k / (k - 1) * float((sums ** 2).sum()) / n ** 2, rel=1e-12)
    # ... and compare's interval is the cluster-adjusted Wilson interval at that variance, t on K-1 df
    assert model(result, "low")["ci"] == wilson(0.625, ours, n, k)


def test_the_exact_mcnemar_p_equals_scipy_and_statsmodels_on_the_planted_discordance(result):
    entry = pair(result, "mid", "low")
    a_is_mid = entry["a"].startswith("mid")
    b10, b01 = (10, 5) if a_is_mid else (5, 10)  # mid right, low wrong: the second item of each image
    assert entry["discordant"] == {"b10": b10, "b01": b01} and entry["n"] == 40
    assert entry["p_mcnemar"] == pytest.approx(stats.binomtest(b10, 15, 0.5).pvalue, abs=1e-15)
    table = [[20, b10], [b01, 5]]  # both right 20, both wrong 5
    assert entry["p_mcnemar"] == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-15)


def test_holm_and_bh_equal_statsmodels_over_the_pairs_p_values_of_report(result, runs):
    ps = [p["p"] for p in result["pairs"]]
    names = {m["label"]: m["path"] for m in result["models"]}
    summary = json.loads((runs["low"] / "summary.json").read_text())
    spec = resampling_of(summary, read_jsonl(runs["low"] / "predictions.jsonl"))
    for entry in result["pairs"]:  # p is the p of `report A B`: the same function
        rows = [read_jsonl(Path(names[entry[x]]) / "predictions.jsonl") for x in "ab"]
        (acc, *_) = paired_differences(rows[0], rows[1], spec)
        assert (entry["diff"], entry["p"]) == (acc.difference, acc.p)
    measurable = [n for n, p in enumerate(ps) if p is not None]
    values = [ps[n] for n in measurable]
    holm = multipletests(values, method="holm")[1]
    bh = multipletests(values, method="fdr_bh")[1]
    assert [result["pairs"][n]["p_holm"] for n in measurable] == pytest.approx(list(holm), abs=1e-15)
    assert [result["pairs"][n]["p_bh"] for n in measurable] == pytest.approx(list(bh), abs=1e-15)
    # BH again from scipy's own implementation
    assert list(bh) == pytest.approx(list(stats.false_discovery_control(values)), abs=1e-12)


def test_a_strictly_dominating_model_ranks_1_in_every_resample(result):
    best = model(result, "best")
    assert best["rank"] == 1 and best["rank_interval"] == [1, 1] and result["models"][0] is best
    assert all(best["group"] not in m["group"] for m in result["models"][1:])


def test_two_copies_of_one_model_are_indistinguishable_with_p_1(result):
    entry = pair(result, "mid", "copy")
    assert (entry["diff"], entry["ci"], entry["p"], entry["p_mcnemar"]) == (0.0, [0.0, 0.0], 1.0, 1.0)
    assert entry["discordant"] == {"b10": 0, "b01": 0} and not entry["significant_holm"]
    mid, copy = model(result, "mid"), model(result, "copy")
    assert mid["rank"] == copy["rank"] == 2 and mid["rank_interval"] == copy["rank_interval"]
    assert set(mid["group"]) & set(copy["group"])


def test_runs_on_other_items_or_another_benchmark_are_refused_naming_what_differs(runs, tmp_path):
    fewer = write_ask(yes_no_source(KEYS[:39], GOLDS[:39], IMAGES[:39]), tmp_path / "fewer", "mid", PLAN["mid"][:39])
    with pytest.raises(UsageError, match=r"fewer cannot be compared with .*mid: their item keys differ: "
                                         r"1 keys \(instance_id\) only in the first run, 0 only in this one"):
        compare([runs["mid"], fewer])
    other = write_ask(yes_no_source(KEYS, GOLDS, IMAGES, name="other"), tmp_path / "other", "mid", PLAN["mid"])
    with pytest.raises(UsageError, match=r"different benchmarks or sources \(planted@v1 vs other@v1\)"):
        compare([runs["mid"], other])
    blank = write_ask(yes_no_source(KEYS, GOLDS, IMAGES), tmp_path / "blank", "mid", PLAN["mid"], condition="blank")
    with pytest.raises(UsageError, match=r"blank cannot be compared with .*: their image conditions differ "
                                         r"\(none vs blank\)"):
        compare([runs["mid"], blank])
    with pytest.raises(UsageError, match="two runs or more"):
        compare([runs["mid"]])


def test_the_command_writes_compare_json_the_table_the_plot_and_checks_a_reported_score(runs, tmp_path):
    out = tmp_path / "cmp"
    result = CliRunner().invoke(app, ["compare", str(runs["mid"]), str(runs["low"]), "--out", str(out),
                                      "--reported", "60.9", "--resamples", "200"])
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "compare.json").read_text())
    assert set(saved["pairs"][0]) >= {"a", "b", "n", "discordant", "diff", "ci", "p", "p_mcnemar", "p_holm", "p_bh"}
    assert set(saved["models"][0]) >= {"rank", "rank_interval", "score", "ci"}
    assert saved["provenance"]["runs"][0]["identity"] and saved["provenance"]["toolkit"]["toolkit"] == "spatialprobe"
    assert (out / "ranks.png").stat().st_size > 0 and "| rank | model | accuracy |" in result.output
    low = next(r for r in saved["reported"]["runs"] if r["label"].startswith("low"))
    inside = low["ci"][0] <= 60.9 <= low["ci"][1]
    assert low["inside"] is inside and low["miss"] == (0.0 if inside else pytest.approx(60.9 - low["ci"][0]))
    mid = next(r for r in saved["reported"]["runs"] if r["label"].startswith("mid"))
    assert mid["inside"] is False and mid["miss"] == pytest.approx(60.9 - mid["ci"][0])
    assert f"lies {abs(mid['miss']):.1f} points below the run's 95 % interval" in result.output


# --- compare refusals ---------------------------------------------------------------------------------

def two_runs(tmp_path: Path) -> list[Path]:
    for name, preds in (("a", "aaab"), ("b", "abbb")):
        (tmp_path / f"{name}.csv").write_text("id,pred,gold\n" + "".join(f"{i},{p},a\n" for i, p in enumerate(preds)))
    invoke("import", "plain", tmp_path / "a.csv", tmp_path / "b.csv", "--id", "id", "--prediction", "pred", "--gold",
           "gold", "--benchmark", "toy", "--out", tmp_path / "runs")
    return sorted((tmp_path / "runs").iterdir())


def test_compare_refuses_a_run_twice_and_a_cut_off_predictions_file(tmp_path):
    a, b = two_runs(tmp_path)
    assert "is given twice" in refused("compare", a, a, "--out", tmp_path / "c")
    assert "is given twice" in refused("compare", a, b, Path(str(a) + "/"), "--out", tmp_path / "c")
    text = (b / "predictions.jsonl").read_text()
    (b / "predictions.jsonl").write_text(text[:-25])  # cut off while it was written
    out = refused("compare", a, b, "--out", tmp_path / "c")
    assert f"{b / 'predictions.jsonl'}, line 4: is not a JSON row" in out
