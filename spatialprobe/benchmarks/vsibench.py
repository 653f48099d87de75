"""VSI-Bench (Yang et al. 2025, "Thinking in Space") and VSI-Bench-Debiased: 5,130 questions about
288 indoor videos (ScanNet, ScanNet++, ARKitScenes) - six multiple-choice and four numeric
question types - asked as frames sampled from the video as the authors' model wrappers sample them.

Files: the HF dataset ``nyu-visionx/VSI-Bench``: ``test.jsonl`` or ``test-00000-of-00001.parquet``
(records ``id, dataset, scene_name, question_type, question, ground_truth``, ``options`` -
``["A. left", ...]`` - for multiple choice), its videos unzipped as ``<dataset>/<scene_name>.mp4``
(``--images`` that folder; default the data's folder), and for the Debiased split
``pruned_ids.txt`` (one id a line) or ``test_debiased.parquet``. ``--data`` the folder or one file.
``--subset debiased`` keeps the records whose ``str(id)`` is not in ``pruned_ids.txt`` (found beside
the data, or ``--option pruned=FILE``), as the dataset's ``create_pq.py`` writes
``test_debiased.parquet`` (read where no ``pruned_ids.txt`` is). Options: ``frames`` (default 32,
the authors' open models) and ``sampling`` (the frame positions: ``linspace`` default, ``pyav``,
``gpt4v``, ``vila``, ``internvl2``, ``lmms``; :mod:`spatialprobe.benchmarks.video_frames`). Decoding
needs the ``video`` extra (PyAV).

Wording: thinking-in-space's ``vsibench_doc_to_text`` (``lmms_eval/tasks/vsibench/utils.py``
l. 59-72): "These are frames of a video.", the question, then ``Options:`` and the options one a
line with "Answer with the option's letter from the given choices directly." (multiple choice; labels
the letters) or "Please answer the question using a single word or phrase." (numeric: no options,
a number is read). The frames are shown together, in order.

Official metrics, the reply read by the registered reader ``vsibench`` (:mod:`spatialprobe.readers.vsibench`:
the reply's first token, a letter or a number): ``vsibench`` - the authors' overall, the
unweighted mean of the eight category scores, ``object_rel_direction`` being the mean of its three
levels (``vsibench_aggregate_results`` l. 125-175) -; ``score`` per question type and category
(accuracy or MRA, ×100); ``accuracy`` over the multiple-choice rows; ``mra`` over the numeric rows
(thinking-in-space's MRA, ten thresholds; :mod:`spatialprobe.benchmarks.numeric_answers`). Each
again under ``strict`` (``strict_vsibench``, ``strict_mra``, ...: the reply exactly a letter or
exactly a number). Resampled by video.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, given, recorded
from spatialprobe.benchmarks.local_copy import Records, images_checked, letters, read_records, version_of
from spatialprobe.benchmarks.numeric_answers import number_of, numeric_fields
from spatialprobe.benchmarks.video_frames import RULES, sampled_frames
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS = {"frames": "how many frames of each video are shown (default 32)",
           "sampling": f"which frames: {', '.join(RULES)} (default linspace: np.linspace(0, n - 1, k))",
           "pruned": "with --subset debiased: the file of pruned ids (default pruned_ids.txt beside the data)"}
MCA = ("object_rel_direction_easy", "object_rel_direction_medium", "object_rel_direction_hard",
       "object_rel_distance", "route_planning", "obj_appearance_order")
NA = ("object_abs_distance", "object_counting", "object_size_estimation", "room_size_estimation")
LEVELS = MCA[:3]
PRE = "These are frames of a video."
MCA_POST = "Answer with the option's letter from the given choices directly."
NA_POST = "Please answer the question using a single word or phrase."
OFFICIAL = (Official({"vsibench": "mean"}, pred="vsibench_value"),
            Official({"score": "share"}, ("category", "question_type"), pred="official_score"),
            Official({"accuracy": "share"}, pred="mca_right"),
            Official({"mra": "mra"}, pred="mra"))


def category(question_type: str) -> str:
    """The category a question type is reported under (the three relative-direction levels are one)."""
    return "object_rel_direction" if question_type in LEVELS else question_type


def weights(types: Sequence[str]) -> dict[str, float]:
    """Each question type's row weight ×100×N, so that the rows' mean is the authors' overall: the
    unweighted mean of the categories present, ``object_rel_direction`` the mean of its levels
    where its easy level is there (their code merges the levels only then)."""
    counts = Counter(types)
    merged = "object_rel_direction_easy" in counts
    parts = {(category(t) if merged else t) for t in counts}
    share = {}
    for kind, n in counts.items():
        levels = sum(1 for level in LEVELS if level in counts) if merged and kind in LEVELS else 1
        share[kind] = 100.0 * len(types) / (len(parts) * levels * n)
    return share


def matching(item: SourceItem, output: str | None, label: str | None) -> dict[str, Any]:
    """What a reading scores (a letter: right or wrong; a number: its MRA), and its row's term of the overall."""
    fields = numeric_fields(item, number_of(label))
    right = fields["mra"] if not item.options else float(label == item.gold)
    return {**fields, "mca_right": right if item.options else None, "official_score": right,
            "vsibench_value": item.fields["weight"] * right}


