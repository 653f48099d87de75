"""What'sUp (Kamath, Hessel, Chang 2023): which caption - differing only in its preposition - is
true of the image? Controlled images A (on / under / left / right, 4 photographs of each object
pair) and B (CLEVR-like renders: in front / behind / left / right), and the COCO-QA and VG-QA
(GQA) one- and two-object spatial subsets (a true caption against its opposite). Each item of
a controlled or two-object subset states the correct caption's fact ("A mug on a table" ->
``(mug, on, table)``) where the caption reads unambiguously (:mod:`spatialprobe.benchmarks.sentence_facts`).

Files (the authors' JSON, read as they are): ``controlled_images_dataset.json`` /
``controlled_clevr_dataset.json`` - records ``image_path``, ``caption_options`` (the first is
correct); ``coco_qa_{one,two}_obj.json`` / ``vg_qa_{one,two}_obj.json`` - lists ``[image id, true
caption, false caption]`` with images ``val2017/{id:012d}.jpg`` / ``vg_images/{id}.jpg`` under
``--images``. The subset is named by ``--subset`` or by the file's name. Records with
``image_path`` and ``caption_options`` are also read from any layout of
:func:`spatialprobe.benchmarks.local_copy.read_records` (a Parquet or ``datasets`` rehost).

Wordings: ``contrastive`` (every caption scored against the image in the authors' order, so a tie
goes to the first, the correct one, as ``np.argmax`` does) and ``question`` (the captions as
lettered options in an order shuffled per item - ``--option order=official`` keeps the authors'
order, where option A is always right). Labels: each caption's preposition (``on``, ``under``,
``left``, ``right``, ``front``, ``behind``, ... as the authors' script reads it).

Official metrics (amitakamath/whatsup_vlms @7c1f255 ``dataset_zoo/aro_datasets.py``
``Controlled_Images.evaluate_scores``, l. 449-500): individual accuracy per preposition, and for
the controlled subsets pair accuracy (left+right and on+under / in-front+behind both right, over
N/2) and set accuracy (all four right, over N/4), computed by :func:`official_scores` and written
to the run's ``whatsup.json`` (:func:`extras`); the rows carry ``pair`` and ``set`` (declared as
``Source.variants``) for the protocol engine's consistent accuracies. Resampled by object pair (the
four images of a set) or by image (COCO / VG). Official reader ``whatsup``
(:mod:`spatialprobe.readers.ranking`): the best-scored caption, a tie that includes the right one
counted right as the authors' ``np.argmax`` over their order counts it, whatever order the
captions were asked in; ``strict`` takes the first of equal scores as asked.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import Official, Source, SourceItem, Wording, given, recorded
from spatialprobe.benchmarks.local_copy import options_text, read_records, version_of
from spatialprobe.benchmarks.sentence_facts import stated_fact
from spatialprobe.errors import DataError, UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS = {"order": "shuffled (default: the captions in an order drawn per item) or official (the authors' "
                    "order, the correct caption always option A) for the lettered question wording"}
QUESTION = "Which caption describes the image?\n{options}\nAnswer with the option's letter."
SUBSETS = {"controlled_images_dataset": "controlled_a", "controlled_clevr_dataset": "controlled_b",
           "coco_qa_one_obj": "coco_one", "coco_qa_two_obj": "coco_two", "vg_qa_one_obj": "vg_one",
           "vg_qa_two_obj": "vg_two"}
"""The authors' file names (without ``.json``) and the subset each holds."""
PREPOSITIONS = ("on", "under", "front", "behind", "left", "right")
"""The words ``evaluate_scores`` reads a controlled caption's preposition from."""
OPPOSITE = {"left": "right", "right": "left", "above": "below", "below": "above", "top": "bottom",
            "bottom": "top", "front": "behind", "behind": "front", "on": "under", "under": "on"}
OFFICIAL = (Official({"accuracy": "accuracy"}, ("preposition",)),)


def subset_of(path: str, subset: str | None) -> str:
    """The subset ``--subset`` names, else the one the authors' file name says; refused otherwise."""
    if subset is not None:
        if subset not in SUBSETS.values():
            raise UsageError(f"--subset {subset} is no What'sUp subset; they are {', '.join(SUBSETS.values())}")
        return subset
    stem = Path(path).name.split(".")[0]
    if stem in SUBSETS:
        return SUBSETS[stem]
    raise UsageError(f"{path}: name the What'sUp subset with --subset ({', '.join(SUBSETS.values())}); "
                     "the file name is none of the authors'")


def controlled_keys(image_path: str) -> tuple[tuple[str, str], str]:
    """(object pair, slot) of a controlled image, split from its file name exactly as
    ``evaluate_scores`` splits it: ``beer-bottle_left_of_armchair.jpeg`` -> (("beer-bottle",
    "armchair"), "left")."""
    name = image_path.split("/")[-1]
    return (name.split("_")[0], name.split("_")[-1][:-5]), name.split("_")[1]


