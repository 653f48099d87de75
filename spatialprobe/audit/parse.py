"""How much of a score is the answer parser's: every extractor, applied to a run's stored replies.

Each extractor maps a reply and the item's options to an option index, or None (unparsed):

* ``toolkit`` - the run's own parser (:func:`spatialprobe.readers.option_parser.parse_answer`:
  letter, option text, yes/no words, then the benchmark's lenient rule where it has one);
* ``strict letter`` - the whole reply is one option letter (``B``, ``(B)``, ``B.``);
* ``first letter`` / ``last letter`` - the first / last stand-alone capital letter of an option;
* ``final answer`` - ``<think>`` blocks dropped, then the last ``\\boxed{...}`` or the text after the
  last ``Answer:``, read by the toolkit's parser ("Answer seems to be A... Answer: B" is B);
* ``option text`` - an option's text as whole words, the first in the reply;
* ``yes/no words`` - the first yes or no word (as whole words: ``none`` is not ``no``);
* ``substring`` - the first option (in option order) whose text occurs anywhere in the lower-cased
  reply, as SpatialEval's parser matched (``none`` reads as ``no``, ``90`` as ``0``);
* ``number`` - the first number in the reply (digits or a number word), equal to a numeric option;
* ``lenient`` - the benchmark's lenient rule alone (SpatialMQA's), where the source has one;
* ``official <field>`` - where a benchmark grades with the gold (SpatialMQA's ``pred_lenient`` and
  ``pred_strict``), its own grading of the reply, as the run's official metrics read it;
* ``harness verdict`` - for a run imported from another harness's log, that harness's own
  extraction and scoring as the log records them (right, wrong, or nothing extracted); where the
  log holds predictions but no verdict (VLMEvalKit's unscored files), the import's reading with
  that harness's own reader, named for it (``VLMEvalKit's can_infer (as imported)``): no verdict
  the harness gave;
* ``reader NAME`` - every registered reader (:mod:`spatialprobe.readers`: ``strict``, ``toolkit``
  and each benchmark's official reader), the benchmark's own marked ``(official)``; a reader that
  cannot read these items (SpatialEval's needs its task fields) reads nothing and is listed as not
  applicable.

Over a run (:func:`audit_run`): each extractor's unparsed rate and accuracy (unparsed counts
wrong) with its clustered interval, the items whose correctness differs between extractors, and
the range of the scores: the best minus the worst extractor (of those that parse anything), paired per item
(:func:`spatialprobe.metrics.paired.paired_differences`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.readers import option_parser as ap

Extractor = Callable[[str, Sequence[str]], "int | None"]
NUMBER_WORDS = {w: n for n, w in enumerate(["zero", "one", "two", "three", "four", "five", "six", "seven",
                                            "eight", "nine", "ten", "eleven", "twelve"])}


def _letters(reply: str, options: Sequence[str]) -> list[int]:
    last = chr(ord("A") + len(options) - 1)
    return [ord(m) - ord("A") for m in re.findall(rf"(?<![A-Za-z])([A-{last}])(?![A-Za-z])", reply)]


def strict_letter(reply: str, options: Sequence[str]) -> int | None:
    match = re.fullmatch(r"\s*[\(\[]?([A-Z])[\)\]\.:]?\s*", reply)
    index = ord(match.group(1)) - ord("A") if match else None
    return index if index is not None and index < len(options) else None


def first_letter(reply: str, options: Sequence[str]) -> int | None:
    found = _letters(reply, options)
    return found[0] if found else None


def last_letter(reply: str, options: Sequence[str]) -> int | None:
    found = _letters(reply, options)
    return found[-1] if found else None


def final_answer(reply: str, options: Sequence[str]) -> int | None:
    text = re.sub(r"<think>.*?(</think>|$)", " ", reply, flags=re.DOTALL | re.IGNORECASE)
    boxed = re.findall(r"\\boxed\{([^{}]*)\}", text)
    if boxed:
        text = boxed[-1]
    else:
        parts = re.split(r"\banswer\s*:", text, flags=re.IGNORECASE)
        text = parts[-1] if len(parts) > 1 else text
    return ap.parse_answer(text, options).index


def toolkit(lenient: ap.Lenient | None) -> Extractor:
    return lambda reply, options: ap.parse_answer(reply, options, lenient).index


def option_text(reply: str, options: Sequence[str]) -> int | None:
    return ap._text(reply.strip(), options)


def yes_no(reply: str, options: Sequence[str]) -> int | None:
    return ap._yes_no(reply.strip(), options)


def substring(reply: str, options: Sequence[str]) -> int | None:
    lowered = reply.lower()
    return next((i for i, o in enumerate(options) if o.strip().lower() in lowered), None)


def _number(text: str) -> float | None:
    match = re.search(r"-?\d+(?:\.\d+)?|\b(" + "|".join(NUMBER_WORDS) + r")\b", text, re.IGNORECASE)
    if match is None:
        return None
    return float(NUMBER_WORDS[match.group(1).lower()]) if match.group(1) else float(match.group(0))


def number(reply: str, options: Sequence[str]) -> int | None:
    value = _number(reply)
    numeric = r"(-?\d+(?:\.\d+)?|" + "|".join(NUMBER_WORDS) + r")(\s+\w+)?"
    if value is None:
        return None
    return next((i for i, o in enumerate(options)
                 if re.fullmatch(numeric, o.strip(), re.IGNORECASE) and _number(o) == value), None)


def extractors(lenient: ap.Lenient | None = None) -> dict[str, Extractor]:
    """Every extractor by name (``lenient`` only where the benchmark has a lenient rule)."""
    found: dict[str, Extractor] = {"toolkit": toolkit(lenient), "strict letter": strict_letter,
                                   "first letter": first_letter, "last letter": last_letter,
                                   "final answer": final_answer, "option text": option_text,
                                   "yes/no words": yes_no, "substring": substring, "number": number}
    if lenient is not None:
        rule = lenient
        found["lenient"] = lambda reply, options: (None if (o := rule(reply, options)) is None
                                                   else list(options).index(o))
    return found


Grader = Callable[[Any, str], str]
"""(item, reply) -> the label a benchmark's own grading gives (``--``: none)."""


