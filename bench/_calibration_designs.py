"""The simulated runs of the calibration bench (bench/calibration.py): a logit-normal
model whose population accuracy is known (Gauss-Hermite quadrature; κ in closed form), the data
set of one replication (:class:`Data`), and the designs a run kind reports (:func:`designs`):
questions sharing an image, few images, object pairs with object or pair errors, judge scores of
several images per prompt, κ between two judges, a run near the boundary, and paired runs. Not a
script: ``bench/calibration.py`` imports it (``bench/`` is first on ``sys.path``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from spatialprobe.metrics.intervals import Resampling

NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)


def population(mu: float, sd: float) -> float:
    """E[expit(mu + sd Z)], Z standard normal: the population accuracy in percent."""
    return float(100 * np.sum(WEIGHTS * special.expit(mu + sd * NODES)) / np.sqrt(2 * np.pi))


def mu_for(accuracy: float, sd: float) -> float:
    return float(optimize.brentq(lambda m: population(m, sd) - accuracy, -15, 15))


@dataclass
class Data:
    """One simulated run (or two, paired): rows, the spec its kind builds, the true value."""

    rows: list[dict]
    spec: Resampling
    truth: float
    rows_b: list[dict] | None = None
    lmms_cluster: str = "image"
    """The single field lmms-eval's clustered SE would be given."""
    judged: dict | None = None
    """Two judges' answers by (prompt id, image index), for κ (``judge compare``)."""


@dataclass
class Design:
    name: str
    make: Callable[[np.random.Generator, float], Data]
    """(rng, difference in points: 0 for the null) -> data."""
    paired: bool = False
    through: str = "paired_differences"
    """The toolkit's function measured: ``paired_differences`` (``report A B``), ``vision_gain``
    (an ask run's real − blind), ``metric_intervals`` (a run's interval) or ``kappa``
    (``judge compare``'s group statistics)."""
    results: dict = field(default_factory=dict)


def _answer(correct: np.ndarray) -> list[str]:
    return ["y" if c else "n" for c in correct]


def images(k: int, sd: float = 1.0, accuracy: float = 75.0) -> Callable[[np.random.Generator, float], Data]:
    """k images with 1-5 questions each; image effects N(0, sd) on the logit scale."""
    mu = mu_for(accuracy, sd)

    def make(rng: np.random.Generator, delta: float) -> Data:
        sizes = rng.integers(1, 6, size=k)
        image = np.repeat(np.arange(k), sizes)
        p = special.expit(mu + sd * rng.normal(size=k)[image])
        rows = [{"instance_id": str(i), "image": f"i{g}", "gold": "y", "pred": a}
                for i, (g, a) in enumerate(zip(image, _answer(rng.random(len(p)) < p), strict=True))]
        mu_b = mu_for(accuracy - delta, sd)
        p_b = special.expit(mu_b + sd * rng.normal(size=k)[image])
        rows_b = [dict(r, pred=a) for r, a in zip(rows, _answer(rng.random(len(p)) < p_b), strict=True)]
        spec = Resampling(("y", "n"), ("image",), key=("instance_id",), unit="images", metrics={"accuracy": "accuracy"})
        return Data(rows, spec, accuracy, rows_b, "image")
    return make


def object_pairs(k: int, sd_object: float, sd_pair: float, accuracy: float = 75.0, folds: int = 3,
                 pairs: int | None = None) -> Callable[[np.random.Generator, float], Data]:
    """Every pair of k objects (or the first ``pairs`` of them in a fixed shuffled order: an
    incomplete design, as the size task's) asked in both orders, split into folds by pair;
    logit = mu + u_a + u_b + v_ab."""
    sd = math.sqrt(2 * sd_object ** 2 + sd_pair ** 2)
    mu = mu_for(accuracy, sd)
    a, b = np.triu_indices(k, 1)
    if pairs is not None:
        keep = np.sort(np.random.default_rng(k).permutation(len(a))[:pairs])
        a, b = a[keep], b[keep]

    def draw(rng: np.random.Generator, m: float) -> np.ndarray:
        u = sd_object * rng.normal(size=k)
        v = sd_pair * rng.normal(size=len(a))
        logit = np.repeat(m + u[a] + u[b] + v, 2)
        return rng.random(len(logit)) < special.expit(logit)

    def make(rng: np.random.Generator, delta: float) -> Data:
        fold = rng.integers(0, folds, size=len(a))
        right = draw(rng, mu)
        rows = []
        for n in range(len(a)):
            for order in (0, 1):
                gold = "larger" if order == 0 else "smaller"
                other = "smaller" if order == 0 else "larger"
                rows.append({"instance_id": f"{n}-{order}", "fold": int(fold[n]), "obj_a": f"o{a[n]}",
                             "obj_b": f"o{b[n]}", "pair": f"{a[n]}-{b[n]}", "gold": gold,
                             "pred": gold if right[2 * n + order] else other})
        right_b = draw(rng, mu_for(accuracy - delta, sd))
        rows_b = [dict(r, pred=r["gold"] if c else ("smaller" if r["gold"] == "larger" else "larger"))
                  for r, c in zip(rows, right_b, strict=True)]
        spec = Resampling(("larger", "smaller"), ("obj_a", "obj_b"), group="fold", metrics={"accuracy": "accuracy"})
        return Data(rows, spec, accuracy, rows_b, "pair")
    return make


