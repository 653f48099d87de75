"""COMFORT (Zhang et al. 2025, sled-group/COMFORT): rendered scenes in which one object rotates
around a reference object in 37 steps of 10°, asked at every angle "Is the A to the left of the
B?"; a model's probability of "Yes" over the sweep should follow the relation's cosine.

Read from the user's unzipped copy (``comfort_ball/``, ``comfort_car_ref_facing_left/`` ...):
every folder with a ``config.json`` is one sweep (``CONFIGURATION/VARIATION/``: ``mapping``
``{"N.png": angle}``, ``relation`` (``infrontof``, ``behind``, ``totheleft``, ``totheright``),
``path_type`` ``rotate``, ``var_shape``/``var_color``, ``ref_shape``/``ref_color``). Rotation
sweeps only; ``--option prompt=`` picks the authors' perspective prompt (``nop``, the default,
``camera1``, ``addressee1``), ``--option frame=`` the frame of reference the accuracy is read in
(``camera``, the default, ``addressee``, ``rotated_camera``, ``rotated_addressee``,
``object_facing_right``, ``object_facing_left``).

Each image is an item (options ``No``/``Yes``, asked of a multimodal LLM by likelihood), with
``p_yes`` = P(Yes) normalised over yes and no (the authors' ``sum_to_one``) and gold ``yes`` where
the cosine of (angle + the frame's shift) is positive. The engine's accuracy is the authors'
``accuracy_metric(mode="acc", normalize=False)``: yes where P(yes) > 0.5 (the ``comfort`` reader),
over the first 36 images of each 37-image sweep - the authors drop the 37th (360°, a repeat of
0°: ``data[:-1]``), so its row carries ``scored`` false and counts in no accuracy; the sweep
metrics need a whole sweep, so they are written to ``comfort.json`` (point estimates, per sweep and their mean), as
``comfort_utils/{symmetry,smoothness,std,accuracy}_metric.py`` (@f30830d) compute them: spatial
symmetry of P(yes), low-pass smoothness RMSE, the normalised-cosine RMSE (``accuracy_metric``
mode ``normalize``), its thresholded accuracy (``acc`` on the min-max normalised sweep), and per
configuration the standard deviation over its variations. Declares ``variants {"sweep": "sweep"}``:
an item's sweep is the group its protocol engine holds to all-right. Under the camera frame (the
default) each image states its fact: the relation asked of the two objects, ``not`` where the gold
is no (``(red sphere, not to the left of, blue sphere)`` at 90°).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from spatialprobe.benchmarks import base
from spatialprobe.benchmarks.base import Official, Source, SourceItem
from spatialprobe.benchmarks.copy_images import images_checked
from spatialprobe.errors import DataError, UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {
    "prompt": "the authors' perspective prompt: nop (default), camera1, addressee1",
    "frame": "the frame of reference of the accuracy: camera (default), addressee, rotated_camera, ...",
}
PROMPTS = {"nop": "Is the {obj1} {relation} the {obj2}?",
           "camera1": "From the camera's perspective, is the {obj1} {relation} the {obj2}?",
           "addressee1": "From the woman's perspective, is the {obj1} {relation} the {obj2}?"}
FRAMES = {"camera": 0, "addressee": 90, "rotated_camera": 180, "rotated_addressee": 270,
          "object_facing_right": 90, "object_facing_left": 270}
RELATIONS = {"infrontof": "in front of", "behind": "behind", "totheleft": "to the left of",
             "totheright": "to the right of"}
SHAPES = {"Sphere": "sphere", "SmoothCube_v2": "cube", "SmoothCylinder": "cylinder", "FatCylinder": "cylinder",
          "Table": "table", "Box": "box", "Horse": "horse", "HorseL": "horse", "HorseR": "horse", "Bench": "bench",
          "Laptop": "laptop", "Sofa": "sofa", "Basketball": "basketball", "Chair": "chair", "Dog": "dog",
          "Bed": "bed", "Duck": "duck", "car_sedan": "car", "bicycle_mountain": "bicycle", "Sophia": "woman"}
COLOURS = {(1, 0, 0, 1): "red", (0, 0, 1, 1): "blue", (0, 1, 0, 1): "green", (1, 1, 0, 1): "yellow"}
OFFICIAL = (Official({"accuracy": "accuracy"}, ("relation", "variation"), only="scored"),
            Official({"mean_p_yes": "mean"}, ("relation",), pred="p_yes"))


def _degrees(value: Any, path: Path, name: str) -> float:
    """An image's angle in the sweep (a finite number), refused naming the config and the image."""
    try:
        angle = float(value)
    except (TypeError, ValueError):
        angle = math.nan
    if isinstance(value, bool) or not math.isfinite(angle):
        raise DataError(path, None, f"mapping.{name}", f"expected an angle in degrees, got {value!r:.60}")
    return angle


