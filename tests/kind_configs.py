"""One small run of each converted run kind, made through the CLI, and its ``config.json`` as
plain, comparable JSON: the run folder's path written ``$TMP``, the provenance left out, and a
model folder's fingerprint written ``<model>`` (a tiny random model's files hash differently
under another torch or transformers).

``python tests/kind_configs.py OUT.json`` writes them with whatever spatialprobe is importable:
``tests/data/configs_from_main.json`` was written so by main 657338c (before the run kinds held
their settings), and ``test_kind_configs_unchanged.py`` makes the same runs with today's code and
asserts that their configs are those, key for key and value for value.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from judge_helpers import write_run
from typer.testing import CliRunner

from spatialprobe.cli import app

SHAPES = {"size": 64, "device": "cpu", "precision": "auto"}
COLOUR = ["--detector", "colour", "--depth", "colour", "--no-gallery"]


def invoke(*args: Any) -> None:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output


def _images(root: Path) -> dict[str, Path]:
    """A posrel image run written by hand and shapes runs of size and SR2D prompts."""
    from spatialprobe.synthesis import load_prompts, synthesize
    from spatialprobe.tasks.sr2d import build_sr2d, is_spatial, prompt_lines

    posrel = root / "posrel"
    write_run(posrel, "posrel", [(g, g, True) for g in ("above", "below", "beside", "inside")])
    size = root / "size"
    chosen = load_prompts("size")
    synthesize(dataclasses.replace(chosen, items=chosen.items[:3]), size, "shapes", SHAPES,
               images_per_prompt=2, batch_size=16)
    records = [r for r in build_sr2d() if is_spatial(r)][:3]
    lines = root / "sr2d.jsonl"
    lines.write_text("".join(json.dumps(line) + "\n" for line in prompt_lines(records)))
    sr2d = root / "sr2d"
    synthesize(load_prompts(str(lines)), sr2d, "shapes", SHAPES, images_per_prompt=2, batch_size=16)
    return {"posrel": posrel, "size": size, "sr2d": sr2d, "sr2d_prompts": lines}


def _answers(path: Path, run: Path, annotator: str, answers: list[str]) -> Path:
    from spatialprobe.judging.annotation_page import annotation_items, page_id

    task, items = annotation_items(run)
    path.write_text(json.dumps({
        "format": "spatialprobe-annotations", "version": 1, "page_id": page_id(run, task, items),
        "annotator": annotator, "answers": {i["id"]: a for i, a in zip(items, answers, strict=True)}}))
    return path


def make_runs(root: Path, with_models: bool = True) -> dict[str, Path]:
    """name -> the folder of one finished run of that kind (and variant)."""
    images = _images(root / "images")
    runs = {name: root / name for name in (
        "probe", "probe-seeded", "synthesize", "judge-size", "judge-posrel-visor", "judge-posrel-args",
        "human", "visor-run", "judge-compare")}
    invoke("probe", "size", "--model", "dummy", "--candidates", "manual", "--folds", "2", "--out", runs["probe"])
    invoke("probe", "height", "--model", "dummy", "--candidates", "manual", "--folds", "3", "--seed", "4",
           "--batch-size", "7", "--out", runs["probe-seeded"])
    invoke("synthesize", "--prompts", images["sr2d_prompts"], "--backend", "shapes", "--size", "32",
           "--error-rate", "0.5", "--seed", "5", "--out", runs["synthesize"])
    invoke("judge", "size", images["size"], *COLOUR, "--out", runs["judge-size"])
    invoke("judge", "posrel", images["posrel"], "--detector", "colour", "--rule", "visor", "--no-gallery",
           "--out", runs["judge-posrel-visor"])
    invoke("judge", "posrel", images["posrel"], "--detector", "colour", "--rule", "geneval", "--rule-arg",
           "confidence_threshold=0.5", "--seed", "2", "--no-gallery", "--out", runs["judge-posrel-args"])
    alice = _answers(root / "alice.json", images["posrel"], "alice", ["above", "below", "above", "cannot tell"])
    bob = _answers(root / "bob.json", images["posrel"], "bob", ["above", "below", "beside", "inside"])
    invoke("annotate", "import", images["posrel"], alice, bob, "--seed", "3", "--out", runs["human"])
    invoke("visor", images["sr2d"], "--detector", "colour", "--out", runs["visor-run"])
    invoke("judge", "compare", runs["judge-posrel-visor"], runs["judge-posrel-args"], "--out", runs["judge-compare"])
    if with_models:
        from mllm_helpers import build
        from test_vl_vsr import write_split
        from vl_helpers import solid_image, tiny_vilt

        rows = [{"image": f"{i % 2:012d}.jpg", "caption": "The cat is left of the dog.", "label": i % 2,
                 "relation": "left of", "annotator_id": 1, "vote_true_validator_id": "[]",
                 "vote_false_validator_id": "[]"} for i in range(4)]
        for part in ("train", "dev", "test"):
            write_split(root / "vsr", "random", part, rows)
        for i, color in enumerate([(250, 0, 0), (0, 0, 250)]):
            solid_image(root / "coco" / f"{i:012d}.jpg", color, size=32)
        runs["vsr-train"] = root / "vsr-train"
        invoke("vsr-train", "--data", root / "vsr", "--images", root / "coco", "--out", runs["vsr-train"],
               "--model", tiny_vilt(root / "vilt", classifier=True), "--batch-size", "2", "--max-steps", "1",
               "--eval-steps", "1", "--device", "cpu")

        llava = build("llava", root / "llava")
        runs["vqa-judge"], runs["vqa-visor"] = root / "vqa-judge", root / "vqa-visor"
        invoke("judge", "posrel", images["posrel"], "--rule", "vqa", "--judge-model", llava, "--device", "cpu",
               "--out", runs["vqa-judge"])
        invoke("visor", images["sr2d"], "--rule", "vqa", "--judge-model", llava, "--device", "cpu",
               "--out", runs["vqa-visor"])
    return runs


def _masked(value: Any) -> Any:
    """Identities of other runs (a compare's runs) hash their folders' paths: ``<identity>``."""
    if isinstance(value, dict):
        return {k: "<identity>" if k == "identity" and isinstance(v, str) else _masked(v)
                for k, v in value.items()}
    return [_masked(v) for v in value] if isinstance(value, list) else value


def comparable(config: dict[str, Any], root: Path) -> dict[str, Any]:
    """``config`` without provenance and identities, ``root`` written ``$TMP``, model
    fingerprints masked."""
    text = json.dumps({k: v for k, v in config.items() if k != "provenance"})
    plain = _masked(json.loads(text.replace(str(root), "$TMP")))
    for entry in plain.get("inputs", {}).values():
        if isinstance(entry, dict) and "model" in entry and str(entry["model"]).startswith("$TMP"):
            entry["fingerprint"] = "<model>"
    return plain


def configs(root: Path, with_models: bool = True) -> dict[str, dict[str, Any]]:
    return {name: comparable(json.loads((folder / "config.json").read_text()), root)
            for name, folder in make_runs(root, with_models).items()}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        Path(sys.argv[1]).write_text(json.dumps(configs(Path(tmp).resolve()), indent=1, sort_keys=True) + "\n")
