"""Known inputs: the toolkit's exact tests and intervals equal independent libraries' (issue 29)."""

import pytest
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

from spatialprobe.judging import compare_stats as S
from spatialprobe.metrics.robust import clopper_pearson, exact_mcnemar, wilson_score


@pytest.mark.parametrize(("a_only", "b_only"), [(0, 0), (3, 0), (7, 2), (12, 12), (40, 25), (1, 30)])
def test_exact_mcnemar_equals_scipys_binomial_test(a_only, b_only):
    expected = 1.0 if a_only + b_only == 0 else binomtest(a_only, a_only + b_only, 0.5).pvalue
    assert exact_mcnemar(a_only, b_only) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("k", "n"), [(0, 5), (4, 5), (5, 5), (17, 20), (20, 20), (312, 500)])
def test_wilson_and_clopper_pearson_equal_statsmodels(k, n):
    assert wilson_score(k, n) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="wilson"), abs=1e-12)
    assert clopper_pearson(k, n) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="beta"), abs=1e-12)
    if (k, n) == (4, 5):  # the example: 4 of 5 right
        assert [round(100 * x, 1) for x in clopper_pearson(k, n)] == [28.4, 99.5]


def test_the_same_seed_gives_the_same_interval_and_another_seed_another():
    rows = {j: {(f"p{i}", 0): {"pred": "left of" if (i * (j == "a") + i // 3) % 2 else "right of",
                                "gold": "left of", "recognized": True} for i in range(12)} for j in ("a", "b")}
    keys = sorted(rows["a"])
    first, again = (S.group_stats(rows, keys, "label", 200, 5)["kappa"]["a | b"]["ci"] for _ in range(2))
    other = S.group_stats(rows, keys, "label", 200, 6)["kappa"]["a | b"]["ci"]
    assert first == again and first != other
