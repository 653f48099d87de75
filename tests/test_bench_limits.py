"""bench/_limits.py: the FLOP counts and the limit lines every bench prints."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from _limits import Peak, bench_device, count_flops, peak_matmul, si


def test_count_flops_of_a_matmul_and_a_linear_layer():
    result, flops = count_flops(torch.matmul, torch.ones(2, 3), torch.ones(3, 4))
    assert flops == 2 * 2 * 3 * 4 and result.tolist() == [[3.0] * 4] * 2
    layer = torch.nn.Linear(8, 5)
    assert count_flops(layer, torch.zeros(7, 8))[1] == 2 * 7 * 8 * 5


def test_attention_on_cpu_is_counted():
    """Two matmuls per head: (s x d) @ (d x s) and (s x s) @ (s x d)."""
    q = torch.zeros(1, 2, 5, 8)  # batch 1, 2 heads, 5 positions, 8 dimensions
    flops = count_flops(torch.nn.functional.scaled_dot_product_attention, q, q, q)[1]
    assert flops == 2 * (2 * 2 * 5 * 5 * 8)


def test_limit_lines():
    peak = Peak(97.1e9, 1024, "float32", "cpu, 1 threads")
    assert peak.line(4.0689e12, 121.31, "scoring") == \
        "scoring: 4.07 TFLOP in 121.31 s = 33.5 GFLOP/s = 34.5 % of the measured peak"
    assert peak.describe() == \
        "measured peak 97.1 GFLOP/s (float32 matmul 1024x1024 on cpu, 1 threads, best of 5, this run)"
    assert [si(x) for x in (35.5e6, 120e6, 2.5, 1.5e15)] == ["35.5 M", "120 M", "2.5 ", "1.5 P"]


def test_peak_matmul_on_cpu_is_a_measured_rate():
    peak = peak_matmul(torch.device("cpu"), torch.float32, size=64, repeats=2)
    assert (peak.size, peak.dtype) == (64, "float32") and peak.flops_per_s > 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_device_cuda_without_a_gpu_is_one_clear_error():
    with pytest.raises(SystemExit, match=r"--device cuda: no CUDA device is usable here"):
        bench_device("cuda")
    assert bench_device("auto").type == "cpu"
