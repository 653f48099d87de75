"""Every input checked against its task before anything runs: one check per input kind.

The readers (``datasets.release``, ``datasets.pairs``, ``datasets.qa``, ``prompts.templates``,
``synthesis.prompts``, ``judging.human``) check each record's fields with the helpers here, and
the commands and ``spatialprobe datasets validate`` call the same entry points
(:func:`task_data`, :func:`check_folds`), so ``validate`` passes exactly what a run accepts.

What is checked, and where the rule lives:

* field types and sizes: :func:`text` (a non-empty string, ids at most :data:`MAX_ID`
  characters), :func:`string_list` (SR2D attributes); nesting depth and the byte-order mark in
  :mod:`spatialprobe.files`;
* labels are the task's: :func:`task_label`; a release file's question asks the task's question
  (``datasets.release``);
* ids are unique: :class:`Unique` names both lines;
* comparison pairs: :func:`pair_problems` (an object with itself, repeated and contradicting
  rows);
* folds: :func:`check_folds` refuses folds that leave a fold without dev or test instances and
  says how many instances no fold tests.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, UsageError
from spatialprobe.files import shown

MAX_ID = 200
"""Longest id a user's file may give (ids name image files and table rows)."""


def cut(name: str, limit: int = 40) -> str:
    """A name from a user's file (a key, a column) cut to ``limit`` characters, on one line."""
    name = " ".join(name.split())
    return name if len(name) <= limit else f"{name[:limit]}..."


def text(record: dict, field: str, path, line, *, optional: bool = False,
         max_len: int | None = None) -> str | None:
    """``record[field]`` as a non-empty string (None when ``optional`` and absent or null)."""
    value = record.get(field)
    if value is None:
        if optional:
            return None
        raise DataError(path, line, field, "missing")
    if not isinstance(value, str):
        raise DataError(path, line, field, f"expected str, got {shown(value)}")
    if not value.strip():
        raise DataError(path, line, field, "empty")
    if max_len is not None and len(value) > max_len:
        raise DataError(path, line, field, f"{len(value):,} characters long; at most {max_len} allowed")
    return value


def identifier(record: dict, field: str, path, line, *, optional: bool = False) -> str | None:
    """An id: a non-empty string of at most :data:`MAX_ID` characters."""
    return text(record, field, path, line, optional=optional, max_len=MAX_ID)


def string_list(record: dict, field: str, path, line) -> list[str]:
    """A non-empty list of non-empty strings (SR2D's ``obj_1_attributes``)."""
    value = record.get(field)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise DataError(path, line, field, f"expected a non-empty list of names, got {shown(value)}")
    return value


def task_label(value: Any, task: str, path, line, field: str = "label") -> str:
    """``value``, which must be one of ``task``'s labels (as its task file spells them)."""
    from spatialprobe import tasks

    labels = tasks.labels_of(task)
    word = value if isinstance(value, str) else None
    if word not in labels:
        raise DataError(path, line, field, f"{shown(value)} is not a {task} label "
                                           f"({', '.join(labels)})")
    return word


def normal(value: str) -> str:
    """Lower case, single spaces, no spaces at the ends: how answers and labels are compared."""
    return " ".join(value.lower().split())


class Unique:
    """Remembers the line of each key; a repeat is a DataError naming both lines."""

    def __init__(self, path, field: str):
        self.path, self.field = path, field
        self.lines: dict[Hashable, int | None] = {}

    def add(self, key: Hashable, line: int | None) -> None:
        if key in self.lines:
            raise DataError(self.path, line, self.field, f"repeats {shown(key)} of line {self.lines[key]}")
        self.lines[key] = line


def known_task(value: str, path, line, field: str = "task") -> str:
    """A task named in a file: one the toolkit has."""
    from spatialprobe import tasks

    if value not in tasks.names():
        raise DataError(path, line, field, f"{shown(value)} is not a task ({', '.join(tasks.names())})")
    return value


def task_name(task: str, option: str = "--task") -> str:
    """A known task, or one sentence naming the tasks there are."""
    from spatialprobe import tasks

    if task not in tasks.names():
        raise UsageError(f"{option} {task!r} is not a task; choose from {', '.join(tasks.names())}.")
    return task


