"""Writes run folders of the retired kinds (vsr, spatialmqa, qa), with tiny models, by the
spatialprobe found on PYTHONPATH: run it with a checkout of the main branch from before the
change, so that tests/test_legacy_runs.py can resume and replay them with the new code.

    PYTHONPATH=/path/to/old/checkout python tests/legacy_runs.py DIR

DIR gets models/, data/ and runs/{vsr,spatialmqa,qa,qa-image,qa-image-full-vocab} (and, with ../shared/models, ask and
spatialmqa-generate, tiny LLaVAs) (a few KB of configs, caches and rows besides
the tiny models); nothing is copied from shared data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the tiny-model builders beside this file

VSR = [{"image": "000000000001.jpg", "caption": "The cat is left of the dog.", "label": 1, "relation": "left of"},
       {"image": "000000000002.jpg", "caption": "The hot dog is on the table.", "label": 0, "relation": "on"},
       {"image": "000000000002.jpg", "caption": "The cup is near the plate.", "label": 1, "relation": "near"}]
MQA = [{"image": "000000000001.jpg", "question": "Where is the cup relative to the plate?",
        "options": ["left of", "right of"], "answer": "left of"},
       {"image": "000000000002.jpg", "question": "Where is the lamp relative to the bed?",
        "options": ["on/above", "below", "behind"], "answer": "below"}]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def with_tiny_builders() -> None:
    """The tiny-model builders the helpers call (``spatialprobe.tiny``) are this checkout's: the old
    package has none, so this checkout's package folder is searched after the old one's."""
    import importlib.util

    import spatialprobe

    if importlib.util.find_spec("spatialprobe.tiny") is None:
        spatialprobe.__path__.append(str(Path(__file__).resolve().parents[1] / "spatialprobe"))


def build(root: Path) -> dict[str, list[str]]:
    """The models and data, and each legacy run's command line (after ``spatialprobe``)."""
    with_tiny_builders()
    from qa_helpers import make_t5, make_vilt, make_vilt_by_image
    from vl_helpers import solid_image, tiny_clip

    from spatialprobe import datasets
    from spatialprobe.datasets.qa import build_qa, to_qa_records

    clip = tiny_clip(root / "models" / "clip")
    for n, name in enumerate(("000000000001.jpg", "000000000002.jpg")):
        solid_image(root / "data" / "coco" / name, (200, 30 + 90 * n, 30))
    write_jsonl(root / "data" / "vsr" / "random" / "test.jsonl", VSR)
    write_jsonl(root / "data" / "mqa" / "test.jsonl", MQA)
    qa = build_qa(datasets.load("posrel"))
    records = to_qa_records(qa)[:6]
    write_jsonl(root / "data" / "qa.jsonl", records)
    t5 = make_t5(root / "models" / "t5", [r["question"] + " " + r.get("context", "") for r in records])
    images, runs = str(root / "data" / "coco"), root / "runs"
    store = _image_store(root / "data" / "synth")
    vilt = make_vilt(root / "models" / "vilt-vqa", [r["question"] + " " + r.get("context", "") for r in records],
                     {"yes": 0.2, "no": 0.9})
    by_image = make_vilt_by_image(root / "models" / "vilt-by-image", [r["question"] for r in records],
                                  {"yes": 0.0, "no": 0.0, "two": 0.0}, _image_answers(store, records))
    asked = {}
    from mllm_helpers import SHARED
    from mllm_helpers import build as build_mllm

    if (SHARED / "llava-1.5-7b-hf").is_dir():  # the ask kind, with the genuine LLaVA processor files
        llava = build_mllm("llava", root / "models" / "llava", bias_word="Yes")
        asked["ask"] = ["vsr", "--model", str(llava), "--data", str(root / "data" / "vsr"), "--images", images,
                        "--out", str(runs / "ask"), "--device", "cpu", "--protocol", "both", "--blind",
                        "--max-new-tokens", "2"]
        below = build_mllm("llava", root / "models" / "llava-below", bias_word="below")
        asked["spatialmqa-generate"] = ["spatialmqa", "--model", str(below), "--data", str(root / "data" / "mqa"),
                                        "--images", images, "--out", str(runs / "spatialmqa-generate"),
                                        "--device", "cpu", "--method", "generate", "--scorer-arg",
                                        "max_new_tokens=1"]
    return {**asked, "vsr": ["vsr", "--model", str(clip), "--data", str(root / "data" / "vsr"), "--images", images,
                    "--out", str(runs / "vsr"), "--device", "cpu"],
            "spatialmqa": ["spatialmqa", "--model", str(clip), "--data", str(root / "data" / "mqa"), "--images",
                           images, "--out", str(runs / "spatialmqa"), "--device", "cpu"],
            "qa": ["qa", "text", "--model", str(t5), "--data", str(root / "data" / "qa.jsonl"),
                   "--out", str(runs / "qa"), "--device", "cpu"],
            "qa-image": ["qa", "image", "--images", str(store), "--model", str(vilt), "--data",
                         str(root / "data" / "qa.jsonl"), "--out", str(runs / "qa-image"), "--device", "cpu",
                         "--partial"],
            "qa-image-full-vocab": ["qa", "image", "--images", str(store), "--model", str(by_image), "--data",
                                    str(root / "data" / "qa.jsonl"), "--out", str(runs / "qa-image-full-vocab"),
                                    "--device", "cpu", "--partial", "--full-vocab"]}


WORDS = ("two", "yes", "no", "yes", "two")
"""The full-vocabulary ViLT's answer about each image of :func:`_image_store`, in its order: the
first scenario's two images disagree (``two``, ``yes``), so the old kind's vote over answer words
(``two``, the first of equal counts) differs from a vote over replies parsed to yes or no (``yes``)."""


def _image_answers(store: Path, records: list[dict]) -> list[tuple[str, Path, str]]:
    """(question, image, answer word) for every question asked about an image of the store (the
    questions of its scenario: the image's file is named for the instance), worded as image QA asks
    it (a release record's question starts with its context, which image QA leaves out)."""
    images = sorted(store.rglob("*.png"))
    assert len(images) == len(WORDS), images
    return [(r["question"].removeprefix(r["context"]).strip(), image, word)
            for image, word in zip(images, WORDS, strict=True) for r in records
            if image.name.startswith(f"{r['instance_id']}_")]


def _image_store(path: Path) -> Path:
    """An image store as synthesis writes it: 4 posrel scenarios, two images of the first."""
    from PIL import Image

    from spatialprobe import datasets
    from spatialprobe.imagestore import ImageStore, PromptItem

    instances = datasets.load("posrel").instances[:4]
    store = ImageStore(path)
    store.add_prompts(PromptItem(i.id, i.text, i.to_dict()) for i in instances)
    for index, inst in enumerate(instances):
        for image_index in range(2 if index == 0 else 1):
            store.save_image(Image.new("RGB", (48, 40), (40 * index, 80 + 60 * image_index, 120)), inst.id,
                             image_index, seed=image_index, backend="test", model="none", settings={})
    return path


def main(root: Path) -> None:
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    for kind, argv in build(root).items():
        result = CliRunner().invoke(app, argv)
        if result.exit_code != 0:
            raise SystemExit(f"{kind}: {result.output}")
        written = json.loads((root / "runs" / kind / "config.json").read_text())["kind"]
        print(f"{kind}: a {written} run in {root / 'runs' / kind}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
