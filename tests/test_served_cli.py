"""Any model behind a server, as users run it: a REAL ``transformers serve`` (one per module) of a tiny
random LLaVA of the real architecture, asked through the commands with ``--backend openai-api --model
NAME --base-url URL``; every row equals the in-process run of the same checkpoint (the same greedy
replies, the same predictions), and ``report A B`` pairs the two runs with a difference of 0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx", reason="the api extra (httpx) is not installed")

from api_helpers import posqa_file, served_fixture  # noqa: F401 (the fixture `served`)
from typer.testing import CliRunner
from vl_helpers import solid_image

from spatialprobe.cli import app


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, list[str]]:
    """Each command's arguments for its items: VSR (captions about images), SpatialMQA (lettered
    questions about images), POSQA (text-only yes/no questions)."""
    folder = tmp_path_factory.mktemp("data")
    images = folder / "coco"
    vsr = [{"image": f"{k:012d}.jpg", "caption": f"The cat is {'left' if k % 2 else 'right'} of the dog.",
            "label": k % 2, "relation": "left of" if k % 2 else "right of", "subj": "cat", "obj": "dog"}
           for k in range(6)]
    for k, row in enumerate(vsr):
        solid_image(images / row["image"], (40 * k % 255, 90 + 20 * k, 160))
    (folder / "vsr" / "random").mkdir(parents=True)
    (folder / "vsr" / "random" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in vsr))
    mqa = [{"image": "000000000001.jpg", "question": "Where is the cup relative to the plate?",
            "options": ["left of", "right of"], "answer": "left of"},
           {"image": "000000000002.jpg", "question": "Where is the lamp relative to the bed?",
            "options": ["on/above", "below", "behind"], "answer": "below"},
           {"image": "000000000003.jpg", "question": "Where is the dog relative to you?",
            "options": ["in front of", "behind"], "answer": "in front of"}]
    (folder / "mqa").mkdir()
    (folder / "mqa" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mqa))
    return {"vsr": ["vsr", "--data", str(folder / "vsr"), "--images", str(images)],
            "spatialmqa": ["spatialmqa", "--data", str(folder / "mqa"), "--images", str(images)],
            "posqa": ["bench", "posqa", "--data", str(posqa_file(folder / "posqa", pairs=4))]}


def _run(args: list[str], out: Path) -> Any:
    result = CliRunner().invoke(app, [*args, "--out", str(out), "--protocol", "generate", "--max-new-tokens", "6",
                                      "--device", "cpu"])
    assert result.exit_code == 0, result.output
    return result


def _rows(out: Path) -> dict[str, dict[str, Any]]:
    return {row["instance_id"]: row for row in map(json.loads, (out / "predictions.jsonl").open())}


@pytest.mark.parametrize("command", ["vsr", "spatialmqa", "posqa"])
def test_the_served_run_equals_the_in_process_run_row_by_row(served, data, tmp_path, command):
    import torch

    torch.set_num_threads(1)
    here, there = tmp_path / "in-process", tmp_path / "served"
    _run([*data[command], "--model", str(served.model)], here)
    _run([*data[command], "--backend", "openai-api", "--model", str(served.model), "--base-url", served.url,
          "--scorer-arg", "cache_dir=off"], there)
    a, b = _rows(here), _rows(there)
    assert a.keys() == b.keys() and len(a) >= 3
    for key in a:
        assert (b[key]["reply"], b[key]["pred"], b[key]["gold"]) == (a[key]["reply"], a[key]["pred"], a[key]["gold"])
    assert len({row["reply"] for row in a.values()}) > 1 or command == "spatialmqa"  # random weights, not constant
    configs = [json.loads((out / "config.json").read_text()) for out in (here, there)]
    assert [c["settings"]["model"]["name"] for c in configs] == ["hf-mllm", "openai-api"]
    assert configs[1]["inputs"]["model"]["served_model"]["id"] == str(served.model)
    requests = json.loads((there / "summary.json").read_text())["details"]["requests"]
    assert requests["failures"] == {} and requests["answered"] == len(b) + 1  # and the GET /models
    report = CliRunner().invoke(app, ["report", str(here), str(there)])
    assert report.exit_code == 0, report.output
    paired = report.output[report.output.index("## Paired"):]
    assert "backend=hf-mllm" in report.output and "backend=openai-api" in report.output
    accuracy = next(line for line in paired.splitlines() if line.startswith("| accuracy"))
    cells = [cell.strip() for cell in accuracy.strip("|").split("|")]
    assert cells[1] == cells[2] and cells[3] == "+0.0" and cells[5] == "1.000"  # difference 0, p = 1