def controlled_preposition(image_path: str, subset: str) -> str:
    """The image's preposition as the authors' ``all_prepositions`` (its breakdown)."""
    for word in ("left_of", "right_of"):
        if word in image_path:
            return word
    if subset == "controlled_a":
        return "on" if "_on_" in image_path else "under"
    return "in-front_of" if "_in-front_of_" in image_path else "behind"


def caption_preposition(caption: str) -> str | None:
    """The one word of :data:`PREPOSITIONS` in a controlled caption (None where not exactly one)."""
    found = set(PREPOSITIONS) & set(caption.split())
    return found.pop() if len(found) == 1 else None


def qa_preposition(caption: str, subset: str) -> str:
    """A COCO/VG caption's preposition as the authors' ``all_prepositions`` reads it."""
    if subset.endswith("_one"):
        return caption.split()[-1]
    for phrase, word in (("left of", "left"), ("right of", "right")):
        if phrase in caption:
            return word
    if subset == "coco_two":
        return "above" if "above" in caption else "below"
    for phrase, word in (("front of", "front"), ("behind", "behind")):
        if phrase in caption:
            return word
    return "top"


def official_scores(image_paths: Sequence[str], correct: Sequence[bool], subset: str) -> dict[str, float]:
    """Individual, pair and set accuracy (percent) of a controlled subset as ``evaluate_scores``
    computes them: every object pair starts with its four slots wrong, each image (in order, a
    later one overwriting) sets its slot; a pair counts where both of its slots are right, over
    N/2, a set where all four are, over N/4."""
    second = ("on", "under") if subset == "controlled_a" else ("in-front", "behind")
    slots: dict[tuple[str, str], dict[str, bool]] = {}
    for path in image_paths:
        slots.setdefault(controlled_keys(path)[0], dict.fromkeys(("left", "right", *second), False))
    for path, ok in zip(image_paths, correct, strict=True):
        pair, slot = controlled_keys(path)
        slots[pair][slot] = bool(ok)
    pairs = sum((s["left"] and s["right"]) + (s[second[0]] and s[second[1]]) for s in slots.values())
    sets = sum(sum(s.values()) == 4 for s in slots.values())
    n = len(image_paths)
    return {"individual": 100.0 * sum(map(bool, correct)) / n, "pair": pairs * 100 / (n / 2),
            "set": sets * 100 / (n / 4)}


def _order(key: str, n: int, shuffled: bool) -> list[int]:
    """The option order of the lettered wording: drawn from the item's key (the same every run)."""
    order = list(range(n))
    if shuffled:
        random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:16], 16)).shuffle(order)
    return order


def _item(key: str, captions: Sequence[str], labels: Sequence[str], image: str, fields: dict[str, Any],
          shuffled: bool, two_objects: bool = True) -> SourceItem:
    """One image's item; its fact is the correct caption's (:func:`stated_fact`) where it relates
    two objects and reads unambiguously (a one-object subset's caption relates none)."""
    order = _order(key, len(captions), shuffled)
    options = tuple(captions[i] for i in order)
    return SourceItem(key, QUESTION.format(options=options_text(options)), options,
                      tuple(labels[i] for i in order), labels[0], image, (), fields,
                      {"contrastive": Wording("", tuple(captions), tuple(labels))},
                      fact=stated_fact(captions[0]) if two_objects else None)


def _folders(data: Path, images: str | None) -> list[Path]:
    return [Path(images)] if images else [data.parent, data.parent.parent]


def _controlled(data: Path, found: Mapping[str, Any], subset: str, shuffled: bool
                ) -> tuple[list[SourceItem], str]:
    from spatialprobe.benchmarks.local_copy import image_file

    records = read_records(data, split=found["split"])
    folders = _folders(data, found["images"])
    items = []
    for n, row in enumerate(records.rows[:found["limit"]]):
        path, captions = str(records.require(n, "image_path")), records.options(n, "caption_options")
        if path.split("/")[-1].count("_") < 2:
            raise records.error(n, "image_path", "expected the authors' OBJECT_PREPOSITION_OBJECT.jpeg")
        labels = [caption_preposition(c) for c in captions]
        if None in labels or len(set(labels)) != len(labels):
            raise records.error(n, "caption_options", "each caption needs exactly one preposition of "
                                f"{', '.join(PREPOSITIONS)}, a different one each")
        pair, slot = controlled_keys(path)
        where = f"{records.where[n][0]} line {records.where[n][1]}" if records.where[n][1] else records.where[n][0]
        try:
            image = image_file(row.get("image") or path, folders=folders, what=where)
        except DataError:  # the authors' paths start at their repository root: try the file name alone
            image = image_file(path.split("/")[-1], folders=folders, what=where)
        group = "|".join(pair)
        fields = {"image": path, "preposition": controlled_preposition(path, subset), "slot": slot, "set": group,
                  "pair": f"{group}|{'lr' if slot in ('left', 'right') else 'other'}", "order": n, "subset": subset}
        items.append(_item(f"{n}", captions, labels, image, fields, shuffled))  # type: ignore[arg-type]
    return items, records.version


