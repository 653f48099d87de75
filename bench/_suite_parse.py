"""Reading what the GPU benches print: the figures bench/gpu_suite.py records for each stage.

Each ``parse_*`` takes one bench's whole output (as far as it got) and returns its figures; the
helpers read the numbers, FLOP rates and shares of the measured peak off its lines. Not a script:
``bench/gpu_suite.py`` imports it (``bench/`` is first on ``sys.path`` when a bench runs).
"""

from __future__ import annotations

import re
from typing import Any

NUMBER = r"([-+]?\d[\d,]*\.?\d*(?:e[-+]?\d+)?)"
SI = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


def number(text: str | None) -> float | None:
    return None if text is None else float(text.replace(",", ""))


def flops_per_s(line: str) -> float | None:
    """The measured peak of a bench's header line (``measured peak 37.7 GFLOP/s``), in FLOP/s."""
    found = re.search(r"measured peak ([\d.]+) ?([kMGTP]?)FLOP/s", line)
    return float(found.group(1)) * SI[found.group(2)] if found else None


def peak_percent(line: str) -> float | None:
    found = re.search(r"= ([\d.]+) % of the measured peak", line)
    return float(found.group(1)) if found else None


def last_line(text: str) -> str | None:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else None


def parse_synthesis(text: str) -> dict[str, Any]:
    """bench/synthesis_throughput.py: one row per batch size and path."""
    rows, oom = [], None
    pattern = re.compile(rf"^batch\s+(\d+)(?: (plain|fast|auto)\s*)?:\s+{NUMBER} ms/iteration,\s+{NUMBER} "
                         rf"images/hour(?:, peak\s+{NUMBER} GiB)?(?:, fast/plain {NUMBER}x)?")
    for line in text.splitlines():
        if found := pattern.search(line):
            batch, speed, ms, rate, gib, ratio = found.groups()
            rows.append({"batch": int(batch), "speed": speed or "auto", "ms_per_iteration": number(ms),
                         "images_per_hour": number(rate), "peak_gib": number(gib),
                         "fast_over_plain": number(ratio), "peak_percent": peak_percent(line)})
        elif found := re.search(r"^batch\s+(\d+): out of GPU memory", line):
            oom = int(found.group(1))
    header = next((line for line in text.splitlines() if "measured peak" in line), "")
    return {"rows": rows, "out_of_memory_at_batch": oom, "peak_flops": flops_per_s(header),
            "checkpointed": "decoder checkpointed" in header}


def parse_judge(text: str) -> dict[str, Any]:
    """bench/judge_throughput.py: images/s of each path at each batch size."""
    rows = []
    for line in text.splitlines():
        if found := re.search(r"^batch\s+(\d+): (.*?)\(", line):
            rates = dict(re.findall(rf"(plain|fast)\s+{NUMBER} images/s", found.group(2)))
            ratio = re.search(rf"fast/plain {NUMBER}x", line)
            rows.append({"batch": int(found.group(1)), "plain_images_per_s": number(rates.get("plain")),
                         "fast_images_per_s": number(rates.get("fast")),
                         "fast_over_plain": number(ratio.group(1)) if ratio else None,
                         "peak_percent": peak_percent(line)})
    header = next((line for line in text.splitlines() if "measured peak" in line), "")
    return {"rows": rows, "peak_flops": flops_per_s(header)}


def search(pattern: str, text: str, group: int = 1) -> float | None:
    found = re.search(pattern, text, re.MULTILINE)
    return number(found.group(group)) if found else None


def parse_probe(text: str) -> dict[str, Any]:
    """bench/probe_throughput.py: the run, its scoring, the previous code, the baselines."""
    scoring = next((line for line in text.splitlines() if line.startswith("scoring:")), "")
    header = next((line for line in text.splitlines() if "measured peak" in line), "")
    return {
        "run_s": search(rf"^spatialprobe: {NUMBER} s for the full 5-fold search", text),
        "scoring_s": search(rf"s for the full 5-fold search, {NUMBER} s of it scoring", text),
        "cells_per_s": search(rf"{NUMBER} cells/s; accuracy", text),
        "scoring_peak_percent": peak_percent(scoring),
        "previous_s": search(rf"alternating: {NUMBER} s against", text),
        "new_s": search(rf"alternating: {NUMBER} s against {NUMBER} s", text, 2),
        "over_previous": search(rf"^scoring speed-up over the previous code: {NUMBER}x", text),
        "over_naive": search(rf"^speed-up over the naive baseline: {NUMBER}x", text),
        "peak_flops": flops_per_s(header),
    }


def parse_mllm(text: str) -> dict[str, Any]:
    """bench/mllm_throughput.py: generate batched vs one at a time, the four ways of scoring."""
    generate = re.search(rf"^generate: batch (\d+) {NUMBER} s \({NUMBER} items/s\) \| one at a time {NUMBER} s "
                         rf"\({NUMBER} items/s\) \| ratio {NUMBER}x; replies (\w+)", text, re.MULTILINE)
    score = [{"way": way.strip(), "seconds": number(s), "items_per_s": number(rate), "shipped_faster": number(x)}
             for way, s, rate, x in re.findall(rf"^score: (.+?)\s+{NUMBER} s \(\s*{NUMBER} items/s\), shipped "
                                               rf"{NUMBER}x faster", text, re.MULTILINE)]
    lines = text.splitlines()
    return {
        "generate": None if generate is None else {
            "batch": int(generate.group(1)), "batched_s": number(generate.group(2)),
            "batched_items_per_s": number(generate.group(3)), "single_s": number(generate.group(4)),
            "single_items_per_s": number(generate.group(5)), "batched_over_single": number(generate.group(6)),
            "replies": generate.group(7)},
        "score": score,
        "largest_difference": search(rf"largest difference between the four ways {NUMBER}", text),
        "generate_peak_percent": peak_percent(next((x for x in lines if x.startswith("batched generate:")), "")),
        "score_peak_percent": peak_percent(next((x for x in lines if x.startswith("batched score:")), "")),
    }