def _reader(extract: Extractor) -> Grader:
    def read(item: Any, reply: str) -> str:
        index = extract(reply, item.options)
        return "--" if index is None else item.labels[index]
    return read


def official_graders(source: Any) -> dict[str, Grader]:
    """The benchmark's own gold-aware grading where its official metrics read another row field
    than ``pred`` (SpatialMQA's ``pred_lenient``, ``pred_strict``): ``official <field>``, the field
    its ``matching`` hook gives for the reply (and the toolkit's label of it)."""
    if source.matching is None:
        return {}
    parse = toolkit(source.lenient)

    def grader(field: str) -> Grader:
        def grade(item: Any, reply: str) -> str:
            index = parse(reply, item.options)
            label = None if index is None else item.labels[index]
            return str(source.matching(item, reply, label).get(field) or "--")
        return grade

    fields = dict.fromkeys(o.pred for o in source.official if o.pred != "pred")
    return {f"official {field}": grader(field) for field in fields}


def reader_name(name: str, official: str | None) -> str:
    """A registered reader's row in the audit: ``reader NAME``, ``(official)`` for the benchmark's own."""
    return f"reader {name}" + (" (official)" if name == official else "")


def reader_graders(official: str | None = None) -> dict[str, Grader]:
    """Every registered reader as a grader of a source item's reply (its question wording)."""
    from spatialprobe.readers.base import Asked, get, names

    def grader(name: str) -> Grader:
        reader = get(name)

        def grade(item: Any, reply: str) -> str:
            asked = Asked(item.key, item.options, item.labels, item.gold, item.fields)
            try:
                return reader.reply(reply, asked).pred
            except (KeyError, ValueError, IndexError, TypeError):  # fields of another benchmark
                return "--"
        return grade

    return {reader_name(name, official): grader(name) for name in names()}


