"""``spatialprobe compare`` of 20 models × 6,000 items against a plain numpy computation of the same
statistics, side by side in one run; and ``spatialprobe import`` of one 6,000-line CSV.

The bench writes 20 models' answers to 6,000 yes/no questions about 2,000 images (three each; a
model's errors partly shared within an image, so the image is the unit), imports them
(``spatialprobe import plain ... --cluster image``) and times, each in a fresh process:

* ``spatialprobe import`` of one 6,000-line CSV (the goal: about a second);
* the toolkit's start-up (``spatialprobe --help``);
* ``spatialprobe compare`` of the 20 imported runs (2,000 joint resamples, seed 0);

and, in this process, the same statistics in plain numpy/scipy from the CSV files: 20 accuracies,
190 paired clustered tests (A − B ± t·SE over images, SE² = K/(K−1) Σ_image (Σ its rows' d − D)²/R²,
t on K − 1 df), the exact McNemar p of each pair, Holm and Benjamini-Hochberg over the 190 p, and
the joint cluster bootstrap of the 20 accuracies with 2,000 draws of the images (the draws made as
``compare`` makes them) and its 95 % rank intervals. It prints the ratio compare / (numpy + start-up)
(the goal: at most 3) and checks that compare.json agrees with numpy to 1e-6. Memory: the peak
resident size of ``compare`` on 10 and on 20 runs (linear in runs × items: the second about twice
the first's growth over start-up).

Run: ``python bench/compare_speed.py [--models 20] [--items 6000]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

CLI = [sys.executable, "-m", "spatialprobe"]


def write_answers(folder: Path, models: int, items: int, seed: int = 0) -> list[Path]:
    """One CSV per model: id, image, gold, pred; accuracy from 55 to 80 %, errors shared per image."""
    rng = np.random.default_rng(seed)
    images = items // 3
    gold = rng.choice(["yes", "no"], items)
    image_of = np.arange(items) // 3
    files = []
    for m in range(models):
        skill = 0.55 + 0.25 * m / max(1, models - 1)
        hard = rng.random(images) < 0.3  # a hard image: its questions fail together more often
        p_right = np.where(hard[image_of], skill - 0.2, skill + 0.05)
        right = rng.random(items) < p_right
        pred = np.where(right, gold, np.where(gold == "yes", "no", "yes"))
        path = folder / f"model{m:02d}.csv"
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["id", "image", "gold", "pred"])
            writer.writerows(zip([f"q{i:05d}" for i in range(items)], [f"img{i:04d}" for i in image_of], gold, pred,
                                 strict=True))
        files.append(path)
    return files


def timed(command: list[str]) -> tuple[float, int]:
    """(wall seconds, peak resident KB) of a command run to its end (it must succeed)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        error = process.stderr.read().decode()[-2000:] if process.stderr else ""
        raise SystemExit(f"{' '.join(command)} failed: {error}")
    return wall, usage.ru_maxrss