def _file(data: str, subset: str | None, pruned: str | None) -> tuple[str, Path | None]:
    """The records' file and, for the Debiased split, the pruned ids' file."""
    root = Path(data)
    folder = root if root.is_dir() else root.parent
    listed = Path(pruned) if pruned else folder / "pruned_ids.txt"
    if root.is_dir():
        if subset == "debiased" and not listed.is_file() and (root / "test_debiased.parquet").is_file():
            return str(root / "test_debiased.parquet"), None
        found = [root / "test.jsonl", root / "test-00000-of-00001.parquet"]
        chosen = next((f for f in found if f.is_file()), None)
        if chosen is None:
            raise UsageError(f"{root}: neither test.jsonl nor test-00000-of-00001.parquet (VSI-Bench's folder)")
        root = chosen
    if subset == "debiased" and not listed.is_file():
        raise UsageError(f"--subset debiased needs the pruned ids: no {listed} (give --option pruned=FILE)")
    return str(root), (listed if subset == "debiased" else None)


def _question(records: Records, n: int) -> tuple[str, tuple[str, ...], tuple[str, ...], str]:
    """(question text, option texts, labels, gold) of row ``n``."""
    kind = str(records.require(n, "question_type"))
    question, gold = str(records.require(n, "question")), str(records.require(n, "ground_truth")).strip()
    if kind in NA:
        try:
            number = float(gold)
        except ValueError:
            raise records.error(n, "ground_truth", f"{gold!r:.60} is no number") from None
        if number == 0:
            raise records.error(n, "ground_truth", "0: MRA divides by the gold value")
        return f"{PRE}\n{question}\n{NA_POST}", (), (), gold
    if kind not in MCA:
        raise records.error(n, "question_type", f"{kind!r:.60} is none of VSI-Bench's ten question types")
    written = [str(o) for o in records.listed(n, "options", 2)]
    marks = [f"{letter}. " for letter in letters(len(written))]
    texts = tuple(o[3:] if o[:3] == mark else o for mark, o in zip(marks, written, strict=True))
    if gold.upper() not in letters(len(texts)):
        raise records.error(n, "ground_truth", f"{gold!r:.60} is none of the {len(texts)} options' letters")
    options = "Options:\n" + "\n".join(written)
    return "\n".join([PRE, question, options, MCA_POST]), texts, letters(len(texts)), gold.upper()


def _frames(video: Path, shown: str, rule: str, k: int) -> list[str]:
    if not images_checked():
        return [shown]  # the items alone (audit blind, --image-condition none): no video decoded
    if not video.is_file():
        raise UsageError(f"{video}: no such video (VSI-Bench's videos unzipped as <dataset>/<scene_name>.mp4; "
                         "--images names their folder)")
    return sampled_frames(video, rule, k)


