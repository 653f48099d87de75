"""The files bench/gpu_suite.py writes under ``--out``: the GPU goals against what the
stages measured, one headline per stage, ``summary.md``, ``summary.json``, ``profiles.txt`` and
``traces.tar.gz``. Not a script: ``bench/gpu_suite.py`` imports it (``bench/`` is first on
``sys.path`` when a bench runs).
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUTPUTS = ("summary.json", "summary.md", "stages.log", "profiles.txt", "traces.tar.gz")


def best_fast(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    fast = [r for r in rows if r["speed"] != "plain" and r["images_per_hour"] is not None]
    return max(fast, key=lambda r: r["images_per_hour"]) if fast else None


def fmt(value: float | None, spec: str = ".1f", unit: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{unit}"


def goals(records: dict[str, dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """The GPU goals against what the stages measured (``None``: not measured; ``met``
    is left out in the tiny mode, whose models are not the goals' workloads)."""
    def figures(name: str) -> dict[str, Any]:
        return records.get(name, {}).get("figures") or {}

    synthesis = [r for name in ("synthesis", "synthesis-checkpoint") for r in figures(name).get("rows", [])]
    best = best_fast(synthesis) or {}
    judge = figures("judge").get("rows", [])
    at16 = next((r for r in judge if r["batch"] == 16), max(judge, key=lambda r: r["batch"], default={}))
    probe, cli, mllm = figures("probe"), figures("probe-cli"), figures("mllm")
    generate = mllm.get("generate") or {}
    shipped = next((s for s in mllm.get("score", []) if "shipped" in s["way"]), {})
    slowest = max((s["shipped_faster"] for s in mllm.get("score", []) if s["shipped_faster"]), default=None)

    def row(goal: str, target: str, value: float | None, met: Callable[[float], bool] | None = None,
            detail: str | None = None, peak: float | None = None, ratio: float | None = None) -> dict[str, Any]:
        return {"goal": goal, "target": target, "value": value,
                "met": None if value is None or met is None else met(value),
                "detail": detail, "peak_percent": peak, "ratio": ratio}

    rows = [
        row("VQGAN+CLIP images/hour, paper preset (best batch, fast path)", ">= 1,000",
            best.get("images_per_hour"), lambda v: v >= 1000, f"batch {best['batch']}" if best else None,
            best.get("peak_percent"), best.get("fast_over_plain")),
        row("judge images/s (batch 16, fast path)", ">= 300", at16.get("fast_images_per_s"), lambda v: v >= 300,
            f"batch {at16['batch']}" if at16 else None, at16.get("peak_percent"), at16.get("fast_over_plain")),
        row("probe scoring seconds (size, 5,000 cells)", "<= 1", probe.get("scoring_s"), lambda v: v <= 1,
            f"whole search {probe['run_s']} s" if probe.get("run_s") else None, probe.get("scoring_peak_percent"),
            probe.get("over_previous")),
        row("probe CLI seconds end to end", "(was 21.5)", cli.get("seconds")),
        row("multimodal LLM generate items/s (batched)", "(measure)", generate.get("batched_items_per_s"),
            detail=f"batch {generate['batch']}, replies {generate['replies']}" if generate else None,
            peak=mllm.get("generate_peak_percent"), ratio=generate.get("batched_over_single")),
        row("multimodal LLM score items/s (shipped)", "(measure)", shipped.get("items_per_s"),
            peak=mllm.get("score_peak_percent"), ratio=slowest),
    ]
    if mode == "tiny":
        for row in rows:
            row["met"] = None
    return rows


def headline(record: dict[str, Any]) -> str:
    """One cell of what a stage measured."""
    f = record.get("figures") or {}
    name = record["name"]
    if name.startswith("synthesis"):
        return "; ".join(f"b{r['batch']} {r['speed']} {fmt(r['images_per_hour'])} img/h"
                         + (f" ({r['fast_over_plain']}x)" if r["fast_over_plain"] else "") for r in f.get("rows", [])) \
            + (f"; OOM at b{f['out_of_memory_at_batch']}" if f.get("out_of_memory_at_batch") else "")
    if name == "judge":
        return "; ".join(f"b{r['batch']} plain {fmt(r['plain_images_per_s'])} fast {fmt(r['fast_images_per_s'])} img/s"
                         for r in f.get("rows", []))
    if name == "probe":
        return (f"scoring {fmt(f.get('scoring_s'))} s, run {fmt(f.get('run_s'))} s, "
                f"vs previous {fmt(f.get('over_previous'), '.2f', 'x')}")
    if name == "mllm":
        g, shipped = f.get("generate") or {}, (f.get("score") or [{}])[0]
        return (f"generate batched {fmt(g.get('batched_items_per_s'), '.2f')} vs one at a time "
                f"{fmt(g.get('single_items_per_s'), '.2f')} items/s; score shipped "
                f"{fmt(shipped.get('items_per_s'), '.2f')} items/s")
    if name.startswith("probe-cli") or name == "ray":
        return f"{fmt(f.get('seconds'))} s end to end" if f else ""
    if name == "env":
        missing = ", ".join(f.get("missing", [])) or "none"
        return f"{f.get('device_name')} x{f.get('gpus')}, missing requirements: {missing}" if f else ""
    if name == "profile":
        return ", ".join(f"{p['part']} {p['status']}" for p in f.get("parts", []))
    if name == "install":
        return ", ".join(f"{k} {v}" for k, v in (record.get("installed") or {}).items())
    return ""


def markdown(summary: dict[str, Any]) -> str:
    suite, records = summary["suite"], summary["stages"]
    env = (records.get("env") or {}).get("figures") or {}
    lines = [f"# GPU suite: {suite['mode']}, {env.get('device_name', suite['device'])}, {suite['started']}", "",
             f"`{suite['command']}` at commit {suite['commit']}; {suite['seconds']:.0f} s of a {suite['deadline_s']} s "
             f"deadline. Installed spatialprobe is the checkout's code: "
             f"{(env.get('spatialprobe') or {}).get('matches_checkout', 'unknown')}.", ""]
    if suite["mode"] == "tiny":
        lines += ["Tiny models: the figures test the suite, they are not the goals' workloads.", ""]
    lines += ["## Goals", "",
              "| goal | target | measured | met | share of measured peak | fast / plain | detail |",
              "|---|---|---|---|---|---|---|"]
    for g in summary["goals"]:
        met = {True: "yes", False: "**no**", None: ""}[g["met"]]
        lines.append(f"| {g['goal']} | {g['target']} | {fmt(g['value'], '.2f')} | {met} | "
                     f"{fmt(g['peak_percent'], '.1f', ' %')} | {fmt(g['ratio'], '.2f', 'x')} | {g['detail'] or ''} |")
    lines += ["", "## Stages", "", "| stage | status | seconds (limit) | measured |", "|---|---|---|---|"]
    for record in records.values():
        reason = f" ({record['reason']})" if record.get("reason") else ""
        lines.append(f"| {record['name']} | {record['status']}{reason} | {fmt(record.get('seconds'), '.0f')} "
                     f"({record.get('cap_s', '—')}) | {headline(record)} |")
    profiles = summary.get("profiles") or []
    if profiles:
        lines += ["", "## Profiles (one step each; tables in profiles.txt, traces in traces.tar.gz)", "",
                  "| part | status | wall ms | device busy | device events (< 10 µs) | host syncs | conversions | "
                  "busiest op (self time on the device; on the host without one) |",
                  "|---|---|---|---|---|---|---|---|"]
        for p in profiles:
            if p["status"] != "ok":
                lines.append(f"| {p['part']} | {p['status']}: {p.get('error', '')} | | | | | | |")
                continue
            top = (p["top_device"] or p["top_host"] or [None])[0]
            busiest = f"{top['op'][:60]} {top['self_ms']:.1f} ms" if top else ""
            busy = fmt(p["device_busy"] and 100 * p["device_busy"], ".0f", " %")
            lines.append(f"| {p['part']} | ok | {1000 * p['wall_s']:.1f} | {busy} | {p['device_events']} "
                         f"({p['device_events_under_10us']}) | {p['host_syncs']} | {p['conversions']} | {busiest} |")
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, summary: dict[str, Any], work: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tables = sorted((work / "profiles").glob("*.txt"))
    if tables:
        (out / "profiles.txt").write_text("\n".join(t.read_text() for t in tables))
    traces = sorted((work / "profiles").glob("*.trace.json.gz"))
    if traces:
        with tarfile.open(out / "traces.tar.gz", "w:gz") as tar:
            budget = 15 * 2**20  # the device tool brings back files of at most 16 MiB
            for trace in sorted(traces, key=lambda t: t.stat().st_size):
                if trace.stat().st_size <= budget:
                    tar.add(trace, arcname=trace.name)
                    budget -= trace.stat().st_size
    summary["goals"] = goals(summary["stages"], summary["suite"]["mode"])
    summary["suite"]["outputs"] = [*OUTPUTS[:2], *(name for name in OUTPUTS[2:] if (out / name).is_file())]
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    (out / "summary.md").write_text(markdown(summary))
