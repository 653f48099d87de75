"""How far a bench is from the hardware limit: shared by the benches in this folder.

* :func:`peak_matmul` times ``torch.matmul`` of two n x n matrices of the workload's dtype on the
  workload's device, in the same run (n = 4096 on CUDA, 1024 on CPU; best of a few repeats): the
  device's attainable peak, measured rather than read off a datasheet.
* :func:`count_flops` runs a callable under ``torch.utils.flop_counter.FlopCounterMode`` (matmuls,
  convolutions and attention, forward and backward; element-wise work is not counted, so the
  fraction of peak is a lower bound on how busy the device is).
* :func:`bench_clock`: the clock a bench times with. On a CPU with one torch thread, this thread's
  CPU time (``time.thread_time``): what the work costs whatever else a shared machine runs (wall
  time on a 2-core machine shared by several jobs swung 2-3x between runs); elsewhere wall time.
  The peak and the workload are timed with the same clock.
* :func:`bench_device` turns ``--device`` into a torch device; ``cuda`` without a CUDA device is
  an error with one clear sentence, not a traceback from deep inside a model.

The benches are scripts, not a package: ``python bench/x.py`` puts ``bench/`` first on
``sys.path``, so they ``import _limits``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def bench_device(name: str):
    """``auto`` (CUDA when there is one), ``cpu`` or ``cuda[:n]``; exits when CUDA is asked for
    and there is none."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit(f"--device {name}: no CUDA device is usable here (torch {torch.__version__}, "
                 "torch.cuda.is_available() is False); run on a GPU machine or use --device cpu.")
    return device


def synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass(frozen=True)
class Peak:
    flops_per_s: float
    size: int
    dtype: str
    device: str
    clock: str = "wall"
    """What the seconds are: ``wall`` time, or ``CPU`` time of the timing thread (:func:`bench_clock`)."""

    def fraction(self, flops: float, seconds: float) -> float:
        return flops / seconds / self.flops_per_s

    def describe(self) -> str:
        clock = "" if self.clock == "wall" else f", {self.clock} time"
        return (f"measured peak {si(self.flops_per_s)}FLOP/s ({self.dtype} matmul {self.size}x{self.size} "
                f"on {self.device}, best of 5{clock}, this run)")

    def line(self, flops: float, seconds: float, what: str = "workload") -> str:
        """``what: F FLOP in S s = A FLOP/s = P % of the measured peak``."""
        achieved = flops / seconds
        return (f"{what}: {si(flops)}FLOP in {seconds:.2f} s = {si(achieved)}FLOP/s "
                f"= {100 * achieved / self.flops_per_s:.1f} % of the measured peak")


def si(value: float) -> str:
    """``4.07 T``, ``36.2 M``: three significant digits and a prefix."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}"
    return f"{value:.3g} "


def bench_clock(device) -> tuple[Callable[[], float], str]:
    """(clock, its name): ``time.thread_time`` (``CPU``) on a CPU with one torch thread, else
    ``time.perf_counter`` (``wall``)."""
    import torch

    if device.type == "cpu" and torch.get_num_threads() == 1:
        return time.thread_time, "CPU"
    return time.perf_counter, "wall"


def peak_matmul(device, dtype, size: int | None = None, repeats: int = 5, clock: str = "wall") -> Peak:
    """Best FLOP/s of ``torch.matmul`` on ``size`` x ``size`` matrices (2 n^3 FLOPs per product),
    timed by ``clock`` (``wall``, or ``CPU``: :func:`bench_clock`'s)."""
    import torch

    now = time.thread_time if clock == "CPU" else time.perf_counter
    n = size or (4096 if device.type == "cuda" else 1024)
    products = 10 if device.type == "cuda" else 1  # a 4096^2 product is ~1 ms on a GPU: time several
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    torch.matmul(a, b)  # warm-up: kernel selection, allocator
    synchronize(device)
    best = float("inf")
    for _ in range(repeats):
        start = now()
        for _ in range(products):
            torch.matmul(a, b)
        synchronize(device)
        best = min(best, (now() - start) / products)
    name = str(dtype).removeprefix("torch.")
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    return Peak(2 * n ** 3 / best, n, name, where, clock)


def count_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """(``fn(*args, **kwargs)``, the FLOPs it ran) by ``FlopCounterMode``."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False, custom_mapping=_cpu_attention_formulas()) as counter:
        result = fn(*args, **kwargs)
    return result, counter.get_total_flops()


def _cpu_attention_formulas() -> dict:
    """FlopCounterMode knows the CUDA attention kernels but not the CPU flash kernel that
    ``scaled_dot_product_attention`` uses on CPU: count it as the same attention."""
    import torch
    from torch.utils.flop_counter import sdpa_flop_count

    op = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    if op is None:
        return {}

    def flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
        return sdpa_flop_count(query, key, value)

    return {op: flops}