def import_plain(files: list[Path], out: Path) -> None:
    subprocess.run([*CLI, "import", "plain", *map(str, files), "--id", "id", "--prediction", "pred", "--gold",
                    "gold", "--cluster", "image", "--benchmark", "toy", "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)


def holm(p: np.ndarray) -> np.ndarray:
    order = np.argsort(p)
    adjusted = np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order])
    out = np.empty_like(p)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    order = np.argsort(p)[::-1]
    adjusted = np.minimum.accumulate(len(p) / np.arange(len(p), 0, -1) * p[order])
    out = np.empty_like(p)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def numpy_statistics(files: list[Path], resamples: int, seed: int) -> dict:
    """The statistics compare reports, from the CSV files, in plain numpy and scipy."""
    columns = [np.loadtxt(f, delimiter=",", skiprows=1, dtype=str) for f in files]
    right = np.stack([c[:, 3] == c[:, 2] for c in columns]).astype(float)  # [M, R]
    names, image = np.unique(columns[0][:, 1], return_inverse=True)
    m, r, k = right.shape[0], right.shape[1], len(names)
    accuracy = 100 * right.mean(1)
    pairs, t = [], stats.t.ppf(0.975, k - 1)
    for i in range(m - 1):
        d = right[i] - right[i + 1:]  # [M - i - 1, R]
        diff = 100 * d.mean(1)
        centred = 100 * (d - d.mean(1, keepdims=True)) / r
        per_image = np.stack([np.bincount(image, weights=row, minlength=k) for row in centred])
        se = np.sqrt((per_image ** 2).sum(1) * k / (k - 1))
        for n, j in enumerate(range(i + 1, m)):
            b10 = int(((right[i] == 1) & (right[j] == 0)).sum())
            b01 = int(((right[i] == 0) & (right[j] == 1)).sum())
            pairs.append({"diff": diff[n], "ci": [max(diff[n] - t * se[n], -100), min(diff[n] + t * se[n], 100)],
                          "p": 2 * stats.t.sf(abs(diff[n]) / se[n], k - 1),
                          "p_mcnemar": stats.binomtest(b10, b10 + b01, 0.5).pvalue})
    p = np.array([e["p"] for e in pairs])
    for e, h, b in zip(pairs, holm(p), benjamini_hochberg(p), strict=True):
        e.update(p_holm=h, p_bh=b)
    rng = np.random.default_rng(seed)
    batch, draws = max(1, 4_000_000 // r // 2), []
    for start in range(0, resamples, batch):  # the images drawn as compare draws them
        drawn = rng.integers(0, k, (min(batch, resamples - start), k))
        counts = np.stack([np.bincount(row, minlength=k) for row in drawn]).astype(float)
        weights = counts[:, image]  # [b, R]: each row as often as its image was drawn
        draws.append(100 * (weights @ right.T) / weights.sum(1, keepdims=True))
    ranks = stats.rankdata(-np.concatenate(draws), axis=1, method="min")
    low = np.percentile(ranks, 2.5, axis=0, method="lower")
    high = np.percentile(ranks, 97.5, axis=0, method="higher")
    return {"accuracy": accuracy, "pairs": pairs, "rank_intervals": np.stack([low, high], 1).astype(int)}


def agreement(found: dict, expected: dict, models: int) -> float:
    """The largest difference between compare.json and the numpy statistics (ranks: must be equal)."""
    labels = sorted(m["label"] for m in found["models"])
    index = {label: n for n, label in enumerate(labels)}
    worst = 0.0
    for m in found["models"]:
        worst = max(worst, abs(m["score"] - expected["accuracy"][index[m["label"]]]))
        if list(m["rank_interval"]) != list(expected["rank_intervals"][index[m["label"]]]):
            return float("inf")
    order = [(i, j) for i in range(models) for j in range(i + 1, models)]
    by_pair = {(index[e["a"]], index[e["b"]]): e for e in found["pairs"]}
    for (i, j), e in zip(order, expected["pairs"], strict=True):
        got = by_pair[(i, j)]
        for key in ("diff", "p", "p_mcnemar", "p_holm", "p_bh"):
            worst = max(worst, abs(got[key] - e[key]))
        worst = max(worst, *(abs(a - b) for a, b in zip(got["ci"], e["ci"], strict=True)))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--items", type=int, default=6000)
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = write_answers(folder, args.models, args.items)
        one, _ = timed([*CLI, "import", "plain", str(files[0]), "--id", "id", "--prediction", "pred", "--gold",
                        "gold", "--cluster", "image", "--benchmark", "toy", "--out", str(folder / "one")])
        import_plain(files, folder / "runs")
        runs = sorted(str(p) for p in (folder / "runs").iterdir())
        startup, startup_kb = min(timed([*CLI, "--help"]) for _ in range(3))
        compare_s, compare_kb = min(timed([*CLI, "compare", *runs, "--out", str(folder / "cmp"),
                                           "--resamples", str(args.resamples)]) for _ in range(2))
        _, half_kb = timed([*CLI, "compare", *runs[:args.models // 2], "--out", str(folder / "half"),
                                 "--resamples", str(args.resamples)])
        start = time.perf_counter()
        expected = numpy_statistics(files, args.resamples, 0)
        numpy_s = time.perf_counter() - start
        found = json.loads((folder / "cmp" / "compare.json").read_text())
        worst = agreement(found, expected, args.models)
    ratio = compare_s / (numpy_s + startup)
    print(f"import plain of one {args.items:,}-line CSV: {one:.2f} s (goal: about 1 s)")
    print(f"toolkit start-up (spatialprobe --help): {startup:.2f} s")
    print(f"plain numpy: {numpy_s:.2f} s   spatialprobe compare: {compare_s:.2f} s "
          f"({args.models} runs x {args.items:,} items, {args.models * (args.models - 1) // 2} pairs, "
          f"{args.resamples} joint resamples)")
    print(f"ratio compare / (numpy + start-up): {ratio:.2f} (goal: <= 3)")
    print(f"largest difference from numpy: {worst:.2e} (goal: <= 1e-6; rank intervals equal)")
    print(f"peak memory: start-up {startup_kb / 1024:.0f} MB, compare of {args.models // 2} runs "
          f"{half_kb / 1024:.0f} MB, of {args.models} runs {compare_kb / 1024:.0f} MB "
          f"(growth over start-up {(half_kb - startup_kb) / 1024:.0f} -> {(compare_kb - startup_kb) / 1024:.0f} MB)")
    if worst > 1e-6:
        raise SystemExit("compare.json does not agree with numpy to 1e-6")


if __name__ == "__main__":
    main()
