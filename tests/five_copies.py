"""Small synthetic copies of ViewSpatial-Bench, MindCube, OmniSpatial, SpatialScore and VSI-Bench in
their REAL layouts (tests/official/FORMATS.md): the files their authors' code reads, images drawn
with Pillow, VSI-Bench's videos written with PyAV. Each writer takes ``(folder, seed, n)`` and
returns the path ``--data`` is given and the records written (invented content)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

DIRECTIONS = ["left", "right", "front", "back", "front-left", "back-right", "above", "below"]


def image(path: Path, colour: tuple[int, int, int], size: int = 24) -> Path:
    """A small image of one colour with a white square at a place drawn from the colour."""
    from PIL import Image, ImageDraw

    path.parent.mkdir(parents=True, exist_ok=True)
    picture = Image.new("RGB", (size, size), colour)
    x = colour[0] % (size - 6)
    ImageDraw.Draw(picture).rectangle((x, 4, x + 5, 9), fill=(255, 255, 255))
    picture.save(path)
    return path


def _colour(rng: random.Random) -> tuple[int, int, int]:
    return (rng.randrange(256), rng.randrange(256), rng.randrange(256))


def _lettered(rng: random.Random, k: int) -> tuple[list[str], int]:
    options = rng.sample(DIRECTIONS, k)
    return options, rng.randrange(k)


def viewspatial(folder: Path, seed: int = 0, n: int = 40) -> tuple[Path, list[dict[str, Any]]]:
    """A ViewSpatial-Bench checkout: ``eval/ViewSpatial-Bench.json`` and its ScanNet and COCO images."""
    rng = random.Random(seed)
    types = ["Camera perspective - Relative Direction", "Person perspective - Scene Simulation Relative Direction",
             "Camera perspective - Object View Orientation", "Person perspective - Object View Orientation",
             "Person perspective - Relative Direction"]
    records = []
    for k in range(n):
        kind = types[k % 5]
        if "Relative Direction" in kind and kind.startswith(("Camera", "Person perspective - Scene")):
            scene = f"scene{k % 4:04d}_00"
            frames = [f"ViewSpatial-Bench/scannetv2_val/{scene}/original_images/{20 * j}.jpg"
                      for j in range(1 if kind.startswith("Camera") else 3)]
        else:
            frames = [f"ViewSpatial-Bench/val2017/{100000 + k % 7:012d}.jpg"]
        for path in frames:
            if not (folder / path).is_file():
                image(folder / path, _colour(rng))
        options, gold = _lettered(rng, 2 if k % 9 == 0 else 4)
        choices = "\n".join(f"{'ABCD'[j]}. {o}" for j, o in enumerate(options))
        records.append({"question_type": kind, "image_path": frames,
                        "question": f"Question {k}: where is the lamp relative to the bed?",
                        "answer": f"{'ABCD'[gold]}. {options[gold]}", "choices": choices})
    path = folder / "eval" / "ViewSpatial-Bench.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1), encoding="utf-8")
    return folder, records


def mindcube(folder: Path, seed: int = 0, n: int = 30) -> tuple[Path, list[dict[str, Any]]]:
    """MindCube's ``data/`` folder: ``raw/MindCube_tinybench.jsonl`` (the first ``n`` records) and
    ``raw/MindCube.jsonl`` (those and ``n`` more), images under ``other_all_image/``."""
    rng = random.Random(seed)
    data = folder / "data"
    settings = ["among", "around", "rotation", "translation"]
    records = []
    for k in range(2 * n):
        setting = settings[k // 3 % 4]
        group = f"{setting}_group{k // 3:03d}"
        views = [f"other_all_image/{setting}/{group}/view_{j}.jpg" for j in range(2 + k % 3)]
        for path in views:
            if not (data / path).is_file():
                image(data / path, _colour(rng))
        options, gold = _lettered(rng, 3 + k % 3)
        written = " ".join(f"{'ABCDE'[j]}. {o.capitalize()}" for j, o in enumerate(options))
        records.append({"id": f"{group}_q{k}_{k % 5}", "category": [setting, "O-O"], "type": 1,
                        "question": f"Based on these views, question {k}: where is the chair? {written}",
                        "images": views, "gt_answer": "ABCDE"[gold]})
    for name, part in (("MindCube_tinybench.jsonl", records[:n]), ("MindCube.jsonl", records)):
        (data / "raw").mkdir(parents=True, exist_ok=True)
        (data / "raw" / name).write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
    return data, records


OMNI_TASKS = {"Dynamic_Reasoning": ("Manipulation", "Motion_Analysis"),
              "Spatial_Interaction": ("Traffic_Analysis", "Localization", "Geospatial_Strategy"),
              "Complex_Logic": ("Pattern_Recognition", "Geometric_Reasoning"),
              "Perspective_Taking": ("Egocentric", "Allocentric", "Hypothetical")}


def omnispatial(folder: Path, seed: int = 0, n: int = 40) -> tuple[Path, list[dict[str, Any]]]:
    """The unpacked ``OmniSpatial-test``: ``dataset/data.json`` and one PNG folder per task type."""
    rng = random.Random(seed)
    root = folder / "dataset"
    records = []
    for k in range(n):
        task = list(OMNI_TASKS)[k // 2 % 4]
        sub = OMNI_TASKS[task][k % len(OMNI_TASKS[task])]
        number = k // 2  # two questions an image
        png = root / task / f"{number}.png"
        if not png.is_file():
            image(png, _colour(rng))
        options, gold = _lettered(rng, 2 + k % 3)
        records.append({"id": f"{number}_{k % 2}", "question": f"Question {k}: which way is the cup?",
                        "options": options, "answer": gold, "task_type": task, "sub_task_type": sub})
    (root / "data.json").write_text(json.dumps(records, indent=1), encoding="utf-8")
    return root, records


def spatialscore(folder: Path, seed: int = 0, n: int = 48) -> tuple[Path, list[dict[str, Any]]]:
    """SpatialScore version_0: ``dataset/SpatialScore.json`` and its images under ``dataset/<source>/``."""
    rng = random.Random(seed)
    shapes = [("multi-choice", "cvbench"), ("multi-choice", "3DSRBench"), ("multi-choice", "VSI-Bench_8"),
              ("judgment", "SpatialSense"), ("open-ended", "VGBench"), ("open-ended", "VSI-Bench_8"),
              ("open-ended", "RealWorldQA"), ("multi-choice", "MMIU")]
    records = []
    for k in range(n):
        kind, source = shapes[k % len(shapes)]
        count = 8 if source == "VSI-Bench_8" else 1 + (source == "MMIU")
        base = f"./dataset/VSI-Bench/8_frames/scannet/scene{k % 3}" if source == "VSI-Bench_8" else \
            f"./dataset/{source}/{k}"
        paths = [f"{base}/frame_{j:02d}.jpg" for j in range(count)]
        for path in paths:
            if not (folder / path).is_file():
                image(folder / path, _colour(rng))
        question, answer = _spatialscore_question(rng, kind, source, k)
        records.append({"index": 1000 + k, "category": ["Depth and Distance", "Counting", "Others"][k % 3],
                        "subcategory": ["Absolute", "Relative"][k % 2], "question_type": kind,
                        "input_modality": "video" if count == 8 else "single-image", "question": question,
                        "answer": answer, "img_paths": paths, "source": source, "index_origin": k,
                        "category_origin": f"{source.lower()}_{kind}"})
    path = folder / "dataset" / "SpatialScore.json"
    path.write_text(json.dumps(records, indent=1), encoding="utf-8")
    return path, records


def _spatialscore_question(rng: random.Random, kind: str, source: str, k: int) -> tuple[str, str]:
    if kind == "judgment":
        return f"Is this statement true based on the image {k}: 'The cup is left of the plate.'? Answer with Yes " \
               "or No.", rng.choice(["Yes", "No"])
    if kind == "open-ended":
        if source == "VGBench":
            return f"How far is the chair from the door {k}?", f"{rng.uniform(0.2, 4):.2f} meters"
        if source == "RealWorldQA":
            return f"Is there a stop sign {k}?\nPlease answer directly with a single word or number.", \
                rng.choice(["Yes", "No", "3"])
        return f"How many chairs are in this room {k}?", str(rng.randint(1, 9))
    options, gold = _lettered(rng, 4)
    if source in ("cvbench", "3DSRBench"):
        written = "\n".join(f"({'ABCD'[j]}) {o}" for j, o in enumerate(options))
        return f"Which is closer {k}? Select from the following choices.\n{written}", \
            f"({'ABCD'[gold]})" if source == "cvbench" else "ABCD"[gold]
    if source == "MMIU":
        written = "\n".join(f"{'ABCD'[j]}: {o}" for j, o in enumerate(options))
        return f"Which point corresponds {k}?\n{written}", "ABCD"[gold]
    written = ", ".join(f"{'ABCD'[j]}. {o}" for j, o in enumerate(options))
    return f"Where is the sofa {k}? Options: {written}", "ABCD"[gold]


VSI_MCA = ["object_rel_direction_easy", "object_rel_direction_medium", "object_rel_direction_hard",
           "object_rel_distance", "route_planning", "obj_appearance_order"]
VSI_NA = ["object_abs_distance", "object_counting", "object_size_estimation", "room_size_estimation"]


def video(path: Path, frames: int, size: int = 32) -> Path:
    """A tiny H.264 video (PyAV) whose frame ``i`` is grey level ``10 i`` (so a frame tells its position)."""
    import av
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=10)
        stream.width = stream.height = size
        stream.pix_fmt = "yuv420p"
        for i in range(frames):
            picture = np.full((size, size, 3), 10 * i % 256, dtype=np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(picture, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def vsibench(folder: Path, seed: int = 0, n: int = 60) -> tuple[Path, list[dict[str, Any]]]:
    """The VSI-Bench dataset folder: ``test.jsonl``, ``pruned_ids.txt`` (every fourth id) and the
    videos as ``<dataset>/<scene_name>.mp4`` (frame counts 17 to 25)."""
    rng = random.Random(seed)
    scenes = [("arkitscenes", "41069025"), ("scannet", "scene0011_00"), ("scannetpp", "09c1414f1b")]
    for n_frames, (dataset, scene) in enumerate(scenes, 17):
        video(folder / dataset / f"{scene}.mp4", n_frames + 3 * (n_frames - 17))
    records = []
    for k in range(n):
        kind = (VSI_MCA + VSI_NA)[k % 10]
        dataset, scene = scenes[k % 3]
        record: dict[str, Any] = {"id": k, "dataset": dataset, "scene_name": scene, "question_type": kind,
                                  "question": f"Question {k} about the {kind.replace('_', ' ')}?"}
        if kind in VSI_MCA:
            options, gold = _lettered(rng, 3 + k % 2)
            record.update(options=[f"{'ABCD'[j]}. {o}" for j, o in enumerate(options)], ground_truth="ABCD"[gold])
        else:
            value = rng.randint(1, 12) if kind == "object_counting" else round(rng.uniform(0.3, 9.0), 1)
            record.update(options=None, ground_truth=str(value))
        records.append(record)
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    (folder / "pruned_ids.txt").write_text("\n".join(str(r["id"]) for r in records[::4]) + "\n", encoding="utf-8")
    return folder, records
