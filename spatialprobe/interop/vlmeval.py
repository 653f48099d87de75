"""``vlmeval``: VLMEvalKit's prediction and result files (open-compass/VLMEvalKit @e8e78f0):
``outputs/MODEL/MODEL_DATASET.xlsx`` (or ``.tsv``, ``.csv``) written by ``vlmeval/inference.py``,
and the scored ``MODEL_DATASET_JUDGE_result.xlsx`` that ``vlmeval/dataset/image_mcq.py``
(``evaluate_heuristic``) and ``vlmeval/dataset/utils/multiple_choice.py`` write.

Columns read: ``index`` (the item), ``answer`` (gold, an option letter; an empty one is refused),
``prediction`` (the reply), ``question``, ``A``, ``B``, ... (the option texts), ``hit`` (where
scored: VLMEvalKit's own verdict, which is kept) and ``g_index`` (circular datasets: every rotation
of a question's options carries its group's index). A scored file's ``hit`` is the number.

An unscored file's predictions are read as VLMEvalKit's own evaluation reads them with no judge
(``--judge exact_matching``, or a judge it cannot reach): its spatial suite
(:data:`spatialprobe.readers.vlmeval.MATCH_OPTION_DATASETS`) with ``can_match_option``, every other
multiple-choice set with ``can_infer`` (:mod:`spatialprobe.readers.vlmeval`); a prediction the
reader reads no letter from is wrong, as VLMEvalKit scores it, and counted (the summary says how
many). Circular datasets (a name holding mmbench, ccbench, circular or mmcr, as VLMEvalKit decides)
give one row per question group, right where every rotation was; otherwise rotations that carry a
``g_index`` are clustered by it.
The model is the folder's name (``outputs/MODEL/``) and the benchmark the rest of the file's
name, unless ``--model``/``--benchmark`` say.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.interop.base import (
    Instance,
    Log,
    csv_rows,
    gold_of,
    option_texts,
    options_of,
    score_of,
    text,
    unique,
)
from spatialprobe.readers.vlmeval import can_infer, can_match_option, match_option_hit, reads_with


def rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, row) of a .xlsx (first sheet), .tsv or .csv table, keys lower-cased but the option letters."""
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        from spatialprobe.extras import require

        openpyxl = require("openpyxl", "interop", "Reading VLMEvalKit .xlsx files (spatialprobe import vlmeval)")
        try:
            table = list(openpyxl.load_workbook(path, read_only=True).worksheets[0].iter_rows(values_only=True))
        except Exception as err:  # a damaged workbook: zipfile, XML, KeyError, IndexError ...
            raise DataError(path, None, None, f"is not a readable .xlsx workbook ({type(err).__name__})") from None
        header = [str(h) for h in (table[0] if table else ())]
        records: Iterator[tuple[int, dict[str, Any]]] = (
            (n, dict(zip(header, values, strict=False))) for n, values in enumerate(table[1:], 2))
    elif suffix in (".tsv", ".csv"):
        records = csv_rows(path, "\t" if suffix == ".tsv" else ",")
    else:
        raise UsageError(f"{path}: the vlmeval format reads .xlsx, .tsv or .csv, not {suffix or 'no suffix'}.")
    for line, record in records:
        yield line, {(k if len(k) == 1 and k.isupper() else k.lower()): v for k, v in record.items() if k}


def names(path: Path, options: Mapping[str, Any]) -> tuple[str, str]:
    """(model, benchmark) of a VLMEvalKit file: ``outputs/MODEL/MODEL_DATASET[_JUDGE_result].xlsx``."""
    model = options.get("model") or path.parent.name
    stem = re.sub(r"(_exact_matching|_[A-Za-z0-9.-]+)?_result$", "", path.stem)
    stem = re.sub(r"_(extract_matching|llm_matching|llm_[A-Za-z0-9.-]+)$", "", stem)  # the spatial suite's
    return model, options.get("benchmark") or (stem.removeprefix(f"{model}_") if stem.startswith(f"{model}_") else stem)


