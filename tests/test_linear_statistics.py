"""The closed forms of the mean statistics (spatialprobe/metrics/linear.py) give the registered
functions' own numbers: the gradient equals the central differences the intervals used before, the
joint values equal each run's statistic under the same weights, and every pair at once equals
`report A B`'s paired test of each pair - folds, subsets and clusters of one and of two objects."""

from __future__ import annotations

import numpy as np
import pytest

from spatialprobe.metrics.intervals import Resampling, encode, grouped, linear_gradient, row_weights
from spatialprobe.metrics.linear import mean_values
from spatialprobe.metrics.multiple import joint_scores
from spatialprobe.metrics.paired import paired_differences, paired_many
from spatialprobe.metrics.robust import directional


def rows_of(seed, n=240, pairs=False, folds=False, numeric=False):
    rng = np.random.default_rng(seed)
    objects = [f"o{k}" for k in range(12)]
    out = []
    for i in range(n):
        a, b = rng.choice(objects, 2, replace=False)
        row = {"instance_id": f"i{i}", "gold": str(rng.choice(["yes", "no"])), "image": f"img{i // 3}",
               "obj_a": str(a), "obj_b": str(b), "fold": int(rng.integers(3)) if folds else None}
        row["pred"] = bool(rng.random() < 0.6) if numeric else str(rng.choice(["yes", "no", "maybe"]))
        out.append(row)
    return out


SPECS = {
    "accuracy, images": Resampling(("yes", "no"), ("image",), metrics={"accuracy": "accuracy"}, pooled=True,
                                   key=("instance_id",)),
    "accuracy, object pairs, folds": Resampling(("yes", "no"), ("obj_a", "obj_b"), "fold", "fold {}",
                                                metrics={"accuracy": "accuracy"}),
    "share, instances": Resampling((), ("instance_id",), metrics={"share": "share"}, pooled=True, key=("instance_id",)),
}


def make(name, seed):
    spec = SPECS[name]
    return rows_of(seed, pairs="pairs" in name, folds="folds" in name, numeric=name.startswith("share")), spec


@pytest.mark.parametrize("name", SPECS)
def test_the_gradient_is_the_central_difference_of_the_registered_function(name):
    rows, spec = make(name, 1)
    enc = encode(rows, spec)
    stat = next(iter(spec.metrics.values()))
    exact = linear_gradient(enc, stat, enc.pred)
    numeric = directional(lambda w: grouped(enc, stat, enc.pred, w), np.eye(len(rows)))
    assert exact is not None and np.allclose(exact, numeric, atol=1e-6)


@pytest.mark.parametrize("name", SPECS)
def test_joint_values_are_each_runs_statistic_on_the_same_weights(name):
    runs = [make(name, seed)[0] for seed in range(4)]
    spec = SPECS[name]
    for run in runs[1:]:  # the same items and clusters, other predictions
        for row, first in zip(run, runs[0], strict=True):
            row.update({k: first[k] for k in ("gold", "image", "obj_a", "obj_b", "fold")})
    encs = [encode(r, spec) for r in runs]
    stat = next(iter(spec.metrics.values()))
    draws = np.random.default_rng(0).integers(0, encs[0].n_clusters, (50, encs[0].n_clusters))
    weights = row_weights(draws, encs[0].keys, encs[0].n_clusters)
    from spatialprobe.metrics.statistics import get

    declared = get(stat)
    x = np.stack([declared.mean_of(e.gold, e.pred) for e in encs])
    fast = mean_values(weights, x, encs[0].mask, encs[0].groups, len(encs[0].group_names), encs[0].pooled,
                       declared.scale)
    slow = np.stack([grouped(e, stat, e.pred, weights)[-1] for e in encs], axis=1)
    assert np.allclose(fast, slow, equal_nan=True)
    assert np.allclose(joint_scores(runs, spec, 120, 3), joint_scores(runs, spec, 120, 3, encs), equal_nan=True)


@pytest.mark.parametrize("name", SPECS)
def test_every_pair_at_once_is_report_a_b_of_each_pair(name):
    spec = SPECS[name]
    runs = [make(name, seed)[0] for seed in range(4)]
    for run in runs[1:]:
        for row, first in zip(run, runs[0], strict=True):
            row.update({k: first[k] for k in ("gold", "image", "obj_a", "obj_b", "fold")})
    stat = next(iter(spec.metrics.values()))
    together = paired_many([encode(r, spec) for r in runs], stat)
    assert together is not None
    for (i, j), diff in together.items():
        (one,) = paired_differences(runs[i], runs[j], spec)
        assert diff.difference == pytest.approx(one.difference, abs=1e-9)
        assert diff.ci == pytest.approx(one.ci, abs=1e-6) and diff.p == pytest.approx(one.p, abs=1e-6)


def test_mcnemar_holm_bh_and_wilson_equal_scipy_and_statsmodels_on_fixed_inputs():
    from scipy.stats import binomtest
    from statsmodels.stats.multitest import multipletests
    from statsmodels.stats.proportion import proportion_confint

    from spatialprobe.metrics.multiple import adjusted, mcnemar, mcnemar_many
    from spatialprobe.metrics.robust import wilson_bounds

    counts = [(b10, b01) for b10 in range(0, 40, 3) for b01 in range(0, 40, 4)] + [(500, 470), (0, 1), (7, 7)]
    for b10, b01 in counts:
        expected = 1.0 if b10 + b01 == 0 else binomtest(b10, b10 + b01, 0.5).pvalue
        assert mcnemar(b10, b01) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    b10, b01 = np.array(counts).T
    assert np.allclose(mcnemar_many(b10, b01), [mcnemar(a, b) for a, b in counts], rtol=1e-12)
    rng = np.random.default_rng(0)
    ps = list(np.concatenate([rng.random(150) ** 3, [0.01, 0.01, 1.0, 0.04]]))
    holm, bh = adjusted([*ps, float("nan")])
    assert holm[-1] is None and bh[-1] is None
    assert np.allclose(holm[:-1], multipletests(ps, method="holm")[1], rtol=1e-12)
    assert np.allclose(bh[:-1], multipletests(ps, method="fdr_bh")[1], rtol=1e-12)
    for p, n in [(0.0, 20), (1.0, 20), (0.85, 20), (0.523, 5987.3), (0.1, 3.5)]:
        assert wilson_bounds(p, n) == pytest.approx(proportion_confint(p * n, n, method="wilson"), abs=1e-12)
