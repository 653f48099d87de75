"""``vlmeval``: VLMEvalKit's prediction and result files (open-compass/VLMEvalKit @e8e78f0):
``outputs/MODEL/MODEL_DATASET.xlsx`` (or ``.tsv``, ``.csv``) written by ``vlmeval/inference.py``,
and the scored ``MODEL_DATASET_JUDGE_result.xlsx`` that ``vlmeval/dataset/image_mcq.py``
(``evaluate_heuristic``) and ``vlmeval/dataset/utils/multiple_choice.py`` write.

Columns read: ``index`` (the item), ``answer`` (gold, an option letter), ``prediction`` (the reply;
its leading letter the prediction), ``question``, ``A``, ``B``, ... (the option texts), ``hit``
(where scored: VLMEvalKit's own verdict, which is kept) and ``g_index`` (circular datasets: every
rotation of a question's options carries its group's index). A scored circular file holds one row
per group, hit only where every rotation was right; an unscored one holds every rotation, each
correct where its prediction is the answer's letter (``A``, ``A.``, ``(A)``, ``A) ...``), and its
rotations are clustered by ``g_index``.
The model is the folder's name (``outputs/MODEL/``) and the benchmark the rest of the file's
name, unless ``--model``/``--benchmark`` say.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.interop.base import Instance, Log, decoded, option_texts, options_of, score_of, text, unique

LETTER = re.compile(r"^\s*\(?([A-Z])(?:[).:,]|\s|$)")


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
        buffer = io.StringIO(decoded(path.read_bytes(), path), newline="")
        reader = csv.DictReader(buffer, delimiter="\t" if suffix == ".tsv" else ",")
        records = ((n, dict(r)) for n, r in enumerate(reader, 2))
    else:
        raise UsageError(f"{path}: the vlmeval format reads .xlsx, .tsv or .csv, not {suffix or 'no suffix'}.")
    for line, record in records:
        yield line, {(k if len(k) == 1 and k.isupper() else k.lower()): v for k, v in record.items() if k}


def letter(prediction: Any) -> str | None:
    match = LETTER.match(str(prediction)) if prediction is not None else None
    return match.group(1) if match else None


def names(path: Path, options: Mapping[str, Any]) -> tuple[str, str]:
    """(model, benchmark) of a VLMEvalKit file: ``outputs/MODEL/MODEL_DATASET[_JUDGE_result].xlsx``."""
    model = options.get("model") or path.parent.name
    stem = re.sub(r"(_exact_matching|_[A-Za-z0-9.-]+)?_result$", "", path.stem)
    return model, options.get("benchmark") or (stem.removeprefix(f"{model}_") if stem.startswith(f"{model}_") else stem)


def _instance(record: Mapping[str, Any], path: Path, line: int, scored: bool, circular: bool) -> Instance:
    for name in ("index", "answer", "prediction"):
        if name not in record or record[name] is None:
            raise DataError(path, line, name, "is missing")
    pred = letter(record["prediction"])
    gold = str(record["answer"]).strip()
    score = score_of(record["hit"], path, line, "hit") if scored else float(pred == gold)
    group = text(record.get("g_index")) if circular and not scored else None
    shown = pred if pred is not None else text(record["prediction"])
    return Instance(str(record["index"]).removesuffix(".0"), gold, shown,
                    score == 1.0, score, group, "generate", text(record.get("question")), text(record["prediction"]),
                    option_columns(record))


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
    given = options_of(options, ("model", "benchmark"), "vlmeval")
    logs = []
    for path in paths:
        table = list(rows(path))
        if not table:
            raise DataError(path, None, None, "holds no rows")
        scored, circular = "hit" in table[0][1], "g_index" in table[0][1]
        found = [_instance(record, path, line, scored, circular) for line, record in table]
        model, benchmark = names(path, given)
        metric = "hit (VLMEvalKit's verdict" + (", circular: every rotation right)" if circular else ")")
        logs.append(Log("vlmeval", model, benchmark, metric if scored else "option letter equals the answer",
                        unique(found, path), {"harness": "VLMEvalKit", "scored": scored, "circular": circular},
                        None, "g_index" if circular and not scored else None, [path]))
    return logs