def audit_replies(items: Sequence[Any], replies: Mapping[str, str], spec: Any,
                  lenient: ap.Lenient | None = None, recorded: Mapping[str, Any] | None = None,
                  graders: Mapping[str, Grader] | None = None, own: str = "toolkit") -> dict[str, Any]:
    """The audit of ``replies`` (item key -> reply) to ``items`` (source items, their question
    wording's options): see the module. ``recorded``: the run's own label per key, checked
    against the ``own`` extractor or grader (they must agree: the run read its replies with it);
    ``graders``: more readings (the registered readers, the benchmark's own gold-aware gradings,
    :func:`official_graders`), reported beside the extractors."""
    from spatialprobe.audit.blind import item_rows, resampling, scored
    from spatialprobe.metrics.paired import paired_differences

    asked = [item for item in items if item.key in replies]
    out: dict[str, Any] = {"n": len(asked), "extractors": {}}
    correct: dict[str, list[bool]] = {}
    preds: dict[str, list[str]] = {}
    readers: dict[str, Grader] = {name: _reader(extract) for name, extract in extractors(lenient).items()}
    for name, read in {**readers, **(graders or {})}.items():
        preds[name] = [read(item, replies[item.key]) for item in asked]
        correct[name] = [p == item.gold for p, item in zip(preds[name], asked, strict=True)]
        result = scored(asked, preds[name], spec)
        out["extractors"][name] = {"unparsed": round(100 * preds[name].count("--") / len(asked), 6),
                                   "accuracy": result.accuracy, "ci": list(result.ci) if result.ci else None}
    if recorded is not None:
        differ = [item.key for item, p in zip(asked, preds[own], strict=True)
                  if (recorded.get(item.key) or "--") != p]
        out["reader_matches_run"] = not differ
        out["reader_differs_from_run"] = differ[:20]
    flips = [item.key for n, item in enumerate(asked) if len({correct[name][n] for name in correct}) > 1]
    out["flips"] = {"n": len(flips), "share": round(100 * len(flips) / len(asked), 6), "keys": flips[:50]}
    applicable = [name for name, v in out["extractors"].items() if v["unparsed"] < 100]
    out["not_applicable"] = [name for name in out["extractors"] if name not in applicable]
    ranked = sorted(applicable or list(out["extractors"]), key=lambda name: (out["extractors"][name]["accuracy"], name))
    worst, best = ranked[0], ranked[-1]
    rows = {name: item_rows(asked, preds[name], spec) for name in (best, worst)}
    (diff,) = paired_differences(rows[best], rows[worst], resampling(spec))
    out["range"] = {"best": best, "worst": worst, "difference": diff.difference,
                    "ci": list(diff.ci) if diff.ci else None, "p": diff.p}
    return out


def audit_run(path: Path) -> dict[str, Any]:
    """The parse audit of a run folder's generated replies (its first condition). An imported run
    (:func:`spatialprobe.audit.run_rows.imported_source`) is audited on the replies its log kept, with
    the harness's own verdict as one more row (``harness verdict``: its extraction and scoring as
    the log records them)."""
    from spatialprobe.audit.run_rows import run_config, run_source
    from spatialprobe.errors import UsageError

    source, rows = run_source(Path(path))
    imported = run_config(Path(path)).get("kind") == "imported"
    replies = {str(r["instance_id"]): str(r["reply"]) for r in rows if r.get("reply") is not None}
    if not replies:
        raise UsageError(f"{path} holds no generated replies (its rows have no 'reply'): " + (
            "its log kept none (a log-likelihood task, or a log without the model's text)." if imported
            else "run it with --protocol generate or both."))
    graders = {} if imported and any(r.get("options") for r in rows) else official_graders(source)
    graders.update(reader_graders(None if imported else source.reader))
    if imported:
        verdicts = {str(r["instance_id"]): str(r["pred"]) for r in rows}
        graders[verdict_name(Path(path))] = lambda item, reply: verdicts[item.key]
        recorded = None
    else:
        recorded = {str(r["instance_id"]): r.get("pred_generate") for r in rows if r.get("reply") is not None}
    own = reader_name(source.reader, source.reader)
    out = audit_replies(source.items, replies, source.spec, source.lenient, recorded, graders, own)
    return {"run": str(Path(path).resolve()), "dataset": source.dataset,
            "official_reader": None if imported else source.reader, **out}


def verdict_name(path: Path) -> str:
    """The row name of an imported run's own verdict: the harness's, or the reader the import read
    the log's predictions with (where the log holds no verdict)."""
    from spatialprobe.files import read_json

    summary = read_json(path / "summary.json") if (path / "summary.json").is_file() else {}
    reader = (summary.get("details") or {}).get("reader")
    return f"{reader} (as imported)" if reader else "harness verdict"


def parse_table(found: Mapping[str, Any]) -> str:
    """The parse audit as a markdown table."""
    own = found.get("official_reader")
    lines = [f"Answer extraction audit of {found.get('run', 'the replies')}: {found['n']:,} replies"
             + (f"; the benchmark's own reader is `{own}` (its row marked official)." if own else "."), "",
             "| extractor | unparsed % | accuracy [95 % interval] |", "|---|---|---|"]
    for name, v in found["extractors"].items():
        ci = v["ci"]
        lines.append(f"| {name} | {v['unparsed']:.1f} | {v['accuracy']:.1f}"
                     + (f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else " [–]") + " |")
    r, flips = found["range"], found["flips"]
    ci = r["ci"]
    lines += ["", f"Correctness flips between extractors on {flips['n']:,} replies ({flips['share']:.1f} %). "
              f"Range: {r['best']} − {r['worst']} = {r['difference']:+.1f}"
              + (f" [{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else " [–]") + " points (paired)."]
    return "\n".join(lines) + "\n"
