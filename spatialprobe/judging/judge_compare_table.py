"""``table.md`` of ``judge compare``: per image run, the judges' scores and accuracy against the
people's answers, then every pair's agreement and Cohen's kappa; then the models' ranking under
each judge and Kendall's tau; then what produced the numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ON = {"verdict": "the verdict (does the image show the relation asked?)",
      "label": "the answer (the relation each judge read in the image)"}
UNRECOGNIZED = {"guess": "an image a judge did not recognize counts with its seeded guess, as in the judge's own score",
                "exclude": "only images every judge recognized are compared (--unrecognized exclude)"}


def cell(entry: Mapping[str, Any] | None, digits: int = 1) -> str:
    """``value [low, high]``, ``value [–]`` without an interval, ``undefined (why)``, or ``–``."""
    if not entry:
        return "–"
    if entry.get("undefined"):
        return f"undefined ({entry['undefined']})"
    if entry.get("value") is None:
        return "–"
    ci = entry.get("ci")
    bounds = f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else " [–]"
    note = f" ({entry['note']})" if entry.get("note") else ""
    return f"{entry['value']:.{digits}f}{bounds}{note}"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def group_section(group: Mapping[str, Any]) -> list[str]:
    counts = ", ".join(f"{name}: {n}" for name, n in group["images"].items())
    lines = [f"## {group['model']}\n", f"Image run `{group['image_run_path']}`: compared on "
             f"{group['compared']} images that every judge judged ({counts}).\n"]
    people = group.get("vs_people") or {}
    relations = sorted({rel for entry in people.values() for rel in entry["relations"]})
    head = ["judge", "score (%)"] + (["vs people (%)"] + [f"vs people: {r} (%)" for r in relations] if people else [])
    lines += [_row(head), _row(["---"] + ["---:"] * (len(head) - 1))]
    for name, score in group["scores"].items():
        extra = []
        if people:
            mine = people.get(name)
            extra = [cell(mine["all"]) if mine else "(reference)"] + [
                cell(mine["relations"].get(r)) if mine else "" for r in relations]
        lines.append(_row([name, cell(score), *extra]))
    if people:
        lines.append(f"\nPeople's answer: the answer most annotators gave; {group['people_answered']} of "
                     f"{group['compared']} images have one (the others count for no judge's accuracy against people).")
    lines += ["", _row(["judge A", "judge B", "agreement (%)", "Cohen's κ"]), "|---|---|---:|---:|"]
    for pair, entry in group["agreement"].items():
        a, b = pair.split(" | ")
        lines.append(_row([a, b, cell(entry), cell(group["kappa"][pair], 3)]))
    return lines


def ranking_section(summary: Mapping[str, Any]) -> list[str]:
    ranked = summary["details"]["ranking"]
    groups = summary["details"]["groups"]
    judges = list(ranked["scores"])
    lines = ["## Ranking of the models under each judge\n", _row(["model", *judges]),
             _row(["---"] + ["---:"] * len(judges))]
    for g, group in enumerate(groups):
        cells = []
        for j in judges:
            score, rank = ranked["scores"][j].get(str(g)), ranked["ranks"][j].get(str(g))
            cells.append("–" if score is None else f"{rank:g} ({score:.1f})")
        lines.append(_row([group["model"], *cells]))
    lines += ["", "Rank 1 = the highest score (score in parentheses; tied scores share their mean rank).", "",
              _row(["judge A", "judge B", "models", "Kendall's τ"]), "|---|---|---:|---:|"]
    for pair, entry in ranked["kendall_tau"].items():
        a, b = pair.split(" | ")
        lines.append(_row([a, b, str(entry["models"]), cell(entry, 3)]))
    return lines


def own_score(score: Mapping[str, Any] | None) -> str:
    """``; geneval's own score geneval_position_accuracy 75.0% of 20 images`` (nothing without one)."""
    if not score:
        return ""
    return (f"; {score['rule']}'s own score {score['metric']} {score['mean']:.{score['digits']}f}{score['unit']} "
            f"of {score['n']} images")


def provenance_lines(summary: Mapping[str, Any]) -> list[str]:
    details, info = summary["details"], summary["provenance"]
    r = details["resampling"]
    lines = [f"Intervals: 95 % percentile bootstrap over prompts (each with its images), {r['resamples']} "
             f"resamples, seed {r['seed']}; one set of resamples per image run for every judge and pair; "
             "Kendall's τ resamples each model's prompts on their own.", "", "Judgements compared:"]
    lines += [f"- {run['name']}: `{run['path']}` ({run['kind']}, identity {str(run['identity'])[:12]}, "
              f"images of {run['model']}{own_score(run.get('rule_score'))})" for run in details["runs"]]
    git = (info.get("git") or {}).get("commit")
    lines.append(f"\n{info.get('toolkit')} {info.get('toolkit_version')}" + (f" (git {git[:12]})" if git else "")
                 + f", comparison identity {summary['identity'][:12]}.")
    return lines


def table_markdown(summary: Mapping[str, Any]) -> str:
    details = summary["details"]
    groups = details["groups"]
    lines = [f"# judge compare: {len(details['runs'])} judgements of {len(groups)} image run(s)\n",
             f"Compared on {ON[details['on']]}; {UNRECOGNIZED[details['unrecognized']]}. Score: the share of "
             "images the judge says show the relation asked.\n"]
    for group in groups:
        lines += [*group_section(group), ""]
    if details.get("ranking"):
        lines += [*ranking_section(summary), ""]
    lines += provenance_lines(summary)
    return "\n".join(lines) + "\n"
