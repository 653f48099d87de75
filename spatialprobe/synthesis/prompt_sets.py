"""Where prompts come from: a text file, a JSON lines file, or a built-in dataset.

* a built-in dataset name (``size``, ``height``, ``posrel``): one prompt per instance, its text
  (``An ant and a bird.``), with the whole instance stored as the prompt's metadata;
* ``*.jsonl`` / ``*.json``: JSON lines ``{"id": ..., "text": ..., ...meta}``; a file without
  ``id`` fields is read as a spatial-commonsense release file (``text, obj_a, obj_b, label``);
* a benchmark's released file (T2I-CompBench's ``spatial_val.txt`` and ``3d_spatial_val.txt``,
  GenEval's ``evaluation_metadata.jsonl``), told by an explicit ``BENCHMARK:FILE`` spec or by the
  file (:mod:`spatialprobe.synthesis.benchmark_prompts`): its prompts with the benchmark's
  protocol (:attr:`PromptSet.protocol`, and ``benchmark`` in each prompt's metadata);
* any other file: one prompt per line, ids ``line-0007`` from the line number. Blank lines are
  skipped, repeated lines are dropped (first one kept) and both are reported; a line that is
  not UTF-8 is an error naming the line; a file without prompts is an error. Each line's
  metadata says what it is (:func:`line_meta`), so that the judge and VISOR can score what
  carries an answer and name the lines that do not.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from spatialprobe import validate
from spatialprobe.files import iter_jsonl, shown
from spatialprobe.imagestore import PromptItem
from spatialprobe.tasks.data import DataError, builtin_data, builtin_names, load


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
    protocol: dict[str, Any] | None = None
    """A benchmark's file: its protocol (``benchmark_prompts.PROTOCOLS``: images per prompt, the
    judge rule, how a prompt's images are scored); None for other prompts."""

    @property
    def version(self) -> str:
        """sha256[:16] of the prompts' ids, texts and metadata: an edited file has another."""
        text = json.dumps([item.to_dict() for item in self.items], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def load_prompts(spec: str) -> PromptSet:
    """Prompts from a built-in dataset name or a file (see the module docstring)."""
    from spatialprobe.synthesis import benchmark_prompts

    if spec in builtin_names():
        return replace(_from_dataset(spec), spec=spec)
    benchmark, name = benchmark_prompts.split_spec(spec)
    path = Path(name)
    if not path.is_file():
        raise DataError(path, None, None, f"no such file (and not a built-in dataset: "
                                          f"{', '.join(builtin_names())}; a benchmark's file is "
                                          f"{'|'.join(benchmark_prompts.PROTOCOLS)}:FILE)")
    path = path.resolve()  # recorded in the run's settings: the same file from any directory
    jsonl = path.suffix in (".jsonl", ".json")
    explicit = benchmark is not None
    if benchmark is None:
        benchmark = benchmark_prompts.detect(path, next(iter_jsonl(path), (0, {}))[1] if jsonl else None)
    if benchmark is None:
        prompts = _from_jsonl(path) if jsonl else _from_text(path)
        return replace(prompts, spec=str(path))
    return replace(_from_benchmark(benchmark, path, explicit), spec=f"{benchmark}:{path}")


def _from_benchmark(benchmark: str, path: Path, explicit: bool) -> PromptSet:
    from spatialprobe.synthesis import benchmark_prompts

    lines, blank = ([], []) if benchmark == "geneval" else _text_lines(path)
    items, notes = benchmark_prompts.read_benchmark(benchmark, path, lines, explicit)
    if not items:
        raise DataError(path, None, None, "the file holds no prompts (it is empty or blank)")
    if blank:
        notes.insert(0, f"skipped {len(blank)} blank line(s): {_numbers(blank)}")
    protocol = benchmark_prompts.PROTOCOLS[benchmark]
    return PromptSet(tuple(items), str(path), protocol["task"], tuple(notes), protocol=dict(protocol))


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
    sr2d = validate.Unique(path, "unique_id")  # VISOR finds a prompt's SR2D record by it
    for number, record in records:
        pid = str(validate.identifier(record, "id", path, number))
        validate.text(record, "text", path, number)
        check_meta(record, path, number)
        if record.get("unique_id") is not None:
            sr2d.add(int(record["unique_id"]), number)
        if pid in seen:
            raise DataError(path, number, "id", f"repeats the id {shown(pid)} of line {seen[pid]}")
        seen[pid] = number
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in pid)  # image file stem
        if safe in files:
            raise DataError(path, number, "id", f"{shown(pid)} and the id of line {files[safe]} give "
                                                f"the same image file name {shown(safe)}")
        files[safe] = number
        meta = {k: v for k, v in record.items() if k not in ("id", "text")}
        items.append(PromptItem(pid, record["text"].strip(), meta))
    return PromptSet(tuple(items), str(path))


