"""`spatialprobe plan`: Connor's (1987) paired sample size times the pilot's measured design effect.

Two planted runs of 40 yes/no items in 10 images (4 each): A is wrong on every item of image 3,
B on every item of images 0-2. A - B is +1 on images 0-2, -1 on image 3, 0 elsewhere: discordance
16/40, difference 8/40, and since a row's difference is its image's, the cluster-robust variance
of the difference is 4 x K/(K-1) = 40/9 times the independent-items variance (psi - delta^2)/n.
"""

from __future__ import annotations

import math

import pytest
from many_helpers import write_ask, yes_no_source
from scipy import stats
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.errors import UsageError
from spatialprobe.reports.plan import connor_items, plan

KEYS = [f"q{n:02d}" for n in range(40)]
GOLDS = ["yes" if n % 2 == 0 else "no" for n in range(40)]
IMAGES = [f"img{n // 4}" for n in range(40)]


def connor(psi, delta, alpha=0.05, power=0.8):
    """Connor (1987), Biometrics 43: 207-211, eq. 3, by hand."""
    za, zb = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    return (za * math.sqrt(psi) + zb * math.sqrt(psi - delta ** 2)) ** 2 / delta ** 2


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("plan")
    source = yes_no_source(KEYS, GOLDS, IMAGES)
    a = write_ask(source, root / "a", "a", [n // 4 != 3 for n in range(40)])
    b = write_ask(source, root / "b", "b", [n // 4 > 2 for n in range(40)])
    return a, b


def test_the_pilot_pair_measures_discordance_difference_and_design_effect(pair):
    result = plan(pair, diff=10)
    p = result["pilot"]
    assert (p["n"], p["discordance"], p["difference"]) == (40, 0.4, pytest.approx(20.0))
    assert p["design_effect"] == pytest.approx(40 / 9, rel=1e-6)
    assert result["items"] == math.ceil(40 / 9 * connor(0.4, 0.1))


def test_the_detectable_difference_inverts_the_items_needed(pair):
    found = plan(pair, items=400)
    delta = found["detectable"] / 100
    assert 40 / 9 * connor(0.4, delta) == pytest.approx(400, rel=1e-9)
    assert connor_items(0.4, delta) == pytest.approx(connor(0.4, delta), rel=1e-12)
    assert plan(pair)["items"] == 40  # by default: the pilot's own rows


def test_one_run_needs_an_assumed_discordance_and_uses_its_accuracys_design_effect(pair):
    with pytest.raises(UsageError, match="--discordance SHARE"):
        plan(pair[:1], diff=5)
    result = plan(pair[:1], diff=5, discordance=0.2)
    # A is wrong on one whole image: accuracy 36/40, its rows' deviations constant within images
    assert result["pilot"]["design_effect"] == pytest.approx(4 * 10 / 9, rel=1e-6)
    assert result["items"] == math.ceil(40 / 9 * connor(0.2, 0.05))
    with pytest.raises(UsageError, match="at most the discordant share"):
        plan(pair[:1], diff=30, discordance=0.2)
    with pytest.raises(UsageError, match="not both"):
        plan(pair, diff=5, items=100)


def test_the_command_prints_the_items_and_the_formula(pair):
    result = CliRunner().invoke(app, ["plan", str(pair[0]), str(pair[1]), "--diff", "10"])
    assert result.exit_code == 0, result.output
    needed = math.ceil(40 / 9 * connor(0.4, 0.1))
    wanted = f"A paired difference of 10.0 points needs {needed:,} items (power 80%, two-sided alpha 0.05)."
    assert wanted in result.output
    assert "Connor RJ (1987)" in result.output
