"""table.md of an asked-items run (:mod:`spatialprobe.engine.run`): coverage, the metrics of
each protocol and condition, the source's official metrics and their breakdown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spatialprobe.engine import question_free as free
from spatialprobe.engine.repeated_sampling import sampling_lines
from spatialprobe.engine.robustness import variants_lines


def ask_table(summary: Mapping[str, Any]) -> str:
    """table.md: coverage, each protocol's accuracy, the source's other official metrics, the parse
    failures, the answer prior, the vision gain of each blind condition (paired 95 % interval and
    p-value), then the official breakdown (per category, perspective, relation ...)."""
    from spatialprobe.imagestore import Completeness
    from spatialprobe.reports.tables import coverage_line, intervals_line, pm

    d, m = summary["details"], summary["metrics"]
    protocols, conditions = d["protocols"], d["conditions"]
    cover = d["coverage"]
    first = (coverage_line(d["coverage_detail"], d.get("what", "items")) if d.get("coverage_detail")
             else f"Coverage: {cover['used']:,} of {cover['total']:,} items.")
    lines = [*notices(summary), f"{first} Protocol: {' and '.join(protocols)}; conditions: {', '.join(conditions)}. "
             f"Wording: {d.get('wording', 'question')}.", "",
             "| metric | value |", "|---|---|",
             f"| accuracy ({protocols[0]}, {conditions[0]}) | {pm(m['accuracy'])} |",
             f"| macro-F1 ({protocols[0]}, {conditions[0]}) | {pm(m['macro_f1'])} |"]
    lines += [f"| {name} | {pm(m[name])} |" for name in d.get("official", [])
              if name not in ("accuracy", "macro_f1") and not name.startswith("strict_")]
    if len(protocols) > 1:
        lines += [f"| accuracy ({p}, {conditions[0]}) | {pm(m[f'accuracy_{p}'])} |" for p in protocols[1:]]
        agree = d.get("protocol_comparison", {}).get("agreement")
        lines.append(f"| protocols agree | {'–' if agree is None else f'{agree:.1f} %'} |")
    if "parse_failure_rate" in m:
        lines.append(f"| parse failures (generate) | {pm(m['parse_failure_rate'])} % |")
    if "answer_prior" in m:
        where = (d.get("answer_prior") or {}).get("from", "the training split") if isinstance(
            d.get("answer_prior"), dict) else "the dev folds"
        positional = isinstance(d.get("answer_prior"), dict) and d["answer_prior"].get("by") == "position"
        what = "option position" if positional else "label"
        lines.append(f"| answer prior (majority {what} of {where}) | {pm(m['answer_prior'])} |")
    lines += [f"| accuracy ({protocols[0]}, {c}) | {pm(m[f'accuracy_{c}'])} |" for c in conditions[1:]
              if f"accuracy_{c}" in m]
    lines += variants_lines(summary)
    lines += sampling_lines(d)
    lines += free.table_lines(d.get("question_free"), m.get("accuracy_question_free"))
    for blind, gain in (d.get("vision_gain") or {}).items():
        ci = gain["ci"]
        interval = "[–]" if ci is None else f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"
        lines.append(f"| vision gain: real − {blind} | {gain['gain']:+.1f} {interval}, p = {gain['p']:.3g} |")
    lines += readers_lines(summary)
    if d.get("official"):
        parts = m["accuracy"].get("breakdown", {})
        lines += ["", "| group | accuracy | n |", "|---|---|---|"]
        lines += [f"| {part} | {pm(value)} | {value['n']} |" for part, value in parts.items()]
    text = Completeness.line(d.get("image_run")) + "\n".join(lines) + "\n"
    return text + (f"\n{intervals_line(summary)}\n" if summary.get("intervals") else "")


def readers_lines(summary: Mapping[str, Any]) -> list[str]:
    """The official metrics under the benchmark's official reader and under ``strict``, side by
    side, the replies they read differently and a few of each kind (``details.readers``)."""
    from spatialprobe.reports.tables import pm
    from spatialprobe.runner.summary import reported

    d, m = summary["details"], summary["metrics"]
    readers = d.get("readers")
    if not readers:
        return []
    pairs = [(name, f"strict_{name}") for name, _ in reported(summary) if f"strict_{name}" in m and name in m]
    own = ("the engine's parser: the benchmark's authors publish no reply reader" if readers["official"] == "toolkit"
           else f"the benchmark's own reader: {readers['cited']}")
    lines = ["", f"Read by `{readers['official']}` ({own}) and by "
             f"`strict` (the reply is exactly an option's letter or text): they read {readers['n']:,} of "
             f"{readers['of']:,} answers differently ({', '.join(f'{k} {v}' for k, v in readers['by_kind'].items())}).",
             "", f"| official metric | {readers['official']} | strict |", "|---|---|---|"]
    lines += [f"| {name} | {pm(m[name])} | {pm(m[twin])} |" for name, twin in pairs]
    lines += [""] if readers.get("examples") else []
    for kind, examples in (readers.get("examples") or {}).items():
        lines += [f"- {kind}: {_quoted(e['reply'])} read {e['official']} (strict {e['strict']}, gold {e['gold']}): "
                  f"{e['why']}" for e in examples]
    return lines


def _quoted(reply: Any) -> str:
    text = " ".join(str(reply).split()) if reply is not None else "(scored)"
    return "`" + (text if len(text) <= 60 else text[:57] + "...").replace("`", "'") + "`"


def notices(summary: Mapping[str, Any]) -> list[str]:
    """The lines that head a table whose numbers mean nothing: an untrained model's, a synthetic
    demo copy's (``details.synthetic``: what wrote it)."""
    lines = []
    if summary.get("untrained"):
        lines += ["**UNTRAINED model: its numbers are meaningless.**", ""]
    synthetic = summary["details"].get("synthetic")
    if synthetic:
        lines += [f"**SYNTHETIC data ({synthetic}): not the benchmark; its numbers say nothing about a model.**", ""]
    return lines
