"""Profiling one step for ``bench/gpu_steps.py profile``: a time budget per part, the step run under
``torch.profiler`` (its operator table and Chrome trace written out), and the numbers that say
what bounds it (device busy share, small kernels, host syncs, conversions, busiest operators).
Not a script: ``bench/gpu_steps.py`` imports it (``bench/`` is first on ``sys.path``).
"""

from __future__ import annotations

import gzip
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _limits import synchronize


class PartTimeout(BaseException):
    """A profile part ran past its budget (a BaseException: code that catches ``Exception`` to
    fall back, as the compiled step does, must not swallow it)."""


@contextmanager
def budget(seconds: int):
    def expire(signum, frame):
        raise PartTimeout(f"past its {seconds} s budget")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


HOST_SYNCS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "aten::_local_scalar_dense")
CONVERSIONS = ("aten::to", "aten::_to_copy", "aten::copy_")
LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx")


def device_time(avg) -> float:
    """Self device time (µs) of a key_averages row, whatever this torch calls it."""
    return float(getattr(avg, "self_device_time_total", getattr(avg, "self_cuda_time_total", 0.0)))


def summarize(prof, wall_s: float, gpu: bool) -> dict[str, Any]:
    """The numbers that say what bounds one step: device busy share, kernel counts and sizes,
    host syncs, conversions, and the busiest operators on the device and on the host."""
    from torch.autograd import DeviceType

    events = prof.events()
    on_device = [e for e in events if e.device_type == DeviceType.CUDA]
    on_host = [e for e in events if e.device_type == DeviceType.CPU]
    durations = [e.time_range.elapsed_us() for e in on_device]
    averages = prof.key_averages()
    by_device = sorted(averages, key=device_time, reverse=True)
    by_host = sorted(averages, key=lambda a: a.self_cpu_time_total, reverse=True)
    kernel_s = sum(durations) / 1e6
    labelled = [a for a in averages if a.key == "vqgan_clip.step"]
    return {
        "wall_s": wall_s,
        "device_time_s": kernel_s if gpu else None,
        "device_busy": kernel_s / wall_s if gpu and wall_s else None,
        "device_events": len(on_device),
        "device_events_under_10us": sum(d < 10 for d in durations),
        "kernel_launches": sum(e.name in LAUNCHES for e in on_host),
        "memcpy_host_to_device": sum("HtoD" in e.name for e in on_device),
        "memcpy_device_to_host": sum("DtoH" in e.name for e in on_device),
        "host_syncs": sum(e.name in HOST_SYNCS for e in on_host),
        "conversions": sum(e.name in CONVERSIONS for e in on_host),
        "host_ops": sum(not e.name.startswith("cuda") for e in on_host),
        "step_s": labelled[0].cpu_time_total / labelled[0].count / 1e6 if labelled else None,
        "top_device": [{"op": a.key, "calls": a.count, "self_ms": device_time(a) / 1e3}
                       for a in by_device[:12] if device_time(a) > 0],
        "top_host": [{"op": a.key, "calls": a.count, "self_ms": a.self_cpu_time_total / 1e3} for a in by_host[:12]],
    }


def profile_one(name: str, what: str, fn: Callable[[], Any], device, directory: Path) -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    gpu = device.type == "cuda"
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if gpu else [])]
    synchronize(device)
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        fn()
        synchronize(device)
        wall = time.perf_counter() - start
    summary = {"part": name, "status": "ok", "what": what, **summarize(prof, wall, gpu)}
    if gpu:
        summary["peak_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    sort = "self_device_time_total" if gpu else "self_cpu_time_total"
    try:
        table = prof.key_averages().table(sort_by=sort, row_limit=30, max_name_column_width=70)
    except (AttributeError, KeyError):  # an older torch names it after CUDA
        table = prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=30, max_name_column_width=70)
    (directory / f"{name}.txt").write_text(f"== {name}: {what}\n{table}\n")
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        with trace.open("rb") as source, gzip.open(directory / f"{name}.trace.json.gz", "wb") as target:
            shutil.copyfileobj(source, target)
    return summary