def _object(config: Mapping[str, Any], who: str) -> str:
    shape = str(config.get(f"{who}_shape"))
    name = SHAPES.get(shape, shape.lower())
    colour = config.get(f"{who}_color")
    if isinstance(colour, (list, tuple)):
        colour = COLOURS.get(tuple(colour))
    return f"{colour} {name}" if isinstance(colour, str) and shape in ("Sphere",) else name


def _fact(subject: str, relation: str, obj: str, gold: str, frame: str) -> tuple[str, str, str] | None:
    """The relation asked of the two objects, ``not`` where it is false (as VSR states a false
    caption), in the camera's frame only: in another frame "left" is another relation than the one
    the other benchmarks state, so no fact is stated there."""
    if frame != "camera":
        return None
    return subject, relation if gold == "yes" else f"not {relation}", obj


def scored(item: SourceItem, scores: Sequence[float]) -> dict[str, Any]:
    """``p_yes``: P(Yes) normalised over Yes and No (options ``No``, ``Yes``)."""
    no, yes = scores
    top = max(no, yes)
    return {"p_yes": math.exp(yes - top) / (math.exp(yes - top) + math.exp(no - top))}


def _drop_repeat(items: list[SourceItem], steps: int) -> None:
    """Mark the sweep just read (the last ``steps`` items) ``scored``: all but its 37th image where
    it has 37 (the authors' ``data[:-1]``), every image otherwise."""
    for n in range(len(items) - steps, len(items)):
        item = items[n]
        scored = not (steps == 37 and n == len(items) - 1)
        items[n] = SourceItem(item.key, item.question, item.options, item.labels, item.gold, item.image,
                              item.objects, {**item.fields, "scored": scored}, fact=item.fact)


def comfort_source(found: Mapping[str, Any]) -> Source:
    """Every image of every rotation sweep in the user's copy (:func:`base.given`)."""
    from spatialprobe.benchmarks.local_copy import version_of
    from spatialprobe.files import read_json_file

    options = found["options"]
    prompt, frame = options.get("prompt", "nop"), options.get("frame", "camera")
    if prompt not in PROMPTS:
        raise UsageError(f"--option prompt={prompt} is not one of {', '.join(PROMPTS)}.")
    if frame not in FRAMES:
        raise UsageError(f"--option frame={frame} is not one of {', '.join(FRAMES)}.")
    if found.get("images") or found.get("split") or found.get("subset"):
        raise UsageError("--images, --split and --subset do not apply to comfort: --data is the unzipped folder.")
    root = Path(str(found.get("data") or ""))
    if not root.is_dir():
        raise UsageError(f"{root}: not a folder (comfort reads the unzipped copy: comfort_ball/ ...)")
    configs = sorted(root.rglob("config.json"))
    items: list[SourceItem] = []
    for path in configs:
        config = read_json_file(path)
        if not isinstance(config, dict):
            raise DataError(path, None, None, "expected a JSON object")
        if config.get("path_type") != "rotate":
            continue
        relation = config.get("relation")
        if not isinstance(relation, str) or relation not in RELATIONS:
            raise DataError(path, None, "relation", f"{relation!r:.60} is not one of {', '.join(RELATIONS)}")
        sweep = str(path.parent.relative_to(root))
        subject, obj = _object(config, "var"), _object(config, "ref")
        question = PROMPTS[prompt].format(obj1=subject, relation=RELATIONS[relation], obj2=obj)
        mapping = config.get("mapping")
        if not isinstance(mapping, dict) or not all(re.fullmatch(r"[0-9]+\.[A-Za-z]+", k) for k in mapping):
            raise DataError(path, None, "mapping", "expected {\"STEP.png\": angle in degrees, ...}")
        for name, angle in sorted(mapping.items(), key=lambda kv: int(kv[0].split(".")[0])):
            image = path.parent / name
            if images_checked() and not image.is_file():
                raise DataError(path, None, "mapping", f"image {name} not found beside it")
            angle = _degrees(angle[0] if isinstance(angle, list) and angle else angle, path, name)
            gold = "yes" if math.cos((angle + FRAMES[frame]) / 180 * math.pi) > 1e-10 else "no"
            fields = {"sweep": sweep, "angle": angle, "step": int(name.split(".")[0]), "relation": relation,
                      "variation": path.parent.name}
            items.append(SourceItem(f"{sweep}/{name}", question, ("No", "Yes"), ("no", "yes"), gold, str(image),
                                    (sweep,), fields, fact=_fact(subject, RELATIONS[relation], obj, gold, frame)))
        _drop_repeat(items, len(mapping))
        if found.get("limit") and len(items) >= found["limit"]:
            break
    if not items:
        raise UsageError(f"{root}: no rotation sweep (a folder with config.json whose path_type is rotate)")
    spec = Resampling(("yes", "no"), ("sweep",), key=("instance_id",), pooled=True, unit="sweeps")
    settings = base.recorded("comfort", found, str(root), version_of(configs))
    return Source("comfort", "comfort", f"comfort@{settings['data']['version']}", ("yes", "no"), tuple(items), spec,
                  official=OFFICIAL, scored=scored, extras=sweep_report, settings=settings, reader="comfort",
                  variants={"sweep": "sweep"}, details={"total": len(items), "what": "images", "frame": frame,
                                                         "prompt": prompt})


