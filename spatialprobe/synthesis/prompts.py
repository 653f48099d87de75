"""Where prompts come from: a text file, a JSON lines file, or a built-in dataset.

* a built-in dataset name (``size``, ``height``, ``posrel``): one prompt per instance, its text
  (``An ant and a bird.``), with the whole instance stored as the prompt's metadata;
* ``*.jsonl`` / ``*.json``: JSON lines ``{"id": ..., "text": ..., ...meta}``; a file without
  ``id`` fields is read as a spatial-commonsense release file (``text, obj_a, obj_b, label``);
* any other file: one prompt per line, ids ``line-0007`` from the line number. Blank lines are
  skipped, repeated lines are dropped (first one kept) and both are reported; a line that is
  not UTF-8 is an error naming the line; a file without prompts is an error.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..datasets import DataError, builtin_names, load
from ..datasets.release import iter_jsonl
from ..imagestore import PromptItem


@dataclass(frozen=True)
class PromptSet:
    """Prompts to synthesize and where they came from."""

    items: tuple[PromptItem, ...]
    """The prompts in file/dataset order."""
    source: str
    """Dataset ``name@version`` or the file path."""
    task: str | None = None
    """The dataset's task (size, height, posrel) when prompts come from a dataset."""
    notes: tuple[str, ...] = field(default=())
    """Things the reader should know: skipped blank lines, dropped duplicates."""
    spec: str | None = None
    """What :func:`load_prompts` was given (a file's path made absolute), to load them again."""

    @property
    def version(self) -> str:
        """sha256[:16] of the prompts' ids, texts and metadata: an edited file has another."""
        text = json.dumps([item.to_dict() for item in self.items], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def load_prompts(spec: str) -> PromptSet:
    """Prompts from a built-in dataset name or a file (see the module docstring)."""
    if spec in builtin_names():
        return replace(_from_dataset(spec), spec=spec)
    path = Path(spec)
    if not path.is_file():
        raise DataError(path, None, None, f"no such file (and not a built-in dataset: "
                                          f"{', '.join(builtin_names())})")
    path = path.resolve()  # recorded in the run's settings: the same file from any directory
    prompts = _from_jsonl(path) if path.suffix in (".jsonl", ".json") else _from_text(path)
    return replace(prompts, spec=str(path))


def _from_dataset(name_or_path: str) -> PromptSet:
    ds = load(name_or_path)
    items = tuple(PromptItem(i.id, i.text.strip(), i.to_dict()) for i in ds.instances)
    return PromptSet(items, f"{ds.name}@{ds.version}", ds.task)


def _from_jsonl(path: Path) -> PromptSet:
    records = list(iter_jsonl(path))
    if not records:
        raise DataError(path, None, None, "the file holds no prompts")
    if not any("id" in r for _, r in records):
        return _from_dataset(str(path))  # spatial-commonsense release format
    items: list[PromptItem] = []
    seen: dict[str, int] = {}  # id -> line
    files: dict[str, int] = {}  # image file stem -> line
    for number, record in records:
        for key in ("id", "text"):
            if not isinstance(record.get(key), str) or not record[key].strip():
                raise DataError(path, number, key, "missing or not a non-empty string")
        pid = record["id"]
        if pid in seen:
            raise DataError(path, number, "id", f"repeats the id {pid!r} of line {seen[pid]}")
        seen[pid] = number
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in pid)  # image file stem
        if safe in files:
            raise DataError(path, number, "id", f"{pid!r} and the id of line {files[safe]} give "
                                                f"the same image file name {safe!r}")
        files[safe] = number
        meta = {k: v for k, v in record.items() if k not in ("id", "text")}
        items.append(PromptItem(pid, record["text"].strip(), meta))
    return PromptSet(tuple(items), str(path))


def _from_text(path: Path) -> PromptSet:
    items: list[PromptItem] = []
    notes: list[str] = []
    blank: list[int] = []
    first_line: dict[str, int] = {}  # text -> line it first appears on
    with open(path, "rb") as handle:
        raw_lines = handle.read().splitlines()
    for number, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError as err:
            raise DataError(path, number, None, f"not UTF-8 text (byte {err.start + 1} of the "
                                                "line); save the file as UTF-8") from None
        if number == 1:
            text = text.lstrip("\ufeff")
        if not text:
            blank.append(number)
            continue
        if text in first_line:
            notes.append(f"line {number} repeats line {first_line[text]} ({text!r}); dropped")
            continue
        first_line[text] = number
        items.append(PromptItem(f"line-{number:04d}", text, {"line": number}))
    if not items:
        raise DataError(path, None, None, "the file holds no prompts (it is empty or blank)")
    if blank:
        notes.insert(0, f"skipped {len(blank)} blank line(s): {_numbers(blank)}")
    return PromptSet(tuple(items), str(path), None, tuple(notes))


def _numbers(values: list[int], limit: int = 10) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")