def option_columns(record: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The option texts of a row: its columns ``A``, ``B``, ... up to the first empty one."""
    found = []
    for letter_ in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        value = record.get(letter_)
        if value is None or str(value).strip() in ("", "nan"):
            break
        found.append(str(value))
    return option_texts(found)


def read(paths: list[Path], options: Mapping[str, Any]) -> list[Log]:
    """One log per file."""
    given = options_of(options, ("model", "benchmark", "metric"), "vlmeval")
    logs = []
    for path in paths:
        table = list(rows(path))
        if not table:
            raise DataError(path, None, None, "holds no rows")
        scored = "hit" in table[0][1]
        if given.get("metric") not in (None, "hit") or (given.get("metric") and not scored):
            raise UsageError(f"--metric {given['metric']}: {path.name} holds " + (
                "VLMEvalKit's verdict under 'hit' only." if scored else "no verdict (no 'hit' column): its "
                "predictions are read with VLMEvalKit's own reader; leave --metric out."))
        model, benchmark = names(path, given)
        dataset = names(path, {})[1]  # the file's own dataset name decides VLMEvalKit's reading
        logs.append(scored_log(path, table, model, benchmark) if scored else
                    predictions_log(path, table, model, benchmark, dataset))
    return logs


def checked(record: Mapping[str, Any], path: Path, line: int) -> tuple[str, str]:
    """(the row's index, its gold letter); refused where either is missing."""
    for name in ("index", "answer", "prediction"):
        if name not in record:
            raise DataError(path, line, name, "is missing")
    index = record["index"]
    if index is None or str(index).strip() == "":
        raise DataError(path, line, "index", "is missing")
    return str(index).removesuffix(".0"), str(gold_of(record["answer"], path, line, "answer")).strip()


def scored_log(path: Path, table: list[tuple[int, dict[str, Any]]], model: str, benchmark: str) -> Log:
    """A result file: VLMEvalKit's own ``hit`` per row (a circular file: one row per question group)."""
    found = []
    for line, record in table:
        index, gold = checked(record, path, line)
        score = score_of(record["hit"], path, line, "hit")
        found.append(Instance(index, gold, text(record.get("prediction")), score == 1.0, score, None, "generate",
                              text(record.get("question")), text(record.get("prediction")), option_columns(record)))
    return Log("vlmeval", model, benchmark, "hit (VLMEvalKit's verdict)", unique(found, path),
               {"harness": "VLMEvalKit", "scored": True}, None, None, [path])


def predictions_log(path: Path, table: list[tuple[int, dict[str, Any]]], model: str, benchmark: str,
                    dataset: str) -> Log:
    """A prediction file VLMEvalKit has not scored, read as VLMEvalKit's evaluation reads it with no
    judge (``exact_matching``): each prediction through its reader, wrong where it reads none.
    Circular datasets (VLMEvalKit: a name with mmbench, ccbench, circular or mmcr) score a question
    group right only where every rotation is read as its answer (``mcq_circular_eval``)."""
    reader = reads_with(dataset)
    read: list[tuple[int, dict[str, Any], str, str, str | None, bool]] = []
    unread = 0
    for line, record in table:
        index, gold = checked(record, path, line)
        reply = "nan" if record["prediction"] is None or str(record["prediction"]) == "" else str(record["prediction"])
        choices = {k: record[k] for k in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # VLMEvalKit's build_choices
                   if record.get(k) is not None and str(record[k]) != ""}
        if reader == "can_match_option":
            letter, right = can_match_option(reply), match_option_hit(reply, gold)
        else:
            letter = can_infer(reply, choices)
            right = letter == gold
        unread += letter is None
        read.append((line, record, index, gold, letter, right))
    circular = any(word in dataset.lower() for word in ("mmbench", "ccbench", "circular", "mmcr"))
    found = circular_groups(path, read) if circular else [
        Instance(index, gold, letter, right, float(right), text(record.get("g_index")), "generate",
                 text(record.get("question")), text(record["prediction"]), option_columns(record))
        for _, record, index, gold, letter, right in read]
    grouped = not circular and "g_index" in table[0][1]
    log = Log("vlmeval", model, benchmark, "VLMEvalKit's verdict, exact matching" + (
        " (circular: every rotation right)" if circular else ""), unique(found, path),
        {"harness": "VLMEvalKit", "scored": False, "circular": circular, "reader": reader}, None,
        "g_index" if grouped else None, [path], reader=f"VLMEvalKit's {reader}", unreadable=unread)
    return log


def circular_groups(path: Path, read: list[tuple[int, dict[str, Any], str, str, str | None, bool]]
                    ) -> list[Instance]:
    """One row per question group of a circular file: its main row (index = g_index; g_index
    defaults to index mod 10⁶, as VLMEvalKit's), right where every rotation was read as its answer."""
    groups: dict[str, list[bool]] = {}
    main: dict[str, tuple[dict[str, Any], str, str, str | None]] = {}
    for line, record, index, gold, letter, right in read:
        g_index = text(record.get("g_index")) if record.get("g_index") not in (None, "") else None
        try:
            group = str(int(float(g_index))) if g_index is not None else str(int(float(index)) % 1_000_000)
        except ValueError:
            raise DataError(path, line, "g_index" if g_index is not None else "index",
                            "must be a whole number in a circular file") from None
        groups.setdefault(group, []).append(right)
        if group == str(int(float(index))):
            main[group] = (record, index, gold, letter)
    missing = sorted(set(groups) - set(main))
    if missing:
        raise DataError(path, None, "index", f"question group {missing[0]} has no main row (index = g_index)")
    return [Instance(index, gold, letter, all(groups[g]), float(all(groups[g])), None, "generate",
                     text(record.get("question")), text(record["prediction"]), option_columns(record))
            for g, (record, index, gold, letter) in main.items()]
