"""The scorer benches run on tiny shapes and print their comparison lines (no timing is asserted).

``bench/causal_throughput.py``: the whole-logits head against the chunked one on one size
instance; ``bench/mllm_throughput.py``: two items of a tiny LLaVA. Both as a user runs them (a
subprocess, one torch thread); what is checked is that every line the docs quote is printed, the
scores of the paths agree and the replies are identical.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHARED

ROOT = Path(__file__).resolve().parents[1]


def run_bench(*args: str) -> list[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def test_causal_bench_prints_both_paths_and_the_head_share_of_the_peak():
    if not (SHARED / "models" / "roberta-base").is_dir():
        pytest.skip("GPT-2's BPE (../shared/models/roberta-base) is absent")
    lines = run_bench("bench/causal_throughput.py", "--instances", "1", "--compare", "whole")
    assert lines[1] == "10 requests (size prompts x instances, every answer word); CPU time"
    assert lines[2].startswith("measured peak ") and "CPU time" in lines[2]
    difference = re.fullmatch(r"whole against new: largest score difference over 200 scores: (\S+); "
                              r"best word differs in 0 of 10 requests", lines[3])
    assert difference and float(difference.group(1)) <= 1e-5
    assert [line.split(":")[0] for line in lines[4:8]] == [
        "whole scoring", "new scoring", "whole head + normalisation", "new head + normalisation"]
    assert all(line.endswith("% of the measured peak") for line in lines[4:8])
    assert re.fullmatch(r"whole \S+ s \| new \S+ s; speed-up of new: \S+x over whole", lines[8])
    assert re.fullmatch(r"\d+\.\d\dx", lines[9])


def test_mllm_bench_prints_the_generate_ratio_its_bound_and_the_peak_shares():
    if not (SHARED / "models" / "llava-1.5-7b-hf").is_dir():
        pytest.skip("LLaVA-1.5's processor (../shared/models/llava-1.5-7b-hf) is absent")
    lines = run_bench("bench/mllm_throughput.py", "--items", "2", "--batch-size", "2", "--options", "2",
                      "--new-tokens", "2")
    text = "\n".join(lines)
    assert re.search(r"^generate: batch 2 .* ratio \S+x; replies identical$", text, re.M)
    assert re.search(r"^generate: batched one-token generate .* batching can give at most \S+x here$", text, re.M)
    assert re.search(r"^measured peak .*CPU time, this run\)$", text, re.M)
    assert re.search(r"^batched generate: .* % of the measured peak$", text, re.M)
    assert re.search(r"^batched score: .* % of the measured peak$", text, re.M)
    assert float(re.search(r"^score: largest difference between the four ways (\S+)$", text, re.M).group(1)) < 1e-4