def prompts(k: int, per: int = 4, sd: float = 1.5, share: float = 70.0) -> Callable[[np.random.Generator, float], Data]:
    """Judge scores: k prompts with ``per`` images each, a yes/no judgement per image; prompt effects N(0, sd)."""
    mu = mu_for(share, sd)

    def make(rng: np.random.Generator, delta: float) -> Data:
        prompt = np.repeat(np.arange(k), per)
        p = special.expit(mu + sd * rng.normal(size=k)[prompt])
        yes = rng.random(len(p)) < p
        rows = [{"instance_id": str(i), "prompt": f"p{g}", "image_index": i % per, "score": bool(y)}
                for i, (g, y) in enumerate(zip(prompt, yes, strict=True))]
        spec = Resampling((), ("prompt",), key=("instance_id",), pred="score", unit="prompts",
                          metrics={"share": "share"})
        return Data(rows, spec, share, None, "prompt")
    return make


KAPPA_ACCURACY = 75.0
KAPPA_TRUTH = (2 * KAPPA_ACCURACY / 100 - 1) ** 2
"""Two judges right with probability q = 75 % each, independently given the prompt, on a gold
label that is left or right with probability 1/2: agreement q² + (1−q)², chance agreement 1/2, so
the population κ is (2q − 1)² = 0.25."""


def kappa_prompts(k: int = 30, per: int = 4, sd: float = 3.0) -> Callable[[np.random.Generator, float], Data]:
    """Two judges answer "left of"/"right of" on k prompts' ``per`` images each; whether a judge is
    right depends on the prompt (its own effect per prompt, N(0, sd) on the logit scale), so the
    judges' disagreement is prompt-driven: the images of a prompt are not independent."""
    mu = mu_for(KAPPA_ACCURACY, sd)

    def make(rng: np.random.Generator, delta: float) -> Data:
        gold = rng.choice(["left of", "right of"], size=k)
        judged: dict[str, dict] = {}
        for judge in ("a", "b"):
            p = special.expit(mu + sd * rng.normal(size=k))
            right = rng.random((k, per)) < p[:, None]
            judged[judge] = {(f"p{i:03d}", j): {"gold": str(gold[i]), "recognized": True,
                                                "pred": str(gold[i]) if right[i, j] else
                                                ("right of" if gold[i] == "left of" else "left of")}
                             for i in range(k) for j in range(per)}
        return Data([], Resampling(()), KAPPA_TRUTH, None, "prompt", judged)
    return make


def boundary(n: int = 20, accuracy: float = 95.0) -> Callable[[np.random.Generator, float], Data]:
    """n independent questions at a true accuracy near 100 %."""
    def make(rng: np.random.Generator, delta: float) -> Data:
        rows = [{"instance_id": str(i), "gold": "y", "pred": a}
                for i, a in enumerate(_answer(rng.random(n) < accuracy / 100))]
        return Data(rows, Resampling(("y", "n"), metrics={"accuracy": "accuracy"}), accuracy, None, "instance_id")
    return make


def designs() -> list[Design]:
    return [
        Design("images (40, ICC ~0.2)", images(40)),
        Design("few images (10)", images(10)),
        Design("object pairs, object errors, 3 folds", object_pairs(16, 0.7, 0.0)),
        Design("object pairs, pair errors, 3 folds", object_pairs(16, 0.0, 1.2)),
        Design("judge: 4 images per prompt (30)", prompts(30)),
        Design("κ (judge compare): 4 images per prompt (30), prompt-driven", kappa_prompts(30), through="kappa"),
        Design("boundary: n = 20 at 95 %", boundary()),
        Design("paired: images (40)", images(40), paired=True),
        Design("paired: object pairs, object errors", object_pairs(16, 0.7, 0.0), paired=True),
        Design("paired: object pairs, pair errors", object_pairs(16, 0.0, 1.2), paired=True),
        Design("vision gain (real − blind): 25 objects, 250 of 300 pairs, 5 folds, object errors",
               object_pairs(25, 0.7, 0.0, folds=5, pairs=250), paired=True, through="vision_gain"),
    ]
