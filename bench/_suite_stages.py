"""The stages of bench/gpu_suite.py: each bench run with its command in each mode (full, quick,
tiny), its time limit and the parser of what it prints, in the order the suite runs them. Not a
script: ``bench/gpu_suite.py`` imports it (``bench/`` is first on ``sys.path`` when a bench runs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _suite_parse import parse_judge, parse_mllm, parse_probe, parse_synthesis

BENCH = Path(__file__).resolve().parent
MODES = ("full", "quick", "tiny")
"""The suite's sizes (bench/gpu_suite.py's ``DEADLINES`` has one deadline for each)."""


@dataclass
class Stage:
    """One bench run: its command in each mode (absent: not run in that mode) and time limits."""

    name: str
    what: str
    argv: dict[str, list[str]]
    cap: dict[str, int]
    parse: Callable[[str], dict[str, Any]] | None = None


def stages(device: str, work: Path, python: str) -> list[Stage]:
    """The suite, in the order it runs: the goals' benches first, then the profiles, the CLI."""
    bench = [python, "-u"]
    synth = [*bench, str(BENCH / "synthesis_throughput.py"), "--device", device, "--compare"]
    judge = [*bench, str(BENCH / "judge_throughput.py"), "--device", device]
    probe = [*bench, str(BENCH / "probe_throughput.py"), "--device", device]
    mllm = [*bench, str(BENCH / "mllm_throughput.py"), "--device", device, "--family", "llava"]
    steps = [*bench, str(BENCH / "gpu_steps.py")]
    cli = [*steps, "cli-probe", "--device", device, "--work", str(work)]
    profile = [*steps, "profile", "--device", device, "--work", str(work), "--dir", str(work / "profiles")]
    return [
        Stage("env", "the machine, the installation, matmul peaks",
              {m: [*steps, "env", "--device", device, "--json", str(work / "env.json")] for m in MODES},
              {"full": 40, "quick": 25, "tiny": 120}),
        Stage("synthesis", "VQGAN+CLIP at the paper preset, plain vs fast, batch 16",
              {"full": [*synth, "--batch-sizes", "16", "--measure-iterations", "3"],
               "quick": [*synth, "--batch-sizes", "16", "--measure-iterations", "2"],
               "tiny": [*synth, "--batch-sizes", "2", "--measure-iterations", "1"]},
              {"full": 120, "quick": 70, "tiny": 180}, parse_synthesis),
        Stage("synthesis-checkpoint", "VQGAN+CLIP, decoder checkpointed, plain vs fast, batches 32 and 64",
              {"full": [*synth, "--checkpoint", "--batch-sizes", "32,64", "--measure-iterations", "2"],
               "tiny": [*synth, "--checkpoint", "--batch-sizes", "2", "--measure-iterations", "1"]},
              {"full": 150, "tiny": 180}, parse_synthesis),
        Stage("judge", "OWL-ViT B/32 at 768 px + DPT B/16 at 384 px, plain vs fast",
              {"full": [*judge, "--shape", "base", "--batches", "1,16,32", "--images", "64"],
               "quick": [*judge, "--shape", "base", "--batches", "16", "--images", "32"],
               "tiny": [*judge, "--shape", "tiny", "--batches", "1,2", "--images", "2"]},
              {"full": 60, "quick": 30, "tiny": 180}, parse_judge),
        Stage("probe", "probe size, BERT-large shape, 5,000 cells: new vs previous scoring, naive baselines",
              {"full": [*probe, "--compare-reference", "--sample", "20"],
               "quick": [*probe, "--sample", "0"],
               "tiny": [*probe, "--layers", "1", "--hidden", "16", "--sample", "0"]},
              {"full": 90, "quick": 45, "tiny": 180}, parse_probe),
        Stage("mllm", "multimodal-LLM adapter, LLaVA-1.5-7B shape: batched vs one at a time",
              {"full": [*mllm, "--shape", "real", "--items", "16", "--batch-size", "8", "--new-tokens", "8"],
               "quick": [*mllm, "--shape", "real", "--items", "8", "--batch-size", "8", "--new-tokens", "4"],
               "tiny": [*mllm, "--shape", "tiny", "--items", "2", "--batch-size", "2", "--options", "2",
                        "--new-tokens", "2"]},
              {"full": 80, "quick": 45, "tiny": 180}, parse_mllm),
        Stage("profile", "torch.profiler: one step of each bench's fast path",
              {"full": [*profile, "--size", "full", "--budget", "50,20,30,40"],
               "tiny": [*profile, "--size", "tiny", "--budget", "120,120,120,120"]},
              {"full": 150, "tiny": 300}),
        Stage("probe-cli", "spatialprobe probe size end to end (BERT-large shape, 5,000 cells)",
              {"full": [*cli, "--json", str(work / "probe-cli.json")],
               "tiny": [*cli, "--layers", "1", "--hidden", "16", "--candidates", "manual",
                        "--json", str(work / "probe-cli.json")]},
              {"full": 70, "tiny": 180}),
        Stage("ray", "the probe CLI over Ray, one GPU per worker (more than one GPU only)",
              {"full": [*cli, "--ray", "--json", str(work / "probe-cli-ray.json")],
               "tiny": [*cli, "--ray", "--layers", "1", "--hidden", "16", "--candidates", "manual",
                        "--json", str(work / "probe-cli-ray.json")]},
              {"full": 90, "tiny": 180}),
    ]
