"""judge compare resamples prompts, the unit several images of one prompt share."""

import numpy as np
from sklearn.metrics import cohen_kappa_score

from spatialprobe.judging import judge_compare_stats as S


def judged(images_per_prompt: int, seed: int = 3) -> dict[str, dict[S.Key, dict]]:
    """Two judges over 12 prompts; a prompt's images are judged alike (prompt-driven answers)."""
    rng = np.random.default_rng(seed)
    rows: dict[str, dict[S.Key, dict]] = {"a": {}, "b": {}}
    for prompt in range(12):
        answers = {j: str(rng.choice(["left of", "right of"])) for j in rows}
        for image in range(images_per_prompt):
            for j in rows:
                rows[j][(f"p{prompt:02d}", image)] = {"pred": answers[j], "gold": "left of", "recognized": True}
    return rows


def test_images_of_one_prompt_are_one_unit_so_copying_them_leaves_kappa_and_its_interval_unchanged():
    one, four = judged(1), judged(4)
    stats_one = S.group_stats(one, sorted(one["a"]), "label", 300, 0)
    stats_four = S.group_stats(four, sorted(four["a"]), "label", 300, 0)
    kappa_one, kappa_four = stats_one["kappa"]["a | b"], stats_four["kappa"]["a | b"]
    keys = sorted(four["a"])
    assert kappa_four["value"] == round(cohen_kappa_score([four["a"][k]["pred"] for k in keys],
                                                          [four["b"][k]["pred"] for k in keys]), 6)
    assert kappa_four["value"] == kappa_one["value"]
    # the same prompts drawn, each weighing four images instead of one: the same interval
    assert kappa_four["ci"] == kappa_one["ci"] and kappa_one["ci"][0] < kappa_one["value"] < kappa_one["ci"][1]
    assert stats_four["scores"]["a"]["ci"] == stats_one["scores"]["a"]["ci"]
    assert (stats_four["compared"], stats_four["prompts"]) == (48, 12)


def test_one_image_per_prompt_draws_exactly_the_image_bootstrap():
    from spatialprobe.metrics import agreement as A

    plain = A.stratified_weights([5, 3], 50, 7)
    by_prompt = A.stratified_weights([5, 3], 50, 7, [np.arange(5), np.arange(3)])
    assert all(np.array_equal(x, y) for x, y in zip(plain, by_prompt, strict=True))


def test_the_same_seed_gives_the_same_interval_and_another_seed_another():
    rows = judged(1)
    keys = sorted(rows["a"])
    first, again = (S.group_stats(rows, keys, "label", 200, 5)["kappa"]["a | b"]["ci"] for _ in range(2))
    assert first == again and first != S.group_stats(rows, keys, "label", 200, 6)["kappa"]["a | b"]["ci"]