# -- the sweep metrics (comfort_utils @f30830d), on one sweep's P(yes) in step order ----------------
def _minmax(values: np.ndarray, epsilon: float = 1e-6) -> np.ndarray:
    spread = values.max() - values.min()
    return (values - values.min()) / (spread if spread != 0 else epsilon)


def symmetry(p_yes: Sequence[float]) -> float:
    """``spatial_symmetry_metric`` (normalised): RMS difference of P(yes) at angle i and 360 - i."""
    data = _minmax(np.asarray(p_yes, dtype=float))[:36]
    n = len(data)
    total = sum((data[i] - data[n - i]) ** 2 for i in range(1, n // 2))
    return float(np.sqrt(total / (n - 2) * 2))


def smoothness(p_yes: Sequence[float]) -> float:
    """``smoothness_lowpass_metric``: RMSE between the min-max normalised sweep and its 5th-order
    Butterworth low-pass (cutoff 100 Hz at 1 kHz)."""
    from scipy.signal import butter, filtfilt

    data = np.asarray(p_yes, dtype=float)[:36]
    with np.errstate(invalid="ignore", divide="ignore"):  # a flat sweep: NaN, as the authors' division gives
        data = (data - data.min()) / (data.max() - data.min())
    b, a = butter(5, 100 / 500, btype="low", analog=False)
    return float(np.sqrt(np.mean((data - filtfilt(b, a, data)) ** 2)))


def cosine_error(p_yes: Sequence[float], angles: Sequence[float], shift: int) -> float:
    """``accuracy_metric(mode="normalize")``: RMS distance of the normalised sweep from (cos + 1) / 2
    (divided by all 37 points, as theirs divides by the data's length before the last is dropped)."""
    data = _minmax(np.asarray(p_yes, dtype=float))
    error = 0.0
    for angle, value in zip(angles[:36], data[:36], strict=True):
        cosine = math.cos((angle + shift) / 180 * math.pi)
        cosine = 0.0 if abs(cosine) < 1e-10 else cosine
        error += ((cosine + 1) / 2 - value) ** 2
    return float(np.sqrt(error / len(p_yes)))


def sweep_accuracy(p_yes: Sequence[float], angles: Sequence[float], shift: int) -> float:
    """``accuracy_metric(mode="acc")`` on the min-max normalised sweep: P(yes) > 0.5 against cos > 0."""
    data = _minmax(np.asarray(p_yes, dtype=float))[:36]
    right = [(value > 0.5) == (math.cos((angle + shift) / 180 * math.pi) > 1e-10)
             for angle, value in zip(angles[:36], data, strict=True)]
    return sum(right) / len(right)


def spread(sweeps: Sequence[Sequence[float]]) -> float:
    """``calculate_standard_deviation``: RMS deviation of a configuration's min-max normalised
    variations from their mean curve."""
    with np.errstate(invalid="ignore", divide="ignore"):
        stacked = np.stack([((np.asarray(s, dtype=float) - min(s)) / (max(s) - min(s)))[:36] for s in sweeps])
    return float(np.sqrt(np.mean((stacked - stacked.mean(axis=0)) ** 2)))


def sweep_metrics(rows: Sequence[Mapping[str, Any]], shift: int) -> dict[str, Any]:
    """Each full sweep's metrics (37 points), their means, and each configuration's std."""
    sweeps: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        sweeps.setdefault(str(row["sweep"]), []).append(row)
    per: dict[str, dict[str, float]] = {}
    curves: dict[str, list[list[float]]] = {}
    for name, part in sorted(sweeps.items()):
        part = sorted(part, key=lambda r: int(r["step"]))
        if len(part) != 37 or "p_yes" not in part[0]:
            continue
        p, angles = [float(r["p_yes"]) for r in part], [float(r["angle"]) for r in part]
        per[name] = {"symmetry": symmetry(p), "smoothness": smoothness(p),
                     "cosine_error": cosine_error(p, angles, shift), "accuracy": sweep_accuracy(p, angles, shift)}
        curves.setdefault(str(Path(name).parent), []).append(p)
    names = ("symmetry", "smoothness", "cosine_error", "accuracy")
    means = {k: _mean([m[k] for m in per.values()]) for k in names}
    std = {config: spread(c) for config, c in curves.items() if len(c) > 1}
    return {"sweeps": {k: {n: _finite(v) for n, v in m.items()} for k, m in per.items()}, "mean": means,
            "std": {k: _finite(v) for k, v in std.items()}, "mean_std": _mean(list(std.values()))}


def _finite(value: float) -> float | None:
    """None for NaN (a flat sweep, where the authors' normalisation divides by 0)."""
    return None if math.isnan(value) else value


def _mean(values: Sequence[float]) -> float | None:
    """The mean of the defined values (None where there is none)."""
    kept = [v for v in values if not math.isnan(v)]
    return float(np.mean(kept)) if kept else None


def sweep_report(run: Any, summary: Mapping[str, Any]) -> None:
    """``comfort.json``: the sweep metrics of the run's first condition."""
    import json

    from spatialprobe.files import atomic_write_text

    rows = [json.loads(line) for line in run.file("predictions.jsonl").read_text().splitlines() if line.strip()]
    first = summary["details"]["conditions"][0]
    shift = FRAMES[str(summary["details"].get("frame", "camera"))]
    report = sweep_metrics([r for r in rows if r.get("condition") == first], shift)
    atomic_write_text(run.file("comfort.json"), json.dumps({"condition": first, **report}, indent=1) + "\n")


@component("source", "comfort",
           "COMFORT rotation sweeps: P(yes) per angle, symmetry/smoothness/std/cosine metrics per sweep")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of ``spatialprobe bench comfort`` settings or of a run's recorded ones."""
    return comfort_source(base.given(settings))


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in COMFORT's layout (:mod:`spatialprobe.benchmarks.demo_copy`): two rotation
    sweeps (``CONFIGURATION/VARIATION/config.json`` and ``N.png``) of eight 45° steps, the red sphere
    drawn around the blue one (angle 0: to its left)."""
    import json
    import math

    from spatialprobe.benchmarks.demo_copy import Demo
    from spatialprobe.extras import require

    Image, ImageDraw = require("PIL.Image", "benchmarks"), require("PIL.ImageDraw", "benchmarks")

    for variation, colour in enumerate(("red", "green")):
        sweep = folder / "comfort_ball" / f"variation{variation}"
        sweep.mkdir(parents=True, exist_ok=True)
        mapping = {}
        for step in range(8):
            angle = 45 * step
            image = Image.new("RGB", (64, 64), (245, 245, 240))
            pen = ImageDraw.Draw(image)
            pen.ellipse((26, 26, 38, 38), fill=(40, 70, 220))
            x, y = 32 - 20 * math.cos(math.radians(angle)), 32 + 10 * math.sin(math.radians(angle))
            pen.ellipse((x - 6, y - 6, x + 6, y + 6), fill=(220, 40, 40) if colour == "red" else (40, 170, 60))
            image.save(sweep / f"{step}.png")
            mapping[f"{step}.png"] = angle
        config = {"path_type": "rotate", "relation": "totheleft", "var_shape": "Sphere", "var_color": colour,
                  "ref_shape": "Sphere", "ref_color": "blue", "mapping": mapping}
        (sweep / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return Demo(folder)