def _qa(data: Path, found: Mapping[str, Any], subset: str, shuffled: bool) -> tuple[list[SourceItem], str]:
    from spatialprobe.benchmarks.local_copy import image_file
    from spatialprobe.files import read_json_file

    rows = read_json_file(data)
    if not isinstance(rows, list):
        raise DataError(data, None, None, "expected the authors' list of [image id, true caption, false caption]")
    pattern = "val2017/{:012d}.jpg" if subset.startswith("coco") else "vg_images/{}.jpg"
    folders = _folders(data, found["images"])
    items = []
    for n, row in enumerate(rows[:found["limit"]]):
        if not (isinstance(row, list) and len(row) == 3 and all(isinstance(c, str) for c in row[1:])):
            raise DataError(f"{data} record {n + 1}", None, None, "expected [image id, true caption, false caption]")
        image_id = row[0]
        if subset.startswith("coco") and not (str(image_id).isascii() and str(image_id).isdigit()):
            raise DataError(f"{data} record {n + 1}", None, None, f"image id {image_id!r:.40} is no COCO image number")
        name = pattern.format(int(image_id)) if subset.startswith("coco") else pattern.format(image_id)
        try:
            image = image_file(name, folders=folders, what=f"{data} record {n + 1}")
        except DataError:
            image = image_file(name.split("/")[-1], folders=folders, what=f"{data} record {n + 1}")
        prep = qa_preposition(row[1], subset)
        labels = [prep, OPPOSITE.get(prep, f"not {prep}")]
        fields = {"image": str(image_id), "preposition": prep, "order": n}
        items.append(_item(f"{n}", row[1:], labels, image, fields, shuffled, not subset.endswith("_one")))
    return items, version_of([data])


@component("source", "whatsup",
           "What'sUp: caption ranking or lettered captions; individual, pair and set accuracy "
           "(controlled A/B, COCO, VG)")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """What'sUp's items of one subset from the user's copy (``seed`` unused: the option order is
    drawn from each item's key)."""
    found = given(settings)
    if found["data"] is None:
        raise UsageError("whatsup needs --data: one of the authors' JSON files")
    data = Path(found["data"])
    subset = subset_of(found["data"], found["subset"])
    order = found["options"].get("order", "shuffled")
    if order not in ("shuffled", "official"):
        raise UsageError(f"--option order={order}: it is shuffled or official")
    controlled = subset.startswith("controlled")
    items, version = (_controlled if controlled else _qa)(data, found, subset, order == "shuffled")
    labels = tuple(sorted({label for item in items for label in item.labels}))
    cluster = "set" if controlled else "image"
    spec = Resampling(labels, (cluster,), key=("instance_id",), pooled=True,
                      unit="object pairs" if controlled else "images")
    return Source("whatsup", f"whatsup-{subset}", f"whatsup-{subset}@{version}", labels, tuple(items), spec,
                  official=OFFICIAL, extras=extras if controlled else None, reader="whatsup",
                  settings=recorded("whatsup", {**found, "subset": subset}, str(data), version),
                  variants={"pair": "pair", "set": "set"} if controlled else {},
                  details={"total": len(items), "what": "images", "subset": subset, "option_order": order})


def extras(run: Any, summary: Mapping[str, Any]) -> None:
    """``whatsup.json``: individual, pair and set accuracy of each condition's rows, as the
    authors compute them (:func:`official_scores`)."""
    import json

    from spatialprobe.files import atomic_write_text, iter_jsonl

    rows = [row for _, row in iter_jsonl(run.file("predictions.jsonl"))]
    out = {}
    for condition in dict.fromkeys(row["condition"] for row in rows):
        mine = sorted((r for r in rows if r["condition"] == condition), key=lambda r: r["order"])
        out[condition] = official_scores([r["image"] for r in mine], [r["pred"] == r["gold"] for r in mine],
                                         mine[0]["subset"])
    atomic_write_text(run.file("whatsup.json"), json.dumps(out, indent=2) + "\n")


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in What'sUp's controlled-A layout (:mod:`spatialprobe.benchmarks.demo_copy`):
    ``controlled_images_dataset.json`` (the right caption first) and ``data/controlled_images/``,
    four drawn images per object pair: on, under, left of, right of."""
    import json
    import random

    from spatialprobe.benchmarks import demo_copy as d

    rng = random.Random(seed)
    words = {"on": "on", "under": "under", "left_of": "to the left of", "right_of": "to the right of"}
    drawn = {"on": "above", "under": "below", "left_of": "left", "right_of": "right"}
    rows = []
    for a, b in rng.sample([("mug", "plate"), ("cup", "box"), ("ball", "chair"), ("book", "table")], 3):
        for slot in words:
            path = f"data/controlled_images/{a}_{slot}_{b}.jpeg"
            scene = d.Pair(f"red {'circle' if a in ('ball', 'mug') else 'square'}", "blue square", drawn[slot])
            d.save(d.draw(scene), folder / path)
            order = [slot, *(s for s in words if s != slot)]
            rows.append({"image_path": path, "caption_options": [f"A {a} {words[s]} a {b}" for s in order]})
    (folder / "controlled_images_dataset.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return d.Demo(folder / "controlled_images_dataset.json", model="clip")
