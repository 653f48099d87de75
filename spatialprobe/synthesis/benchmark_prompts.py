"""Benchmarks' released prompt files, read with the protocol each benchmark judges them by.

* T2I-CompBench's 2-D spatial split (``examples/dataset/spatial_val.txt`` of
  Karine-Huang/T2I-CompBench): one prompt a line, ``a OBJECT RELATION a OBJECT`` with a relation
  of its ``UniDet_eval/2D_spatial_eval.py`` vocabulary -> task ``posrel2d``;
* T2I-CompBench++'s 3-D split (``examples/dataset/3d_spatial_val.txt``): ``in front of``,
  ``behind``, ``hidden by`` -> task ``posrel3d`` (labels ``in front of``, ``behind``, ``hidden``);
* GenEval's ``prompts/evaluation_metadata.jsonl`` (djghosh13/geneval): its ``position`` records
  -> task ``posrel2d``; records of its other tags (objects, counts, colours: no relation between
  two objects) are skipped with a note.

Which format a file is comes from an explicit ``BENCHMARK:FILE`` spec, else from the file: a JSON
lines file whose records carry ``tag`` and ``include`` (and no ``id``) is GenEval's; a text file
named ``3d_spatial*.txt`` is T2I-CompBench++'s 3-D split, one named ``spatial*.txt`` its 2-D split.
Each prompt's metadata holds the judge task's fields (task, obj_a, obj_b, label), the relation as
written, and ``benchmark``: the protocol (:data:`PROTOCOLS`) that ``synthesize`` (images per
prompt) and ``judge`` (rule, prompt-level score) read. docs/benchmark-prompts.md says more.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError
from spatialprobe.files import iter_jsonl, shown
from spatialprobe.imagestore import PromptItem

PROTOCOLS: dict[str, dict[str, Any]] = {
    "t2i-compbench": {"name": "t2i-compbench", "title": "T2I-CompBench 2-D spatial",
                      "task": "posrel2d", "images_per_prompt": 10, "rule": "t2i-compbench",
                      "prompt_score": "mean"},
    "t2i-compbench-3d": {"name": "t2i-compbench-3d", "title": "T2I-CompBench++ 3-D spatial",
                         "task": "posrel3d", "images_per_prompt": 10, "rule": "t2i-compbench-3d",
                         "prompt_score": "mean"},
    "geneval": {"name": "geneval", "title": "GenEval position", "task": "posrel2d",
                "images_per_prompt": 4, "rule": "geneval", "prompt_score": "any"},
}
"""Each benchmark's protocol: the judge task its prompts are, images per prompt (T2I-CompBench's
README: "10 images are generated per prompt for metric calculation"; GenEval's
``generation/diffusers_generate.py``: ``--n_samples`` 4), the ``judge --rule`` that scores them
and how a prompt's images make its score: ``mean`` of the image scores (T2I-CompBench averages
images only: with as many images per prompt this equals its number), ``any`` image correct
(GenEval's ``evaluation/summary_scores.py``: ``df.groupby('metadata')['correct'].any()``)."""

T2I_2D = {"on the left of": "left of", "on the right of": "right of", "on the top of": "above",
          "on top of": "above", "on the bottom of": "below", "on bottom of": "below",
          "on side of": "beside", "next to": "beside", "near": "beside"}
"""T2I-CompBench's 2-D phrases (its ``vocab_spatial``, and "on bottom of" of its complex
prompts) -> posrel2d labels. Its ``determine_position`` has no branch for "on top of", which it
scores 0: the phrase is kept in ``relation_phrase`` for a judge that reproduces that."""
T2I_3D = {"in front of": "in front of", "behind": "behind", "hidden by": "hidden"}
"""T2I-CompBench++'s 3-D phrases -> posrel3d labels (its ``vocab_spatial_3d`` matches ``hidden``)."""
T2I_PERSON = ("girl", "boy", "man", "woman")
"""Nouns T2I-CompBench's scripts look up as UniDet's ``person`` (``benchmark_objects``)."""
GENEVAL_RELATIONS = ("left of", "right of", "above", "below")
"""The relations of GenEval's position prompts (``prompts/create_prompts.py``)."""

_ARTICLE = r"(?:a|an|the)\s+"


def _phrase_pattern(phrases: dict[str, str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))
    return re.compile(rf"^{_ARTICLE}(?P<a>[a-z][a-z -]*?)\s+(?P<rel>{alternatives})\s+"
                      rf"{_ARTICLE}(?P<b>[a-z][a-z -]*?)\s*\.?$", re.IGNORECASE)


PATTERNS = {"t2i-compbench": (_phrase_pattern(T2I_2D), T2I_2D),
            "t2i-compbench-3d": (_phrase_pattern(T2I_3D), T2I_3D)}


def split_spec(spec: str) -> tuple[str | None, str]:
    """``BENCHMARK:FILE`` -> (benchmark, file); anything else -> (None, spec)."""
    name, sep, rest = spec.partition(":")
    return (name, rest) if sep and name in PROTOCOLS else (None, spec)


def detect(path: Path, first_record: dict[str, Any] | None) -> str | None:
    """The benchmark a file is, from its name and first record (None: not a benchmark's file)."""
    if first_record is not None:
        geneval = {"tag", "include"} <= set(first_record) and "id" not in first_record
        return "geneval" if geneval else None
    name = path.name.lower()
    if path.suffix.lower() != ".txt":
        return None
    if name.startswith("3d_spatial"):
        return "t2i-compbench-3d"
    return "t2i-compbench" if name.startswith("spatial") else None


def t2i_compbench_items(benchmark: str, path: Path, lines: list[tuple[int, str]], explicit: bool
                        ) -> tuple[list[PromptItem], list[str]]:
    """T2I-CompBench prompts (2-D or 3-D) from the file's non-blank lines (number, text). Every
    line is a prompt, a repeated one too (the benchmark makes images of each line)."""
    pattern, labels = PATTERNS[benchmark]
    protocol = PROTOCOLS[benchmark]
    items: list[PromptItem] = []
    seen: dict[str, list[int]] = {}  # text -> its lines
    same: list[int] = []
    for number, text in lines:
        match = pattern.match(text)
        if match is None:
            raise DataError(path, number, "text", f"{shown(text)} is not a {protocol['title']} prompt: "
                            "expected 'a OBJECT RELATION a OBJECT' with a relation of "
                            f"{', '.join(repr(p) for p in labels)} (read as {benchmark} "
                            f"{'as given' if explicit else _because(path)})")
        a, b = (" ".join(match[k].lower().split()) for k in ("a", "b"))
        phrase = " ".join(match["rel"].lower().split())
        if a == b:
            same.append(number)
        meta = {"task": protocol["task"], "obj_a": a, "obj_b": b, "label": labels[phrase],
                "relation_phrase": phrase, "line": number, "benchmark": dict(protocol),
                "benchmark_objects": ["person" if o in T2I_PERSON else o for o in (a, b)]}
        items.append(PromptItem(f"line-{number:04d}", text, meta))
        seen.setdefault(text, []).append(number)
    notes = [f"lines {', '.join(map(str, n))} repeat one prompt ({shown(t)}); each is kept, as "
             f"{protocol['title']} makes images of every line" for t, n in seen.items() if len(n) > 1]
    if same:
        notes.append(f"line(s) {', '.join(map(str, same))} name the same object twice: a judge "
                     "finds one box for both, as the benchmark's script does")
    return items, notes


def _because(path: Path) -> str:
    return (f"because of its name {path.name!r}; rename a file of plain prompt lines so that it "
            "does not start with 'spatial' or '3d_spatial'")


def geneval_items(path: Path) -> tuple[list[PromptItem], list[str]]:
    """GenEval's position records as posrel2d prompts; other tags skipped with a note."""
    items: list[PromptItem] = []
    skipped: dict[str, int] = {}
    for number, record in iter_jsonl(path):
        tag = record.get("tag")
        if not isinstance(tag, str) or not tag:
            raise DataError(path, number, "tag", f"expected GenEval's task tag (a string), got {shown(tag)}")
        if tag != "position":
            skipped[tag] = skipped.get(tag, 0) + 1
            continue
        items.append(_geneval_position(record, path, number))
    if not items:
        raise DataError(path, None, "tag", "the file holds no GenEval position records (tag "
                                           "'position'), the only ones a position judge scores")
    notes = []
    if skipped:
        tags = ", ".join(f"{tag} {n}" for tag, n in skipped.items())
        notes.append(f"skipped {sum(skipped.values())} GenEval record(s) of other tags ({tags}): "
                     "they ask for objects, counts or colours, not a relation between two objects")
    return items, notes


def _geneval_position(record: dict[str, Any], path: Path, number: int) -> PromptItem:
    """One position record: ``include`` = [{class B, count 1}, {class A, count 1, position:
    [relation, 0]}] -- A is ``relation`` B (GenEval's ``evaluate``: the relation of each found A
    to the target group's objects)."""
    prompt = record.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise DataError(path, number, "prompt", f"expected the prompt text, got {shown(prompt)}")
    include = record.get("include")
    if not isinstance(include, list) or len(include) != 2 or not all(isinstance(r, dict) for r in include):
        raise DataError(path, number, "include", "a position record includes two objects "
                        f"([{{class, count}}, {{class, count, position}}]), got {shown(include)}")
    names = []
    for k, req in enumerate(include):
        name, count = req.get("class"), req.get("count")
        if not isinstance(name, str) or not name.strip():
            raise DataError(path, number, f"include[{k}].class", f"expected an object name, got {shown(name)}")
        if count != 1:
            raise DataError(path, number, f"include[{k}].count", f"expected 1 (the position rule reads "
                                                                 f"one box of each object), got {shown(count)}")
        names.append(" ".join(name.lower().split()))
    position = include[1].get("position")
    if not (isinstance(position, list) and len(position) == 2 and position[0] in GENEVAL_RELATIONS
            and position[1] == 0):
        raise DataError(path, number, "include[1].position", "expected [RELATION, 0] with a relation of "
                        f"{', '.join(GENEVAL_RELATIONS)} (relative to the first object), got {shown(position)}")
    meta = {"task": "posrel2d", "obj_a": names[1], "obj_b": names[0], "label": position[0],
            "relation_phrase": position[0], "line": number, "benchmark": dict(PROTOCOLS["geneval"]),
            "geneval_metadata": record}
    return PromptItem(f"{number - 1:05d}", prompt.strip(), meta)  # GenEval's folder of the line


def read_benchmark(benchmark: str, path: Path, lines: list[tuple[int, str]] | None, explicit: bool
                   ) -> tuple[list[PromptItem], list[str]]:
    """The prompts of ``path`` as ``benchmark``'s file, and notes (``lines``: a text file's
    non-blank lines, for T2I-CompBench)."""
    if benchmark == "geneval":
        return geneval_items(path)
    return t2i_compbench_items(benchmark, path, lines or [], explicit)