def check_meta(record: dict[str, Any], path: Path, line: int) -> None:
    """The fields a judge reads from a prompt's metadata, checked here so that a bad one is
    refused with its line before any image is made: a known task's ``label`` is one of its labels
    (an integer label on a size prompt would be judged and scored 0), object names are strings,
    SR2D attributes are lists of names and ``unique_id`` is a number."""
    from spatialprobe import tasks

    task = record.get("task")
    if isinstance(task, str) and task in tasks.names() and "label" in record:
        validate.task_label(record["label"], task, path, line)
    for key in ("obj_a", "obj_b"):
        if key in record:
            validate.identifier(record, key, path, line)
    for key in ("obj_1_attributes", "obj_2_attributes"):
        if key in record:
            validate.string_list(record, key, path, line)
    uid = record.get("unique_id")
    if uid is not None and not ((isinstance(uid, int) and not isinstance(uid, bool) and 0 <= uid < 10**18)
                                or (isinstance(uid, str) and re.fullmatch(r"[0-9]{1,18}", uid))):
        raise DataError(path, line, "unique_id", f"expected a number, got {shown(uid)}")


def _text_lines(path: Path) -> tuple[list[tuple[int, str]], list[int]]:
    """A text file's non-blank lines (number, stripped text) and its blank lines' numbers."""
    lines: list[tuple[int, str]] = []
    blank: list[int] = []
    try:
        raw_lines = path.read_bytes().splitlines()
    except OSError as err:
        raise DataError(path, None, None, f"cannot be read ({err.strerror or err})") from None
    for number, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError as err:
            raise DataError(path, number, None, f"not UTF-8 text (byte {err.start + 1} of the "
                                                "line); save the file as UTF-8") from None
        if number == 1:
            text = text.lstrip("\ufeff")
        if text:
            lines.append((number, text))
        else:
            blank.append(number)
    return lines, blank


def _from_text(path: Path) -> PromptSet:
    items: list[PromptItem] = []
    notes: list[str] = []
    first_line: dict[str, int] = {}  # text -> line it first appears on
    lines, blank = _text_lines(path)
    for number, text in lines:
        if text in first_line:
            notes.append(f"line {number} repeats line {first_line[text]} ({shown(text)}); dropped")
            continue
        first_line[text] = number
        items.append(PromptItem(f"line-{number:04d}", text, line_meta(text, number)))
    if not items:
        raise DataError(path, None, None, "the file holds no prompts (it is empty or blank)")
    if blank:
        notes.insert(0, f"skipped {len(blank)} blank line(s): {_numbers(blank)}")
    return PromptSet(tuple(items), str(path), None, tuple(notes))


def _numbers(values: list[int], limit: int = 10) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


_WORD = r"(?!(?:a|an|the|and|is|are)\b)[a-z][a-z-]*"
_NAME = rf"{_WORD}(?:\s+{_WORD}){{0,2}}"  # one to three words: "dog", "traffic light"
_ARTICLE = r"(?:(?:a|an|the)\s+)"
SR2D_SENTENCE = re.compile(rf"^{_ARTICLE}?(?P<a>{_NAME})\s+(?P<rel>to the left of|to the right of|"
                           rf"above|below)\s+{_ARTICLE}?(?P<b>{_NAME})\s*\.?$", re.IGNORECASE)
COMPARISON = re.compile(rf"^{_ARTICLE}(?P<a>{_NAME})\s+and\s+{_ARTICLE}(?P<b>{_NAME})\s*\.?$",
                        re.IGNORECASE)


def _normal(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


@cache
def _posrel_texts() -> dict[str, dict[str, Any]]:
    """The built-in posrel instances by normalised text (each names its gold relation)."""
    return {_normal(i.text): i.to_dict() for i in builtin_data("posrel").instances}


def line_meta(text: str, number: int) -> dict[str, Any]:
    """What a plain prompt line is, as its metadata (``line`` always; ``template`` says which):

    * ``posrel``: the text of a built-in posrel instance ("A man drives the bus."): that
      instance (task, obj_a, obj_b and the gold label), so ``judge posrel`` scores it;
    * ``sr2d``: an SR2D sentence, ARTICLE OBJECT RELATION ARTICLE OBJECT with a relation of
      SR2D's four ("a dog to the left of a cat"): the SR2D fields (``unique_id`` = the line
      number), so ``spatialprobe visor`` scores it; the sentence carries its own answer;
    * ``comparison``: "An ant and a bird." names two objects but neither the task (size and
      height share the text) nor the answer: obj_a and obj_b only, which no judge can score;
    * ``none``: anything else.
    """
    posrel = _posrel_texts().get(_normal(text))
    if posrel is not None:
        return {**posrel, "line": number, "template": "posrel"}
    match = SR2D_SENTENCE.match(text.strip())
    if match:
        return {"line": number, "template": "sr2d", "unique_id": number, "num_objects": 2,
                "obj_1_attributes": [_noun(match["a"])], "obj_2_attributes": [_noun(match["b"])],
                "rel_type": match["rel"].lower()}
    match = COMPARISON.match(text.strip())
    if match:
        return {"line": number, "template": "comparison", "obj_a": _noun(match["a"]),
                "obj_b": _noun(match["b"])}
    return {"line": number, "template": "none"}


def _noun(words: str) -> str:
    return " ".join(words.lower().split())
