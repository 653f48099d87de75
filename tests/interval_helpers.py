"""Known answers for the cluster-robust intervals: the cluster-adjusted Wilson interval by hand."""

import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint


def wilson(p, variance, n, clusters):
    """The cluster-adjusted Wilson interval in percent, by hand: effective size p(1-p)/variance (n at
    0 or 1), times (z / t_{K-1})^2, then statsmodels' Wilson interval (the list a summary holds)."""
    size = n if p in (0.0, 1.0) else p * (1 - p) / variance
    size *= (stats.norm.ppf(0.975) / stats.t.ppf(0.975, clusters - 1)) ** 2
    low, high = proportion_confint(p * size, size, alpha=0.05, method="wilson")
    return pytest.approx([100 * low, 100 * high], abs=1e-6)


def plain_wilson(count, n):
    """Wilson's score interval in percent of ``count`` of ``n`` independent rows (each its own cluster):
    the design effect is 1 by design, so no effective size and no t shrink - statsmodels' own."""
    low, high = proportion_confint(count, n, alpha=0.05, method="wilson")
    return pytest.approx([100 * low, 100 * high], abs=1e-6)