def read_run_config(path: Path) -> dict[str, Any]:
    """A run's ``config.json`` as far as its shape goes (an object with a string ``kind`` and
    ``settings``, ``runtime`` and ``inputs`` objects); each kind checks its own settings."""
    from spatialprobe.files import read_json_file

    data = read_json_file(path)
    if not isinstance(data, dict):
        raise DataError(path, None, None, "not a spatialprobe run config (expected a JSON object)")
    if not isinstance(data.get("kind"), str):
        raise DataError(path, None, "kind", "missing: not a spatialprobe run config")
    for key in ("settings", "runtime", "inputs"):
        if not isinstance(data.get(key, {}), dict):
            raise DataError(path, None, key, f"expected an object, got {shown(data[key])}")
    return data


def detection_prompt(key: str, prompts: dict[int, dict[str, Any]], path, prompts_path) -> dict[str, Any]:
    """The SR2D prompt a released detection entry ``<unique_id>_<k>`` belongs to."""
    head = key.split("_")[0]
    if not head.isdigit() or int(head) not in prompts:
        raise DataError(path, None, cut(key), f"no SR2D prompt with unique_id {shown(head, 40)} "
                                                    f"in {prompts_path}")
    return prompts[int(head)]


def check_detection(key: str, record: Any, prompt: dict[str, Any], path) -> None:
    """A released detection entry: ``classes`` a list of names; ``sra`` (0/1) or ``centroid``
    (one [x, y] point per class) where both of the prompt's objects were detected."""
    where = cut(key)
    if not isinstance(record, dict) or "classes" not in record:
        raise DataError(path, None, f"{where}.classes", "missing")
    classes = record["classes"]
    if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
        raise DataError(path, None, f"{where}.classes", f"expected a list of class names, got {shown(classes)}")
    if not {prompt["obj_1_attributes"][0], prompt["obj_2_attributes"][0]} <= set(classes):
        return
    sra, centroid = record.get("sra"), record.get("centroid")
    if sra is None and centroid is None:
        raise DataError(path, None, f"{where}.sra", "missing: with both objects detected, give sra or centroid")
    if sra is not None and sra not in (0, 1):
        raise DataError(path, None, f"{where}.sra", f"expected 0 or 1, got {shown(sra)}")
    if sra is None and not (isinstance(centroid, list) and len(centroid) == len(classes) and all(
            isinstance(p, list) and len(p) == 2 and all(_number(v) for v in p) for p in centroid)):
        raise DataError(path, None, f"{where}.centroid", f"expected one [x, y] point per class, "
                                                         f"got {shown(centroid)}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---- comparison pairs ---------------------------------------------------------------------------

def pair_problems(rows: Sequence[tuple[int, str, str, bool]], path, field: str,
                  allow_duplicates: bool = False) -> None:
    """Check (line, first, second, first-is-X-er) rows: an object compared with itself and two
    rows that contradict each other ("a > b" and "a < b", or "a > b" and "b > a") are refused,
    naming the lines; a repeated row is refused too, unless ``allow_duplicates`` (then
    :func:`repeated_pairs` counts them)."""
    said: dict[tuple[str, str], tuple[bool, int]] = {}  # ordered pair -> (first is X-er, line)
    for line, a, b, a_wins in rows:
        key = (a.lower(), b.lower())
        if key[0] == key[1]:
            raise DataError(path, line, None, f"compares {shown(a)} with itself")
        for (x, y), wins in ((key, a_wins), ((key[1], key[0]), not a_wins)):
            if (x, y) not in said:
                continue
            before, first_line = said[(x, y)]
            if before != wins:
                raise DataError(path, line, field, f"contradicts line {first_line} ({shown(a)} and {shown(b)} "
                                                   "compared both ways)")
            if (x, y) == key and not allow_duplicates:
                raise DataError(path, line, None, f"repeats the pair of line {first_line} "
                                                  "(pass --allow-duplicates to keep repeats)")
        said.setdefault(key, (a_wins, line))


def repeated_pairs(dataset) -> int:
    """How many instances repeat an earlier instance's (first, second) pair."""
    pairs = [(i.obj_a.lower(), i.obj_b.lower()) for i in dataset.instances]
    return len(pairs) - len(set(pairs))


# ---- a probe's data, as `probe` and `datasets validate` read it ---------------------------------

def task_data(task: str, data: Path | None = None, pairs: Path | None = None, *,
              first: str | None = None, second: str | None = None, answer: str | None = None,
              delimiter: str | None = None, allow_duplicates: bool = False):
    """(dataset, source) of ``--data``, ``--pairs`` or the task's built-in set, every line checked
    against the task; options that do not apply are refused."""
    from spatialprobe import datasets
    from spatialprobe.datasets import sources

    task_name(task)
    if data and pairs:
        raise UsageError("give either --data (release format) or --pairs (comparison pairs), not both.")
    pair_options(bool(pairs), first, second, answer, delimiter, allow_duplicates)
    if pairs:
        first, second, answer = first or "obj_a", second or "obj_b", answer or "label"
        dataset = datasets.load_pairs(pairs, task, first=first, second=second, answer=answer,
                                      delimiter=delimiter, allow_duplicates=allow_duplicates)
        return dataset, sources.pairs_source(pairs, first, second, answer, delimiter, allow_duplicates)
    if data:
        return datasets.load_release(data, task=task), sources.release_source(data)
    return datasets.load(task), sources.builtin_source(task)


def pair_options(pairs: bool, first: str | None, second: str | None, answer: str | None,
                 delimiter: str | None, allow_duplicates: bool) -> None:
    """The options of a ``--pairs`` file apply to one only."""
    given = [name for name, value in (("--first", first), ("--second", second), ("--answer", answer),
                                      ("--delimiter", delimiter)) if value is not None]
    if allow_duplicates:
        given.append("--allow-duplicates")
    if given and not pairs:
        raise UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to a --pairs "
                         f"file; without --pairs {'it does' if len(given) == 1 else 'they do'} not apply.")


