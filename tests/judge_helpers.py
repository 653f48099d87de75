"""Builders for judge tests: image runs of colour-coded scenes written through ImageStore."""

from __future__ import annotations

from pathlib import Path

from spatialprobe import datasets
from spatialprobe.detectors.colour import draw_scene
from spatialprobe.imagestore import ImageStore, PromptItem

NEAR, FAR = 1.0, 64 / 255  # disparities: depth 1 and depth 255/64 = 3.98


def scene(task: str, a: str, b: str, answer: str, recognized: bool = True):
    """Objects of a 64x64 scene in which the rules must answer ``answer`` for A relative to B.

    size/height scenes only come out right when disparity is converted to depth: the object
    that the rule must call bigger has the *smaller* box but lies farther away.
    """
    if task == "size":
        small_far, big_near = ((4, 4, 14, 14), FAR), ((30, 30, 50, 50), NEAR)
        pa, pb = (small_far, big_near) if answer == "larger" else (big_near, small_far)
    elif task == "height":
        short_far, tall_near = ((4, 4, 10, 24), FAR), ((30, 4, 36, 34), NEAR)
        pa, pb = (short_far, tall_near) if answer == "taller" else (tall_near, short_far)
    else:
        b_box = (22, 22, 42, 42)
        a_box = {"above": (28, 4, 36, 12), "below": (28, 52, 36, 60), "beside": (4, 28, 12, 36),
                 "inside": (28, 28, 36, 36)}[answer]
        pa, pb = (a_box, NEAR), (b_box, NEAR)
    objects = [(b, pb[0], pb[1])] if recognized else []
    objects.append((a, pa[0], pa[1]))  # A painted last: inside scenes keep B's outline around it
    return draw_scene(objects)


def instances(task: str, golds: list[str]) -> list[dict]:
    """One dataset instance dict per wanted gold label, in order, all different instances."""
    pool = list(datasets.load(task).instances)
    out, used = [], set()
    for gold in golds:
        inst = next(i for i in pool if i.label == gold and i.id not in used)
        used.add(inst.id)
        out.append(inst.to_dict())
    return out


def write_run(path: Path, task: str, plan: list[tuple[str, str, bool]]) -> list[dict]:
    """An image run with one image per (gold, drawn answer, recognized) triple; returns the metas."""
    store = ImageStore(path)
    metas = instances(task, [g for g, _, _ in plan])
    store.add_prompts(PromptItem(m["id"], m["text"], m) for m in metas)
    for meta, (_, answer, recognized) in zip(metas, plan):
        image = scene(task, meta["obj_a"], meta["obj_b"], answer, recognized)
        store.save_image(image, meta["id"], 0, seed=0, backend="test", model="drawn-shapes",
                         settings={"drawn": answer})
    return metas
