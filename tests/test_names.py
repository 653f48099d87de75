"""No two modules or folders of ``spatialprobe/`` share a name for different things.

A file name (or a package's folder name) may stand in two places only where it means the same
thing in each, by one of these conventions:

* ``__init__.py``; ``base.py`` = the folder's interface; ``run.py`` = the folder's run kind;
  ``settings.py`` = a run's typed settings (:data:`CONVENTIONS`).
* ``commands/NAME.py`` = the CLI of the library module or package ``NAME`` elsewhere, which it
  imports (today: compare ~ reports/compare, judge_compare ~ judging/judge_compare, qa ~
  benchmarks/qa, replay ~ runner/replay, and the folders audit/, convert/, generalize/,
  interop/, prompts/, synthesis/, tiny/).
* ``readers/NAME.py`` = the reply readers of the benchmark ``benchmarks/NAME.py`` (today: blink,
  mindcube, mmsi, omnispatial, site, spatialeval, spatialmqa, spatialscore, viewspatial, vsibench).
* the explicit pairs of :data:`SAME_THING`, each with what it is.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from itertools import combinations
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "spatialprobe"

CONVENTIONS = {"__init__.py", "base.py", "run.py", "settings.py"}
"""File names that mean the same in every folder (see the module docstring)."""

SAME_THING = {
    frozenset({"interop/vlmeval.py", "readers/vlmeval.py"}):
        "VLMEvalKit, one harness: the import of its logs and its own reading of a reply",
    frozenset({"engine/metrics.py", "metrics/"}):
        "the metrics of an asked-items run, computed with the statistics of metrics/",
}
"""Pairs of places (paths under spatialprobe/, a folder ending in /) that share a name for one
thing, and what that thing is."""


def _places() -> dict[str, list[str]]:
    """Each name -> the places under spatialprobe/ that carry it: modules by file name
    (``vsr.py``), packages by folder name as a module would be (``vsr.py`` for ``vsr/``)."""
    places: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" not in path.parts:
            places[path.name].append(path.relative_to(PACKAGE).as_posix())
    for init in sorted(PACKAGE.rglob("__init__.py")):
        folder = init.parent
        if folder != PACKAGE and "__pycache__" not in folder.parts:
            places[f"{folder.name}.py"].append(folder.relative_to(PACKAGE).as_posix() + "/")
    return places


def _dotted(place: str) -> str:
    return "spatialprobe." + place.removesuffix("/").removesuffix(".py").replace("/", ".")


def _imports(place: str) -> set[str]:
    """The modules a module imports (``from a.b import c``: both ``a.b`` and ``a.b.c``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse((PACKAGE / place).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _is_cli_of(command: str, library: str) -> bool:
    """Whether ``commands/NAME.py`` imports the library ``NAME`` (or a module of that package)."""
    target = _dotted(library)
    return any(name == target or name.startswith(target + ".") for name in _imports(command))


def _allowed(a: str, b: str) -> bool:
    if frozenset({a, b}) in SAME_THING:
        return True
    for command, other in ((a, b), (b, a)):
        if command.startswith("commands/") and command.count("/") == 1 and _is_cli_of(command, other):
            return True
    for reader, other in ((a, b), (b, a)):
        if (reader.startswith("readers/") and other == "benchmarks/" + reader.removeprefix("readers/")
                and (PACKAGE / other).is_file()):
            return True
    return False


def _clashes() -> list[str]:
    return [f"{a} ~ {b}" for name, places in _places().items() if name not in CONVENTIONS
            for a, b in combinations(places, 2) if not _allowed(a, b)]


def test_no_two_modules_or_folders_share_a_name_for_different_things() -> None:
    clashes = _clashes()
    assert not clashes, ("these share a name but not a meaning; rename one (or, where they are one "
                         "thing, say so in tests/test_names.py): " + "; ".join(clashes))


def test_every_explicit_pair_still_exists() -> None:
    """An allowance outlives no rename: each place of :data:`SAME_THING` is there."""
    missing = [place for pair in SAME_THING for place in pair if not (PACKAGE / place).exists()]
    assert not missing, missing


def test_the_check_finds_a_clash() -> None:
    """The rules are not so wide that they let anything through: a reader with no benchmark of its
    name, a command module that does not import its namesake, and two unrelated modules clash."""
    assert not _allowed("readers/option_parser.py", "benchmarks/option_parser.py")
    assert not _allowed("commands/bench.py", "benchmarks/bench.py")
    assert not _allowed("models/mllm.py", "tiny/mllm.py")
    assert _allowed("readers/blink.py", "benchmarks/blink.py")
    assert _allowed("commands/compare.py", "reports/compare.py")