def workable_folds(dataset, most: int) -> int | None:
    """The largest number of folds up to ``most`` that leaves every fold dev and test instances."""
    from spatialprobe.datasets import make_folds

    objects = len({key for inst in dataset.instances for key in inst.fold_keys})
    for k in range(min(most, objects), 1, -1):
        if all(f.dev and f.test for f in make_folds(dataset, k)):
            return k
    return None


def check_folds(dataset, folds: int, seed: int = 0) -> list[str]:
    """``--folds`` against the dataset before anything is scored: refused where a fold would have
    no dev or no test instances (the message names the most folds that work). Returns a note on
    the instances no fold tests: a fold tests only instances with no object in it, so with two
    folds a pair whose objects fall in different folds is tested by neither."""
    from spatialprobe.datasets import make_folds

    objects = {key for inst in dataset.instances for key in inst.fold_keys}
    best = workable_folds(dataset, min(folds, len(objects)))
    advice = (f"use --folds {best} or fewer" if best else
              f"no number of folds works: its {len(objects)} objects are too few for object-disjoint "
              "dev and test sets (use more objects)")
    if folds > len(objects):
        raise UsageError(f"--folds {folds} is more than the {len(objects)} objects of {dataset.name}: "
                         f"each object-disjoint fold needs at least one; {advice}.")
    made = make_folds(dataset, folds, seed)
    empty = [f.index for f in made if not f.dev or not f.test]
    if empty:
        best = workable_folds(dataset, folds - 1) if folds > 2 else None
        advice = f"use --folds {best} or fewer" if best else advice
        raise UsageError(f"--folds {folds} leaves fold(s) {', '.join(map(str, empty))} of {dataset.name} "
                         f"without dev or test instances; {advice}.")
    tested = {i for f in made for i in f.test}
    untested = len(dataset.instances) - len(tested)
    if not untested:
        return []
    what = "pairs" if len(next(iter(dataset.instances)).fold_keys) == 2 else "instances"
    return [f"{untested} of {len(dataset.instances)} {what} of {dataset.name} are never tested with "
            f"--folds {folds} (their objects fall in different folds; more folds test them)"]


def data_notes(dataset, folds: int, seed: int = 0) -> list[str]:
    """What a run of ``dataset`` with ``folds`` folds should say before it starts (refusing it
    where the folds do not work): repeated pairs kept, instances no fold tests."""
    repeats = repeated_pairs(dataset)
    kept = [f"{dataset.name}: {repeats} repeated pair(s) kept (--allow-duplicates)"] if repeats else []
    return kept + check_folds(dataset, folds, seed)