@component("source", "vsibench",
           "VSI-Bench (and --subset debiased) video questions as sampled frames: accuracy, MRA, the authors' overall")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """VSI-Bench's questions from the user's copy, each with its video's sampled frames (``seed`` unused)."""
    found = given(settings)
    if found["data"] is None:
        raise UsageError("vsibench needs --data: the VSI-Bench dataset folder, test.jsonl or its Parquet file")
    if found["subset"] not in (None, "full", "debiased"):
        raise UsageError(f"--subset {found['subset']}: VSI-Bench's subsets are full and debiased")
    options = found["options"]
    rule, k = str(options.get("sampling", "linspace")), str(options.get("frames", "32"))
    if rule not in RULES or not k.isdigit() or int(k) < 1:
        raise UsageError(f"--option sampling={rule} frames={k}: sampling is one of {', '.join(RULES)}, frames a "
                         "whole number from 1")
    data, pruned = _file(found["data"], found["subset"], options.get("pruned"))
    records = read_records(data)
    dropped = set(pruned.read_text(encoding="utf-8").splitlines()) if pruned else set()
    version = records.version if pruned is None else hashlib.sha256(
        f"{records.version}|{version_of([pruned])}".encode()).hexdigest()[:12]
    videos = Path(found["images"]) if found["images"] else Path(data).parent
    frames: dict[str, list[str]] = {}
    items = []
    for n, row in enumerate(records.rows):
        if str(records.require(n, "id")) in dropped:
            continue
        text, texts, labels, gold = _question(records, n)
        named = f"{records.require(n, 'dataset')}/{records.require(n, 'scene_name')}.mp4"
        if named not in frames:
            frames[named] = _frames(videos / named, named, rule, int(k))
        kind = str(row["question_type"])
        items.append(SourceItem(str(row["id"]), text, texts, labels, gold, frames[named][0], (),
                                {"question_type": kind, "category": category(kind), "dataset": str(row["dataset"]),
                                 "video": hashlib.sha256(named.encode()).hexdigest()[:12]},
                                views=tuple(frames[named][1:])))
    items = items[:found["limit"]]
    if not items:
        raise UsageError(f"{found['data']}: no VSI-Bench questions")
    share = weights([i.fields["question_type"] for i in items])
    items = [SourceItem(i.key, i.question, i.options, i.labels, i.gold, i.image, i.objects,
                        {**i.fields, "weight": share[i.fields["question_type"]]}, views=i.views) for i in items]
    labels = letters(max(len(i.options) for i in items) or 1)
    spec = Resampling(labels, ("video",), key=("instance_id",), pooled=True, unit="videos")
    name = "vsibench-debiased" if found["subset"] == "debiased" or Path(data).name == "test_debiased.parquet" \
        else "vsibench"
    return Source("vsibench", "vsibench", f"{name}@{version}", labels, tuple(items), spec,
                  official=OFFICIAL, matching=matching, reader="vsibench",
                  settings=recorded("vsibench", found, found["data"], version),
                  details={"total": len(records.rows), "what": "questions", "pruned": len(dropped),
                           "frames": {"count": int(k), "sampling": rule, "decoder": "PyAV"}})


VSI_MCA = ["object_rel_direction_easy", "object_rel_direction_medium", "object_rel_direction_hard",
           "object_rel_distance", "route_planning", "obj_appearance_order"]
VSI_NA = ["object_abs_distance", "object_counting", "object_size_estimation", "room_size_estimation"]


def write_copy(folder: Path, seed: int = 0, n: int = 60) -> tuple[Path, list[dict[str, Any]]]:
    """The VSI-Bench dataset folder: ``test.jsonl``, ``pruned_ids.txt`` (every fourth id) and the
    videos as ``<dataset>/<scene_name>.mp4`` (frame counts 17 to 25)."""
    from spatialprobe.benchmarks import demo_copy as d

    rng = random.Random(seed)
    scenes = [("arkitscenes", "41069025"), ("scannet", "scene0011_00"), ("scannetpp", "09c1414f1b")]
    for n_frames, (dataset, scene) in enumerate(scenes, 17):
        from spatialprobe.benchmarks.video_frames import write_video

        write_video(folder / dataset / f"{scene}.mp4", n_frames + 3 * (n_frames - 17))
    records = []
    for k in range(n):
        kind = (VSI_MCA + VSI_NA)[k % 10]
        dataset, scene = scenes[k % 3]
        record: dict[str, Any] = {"id": k, "dataset": dataset, "scene_name": scene, "question_type": kind,
                                  "question": f"Question {k} about the {kind.replace('_', ' ')}?"}
        if kind in VSI_MCA:
            options, gold = d.directions(rng, 3 + k % 2)
            record.update(options=[f"{'ABCD'[j]}. {o}" for j, o in enumerate(options)], ground_truth="ABCD"[gold])
        else:
            value = rng.randint(1, 12) if kind == "object_counting" else round(rng.uniform(0.3, 9.0), 1)
            record.update(options=None, ground_truth=str(value))
        records.append(record)
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    (folder / "pruned_ids.txt").write_text("\n".join(str(r["id"]) for r in records[::4]) + "\n", encoding="utf-8")
    return folder, records


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in its real layout (:func:`write_copy`, 10 items; images drawn with Pillow),
    asked of several images a question: the tiny SmolVLM (:mod:`spatialprobe.benchmarks.demo_copy`)."""
    from spatialprobe.benchmarks import demo_copy as d

    data, _ = write_copy(folder, seed, n=10)
    return d.Demo(data, model="smolvlm")
