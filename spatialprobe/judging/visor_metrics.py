"""VISOR (Gokhale et al. 2022): object accuracy and spatial correctness of generated images.

Per image of a spatial SR2D prompt (``rel_type`` not ``and``/``single``): *both* = both
classes detected; *correct* = both and some pair of their detections satisfies the relation by
the sign of the centroid difference (``detectors.rules.visor_any_pair``); in a released-layout
file the record's ``sra`` flag says it (as the released ``visor.py`` reads it), the centroids
only when ``sra`` is absent. Then, in percent:

* ``OA`` = images with both / images;  ``VISOR_cond`` = correct / images with both;
* ``VISOR`` (unconditional) = correct / images (= VISOR_cond x OA / 100);
* ``VISOR_n`` = prompts with at least ``n`` correct images / prompts, for n = 1..N (N = most
  images of one prompt, at least 4, as the released ``visor.py`` prints VISOR_1..4 always).
  VISOR_n is None (unmeasurable, printed "–") where some prompt has fewer than ``n`` images:
  the released script prints 0.00 there, which reads as a measured failure.

The same numbers are given per relation and per class (images whose prompt names the class).
A number with nothing to measure (``VISOR_cond`` where no image has both objects) is None.
The run kind (``spatialprobe visor``) is :class:`spatialprobe.judging.visor.VisorRun`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.detectors.rules import SR2D_RELATIONS, visor_any_pair
from spatialprobe.files import DataError, read_json_file
from spatialprobe.tasks.sr2d import is_spatial
from spatialprobe.validate import check_detection, detection_prompt

VISOR_N_MIN = 4
"""VISOR_1..4 are always reported, as the released ``visor.py`` prints them."""


def image_outcome(prompt: dict[str, Any], classes: Sequence[str],
                  centroids: Sequence[Sequence[float]] | None, sra: Any = None) -> dict[str, Any]:
    """Detection and spatial correctness of one image of a spatial prompt.

    A given ``sra`` (the released files' spatial flag) decides the relation, as the released
    ``visor.py`` reads it; only without it is the relation computed from the centroids.
    """
    a, b = prompt["obj_1_attributes"][0], prompt["obj_2_attributes"][0]
    det_a, det_b = a in classes, b in classes
    if sra is not None:
        spatial = bool(sra)
    elif centroids is not None:
        ca = [c for cls, c in zip(classes, centroids, strict=True) if cls == a]
        cb = [c for cls, c in zip(classes, centroids, strict=True) if cls == b]
        spatial = visor_any_pair(ca, cb, SR2D_RELATIONS[prompt["rel_type"]])
    else:
        spatial = False
    return {"uid": int(prompt["unique_id"]), "obj_a": a, "obj_b": b, "rel": prompt["rel_type"],
            "det_a": det_a, "det_b": det_b, "both": det_a and det_b,
            "correct": det_a and det_b and spatial}


def aggregate(outcomes: Sequence[dict[str, Any]], n_max: int | None = None) -> dict[str, Any]:
    """OA, VISOR, VISOR_cond, VISOR_1..N and object accuracies (percent) of a set of images."""
    count = len(outcomes)
    both = sum(o["both"] for o in outcomes)
    correct = sum(o["correct"] for o in outcomes)
    per_prompt: dict[int, int] = {}
    images_per_prompt: dict[int, int] = {}
    for o in outcomes:
        per_prompt[o["uid"]] = per_prompt.get(o["uid"], 0) + int(o["correct"])
        images_per_prompt[o["uid"]] = images_per_prompt.get(o["uid"], 0) + 1
    n_max = max(VISOR_N_MIN, n_max or max(images_per_prompt.values(), default=0))
    pct = lambda x, n: 100.0 * x / n if n else None  # noqa: E731  (None: nothing to measure)
    result = {"OA": pct(both, count), "VISOR": pct(correct, count),
              "VISOR_cond": pct(correct, both),
              "object_accuracy_A": pct(sum(o["det_a"] for o in outcomes), count),
              "object_accuracy_B": pct(sum(o["det_b"] for o in outcomes), count),
              "images": count, "images_with_both": both, "prompts": len(per_prompt)}
    fewest = min(images_per_prompt.values(), default=0)
    for n in range(1, n_max + 1):  # a prompt of fewer than n images cannot show n correct ones
        result[f"VISOR_{n}"] = pct(sum(v >= n for v in per_prompt.values()), len(per_prompt)) if n <= fewest else None
    return result


def visor_report(outcomes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Overall, per-relation and per-class VISOR numbers."""
    n_max = max(VISOR_N_MIN, *_count_by_uid(outcomes).values())
    report = aggregate(outcomes, n_max)
    report["per_relation"] = {rel: aggregate([o for o in outcomes if o["rel"] == rel], n_max)
                              for rel in SR2D_RELATIONS if any(o["rel"] == rel for o in outcomes)}
    classes = sorted({o["obj_a"] for o in outcomes} | {o["obj_b"] for o in outcomes})
    report["per_class"] = {c: aggregate([o for o in outcomes if c in (o["obj_a"], o["obj_b"])], n_max)
                           for c in classes}
    return report


def _count_by_uid(outcomes: Iterable[dict[str, Any]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for o in outcomes:
        counts[o["uid"]] = counts.get(o["uid"], 0) + 1
    return counts


def released_records(detections_path: str | Path, prompts: dict[int, dict[str, Any]],
                     prompts_path: str | Path) -> tuple[list[tuple[str, dict, dict]], int]:
    """(key, SR2D prompt, record) of each spatial entry of a detection file in the released
    layout (``"<unique_id>_<k>" -> {classes, centroid, sra}``), and how many were not spatial."""
    path = Path(detections_path)
    results = read_json_file(path)
    if not isinstance(results, dict):
        raise DataError(path, None, None, "expected a JSON object keyed '<unique_id>_<k>'")
    kept, skipped = [], 0
    for key, rr in results.items():
        prompt = detection_prompt(key, prompts, path, prompts_path)
        if not is_spatial(prompt):
            skipped += 1
            continue
        check_detection(key, rr, prompt, path)
        kept.append((key, prompt, rr))
    return kept, skipped


def released_outcome(prompt: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    return image_outcome(prompt, record["classes"], record.get("centroid"), record.get("sra"))


def score_released(detections_path: str | Path, prompts_path: str | Path) -> dict[str, Any]:
    """VISOR numbers of a detection file in the released layout (as the released ``visor.py``)."""
    from spatialprobe.tasks.sr2d import load_sr2d

    records, _ = released_records(detections_path, load_sr2d(prompts_path), prompts_path)
    return visor_report([released_outcome(p, rr) for _, p, rr in records])


def prompt_of(meta: dict[str, Any], prompt_id: str, prompts: dict[int, dict] | None,
              text: str = "") -> dict | None:
    """The SR2D record of an image-store prompt: its meta, or the prompts file by unique_id."""
    if {"obj_1_attributes", "obj_2_attributes", "rel_type"} <= set(meta):
        return {"unique_id": meta.get("unique_id", prompt_id), "num_objects": 2, "text": text,
                **meta}
    uid = meta.get("unique_id", prompt_id)
    if prompts is not None and str(uid).isdigit():
        return prompts.get(int(uid))
    return None


def released_record(row: dict[str, Any]) -> dict[str, Any]:
    """A prediction row of an image run as the released detection layout has it."""
    return {"classes": row["classes"], "centroid": row["centroid"],
            "recall": int(row["det_a"]) + int(row["det_b"]), "sra": int(row["correct"]),
            "text": row["text"], "boxes": row["boxes"], "scores": row["scores"]}
