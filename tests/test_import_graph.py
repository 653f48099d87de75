"""The package's data flows one way: no import cycle between its packages, and none
between the modules of one folder either.

Every ``from spatialprobe... import`` (module level, inside functions, and under TYPE_CHECKING)
is an edge between the top-level packages of the two modules; the graph must have no cycle.
Inside a folder, every import of a sibling module is an edge between the two modules.
"""

import ast
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "spatialprobe"


def _package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def import_edges() -> dict[tuple[str, str], list[str]]:
    """(package, package) -> the imports (``module:line -> target``) that make the edge."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_init = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_init else parts)
        package = module if is_init else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("spatialprobe.") and _package_of(module) != _package_of(target):
                edges[(_package_of(module), _package_of(target))].append(f"{module}:{node.lineno} -> {target}")
    return edges


def find_cycle(edges) -> list[str] | None:
    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_no_import_cycle_between_packages():
    edges = import_edges()
    cycle = find_cycle(edges)
    if cycle:
        detail = [e for a, b in pairwise(cycle) for e in edges[(a, b)]]
        pytest.fail(f"import cycle {' -> '.join(cycle)}:\n" + "\n".join(detail))


def test_the_cycle_finder_finds_a_planted_cycle():
    edges = {("spatialprobe.a", "spatialprobe.b"): ["x"], ("spatialprobe.b", "spatialprobe.c"): ["y"],
             ("spatialprobe.c", "spatialprobe.a"): ["z"], ("spatialprobe.c", "spatialprobe.d"): ["w"]}
    assert find_cycle(edges) == ["spatialprobe.a", "spatialprobe.b", "spatialprobe.c", "spatialprobe.a"]
    assert find_cycle({("spatialprobe.a", "spatialprobe.b"): ["x"]}) is None


def module_edges() -> dict[tuple[str, str], list[str]]:
    """(module, sibling module) -> the imports that make the edge, for modules of one folder
    (``from spatialprobe.x import y`` counts as importing ``spatialprobe.x.y`` where that is a module)."""
    modules = {".".join(p.relative_to(ROOT.parent).with_suffix("").parts) for p in ROOT.rglob("*.py")}
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in ROOT.rglob("*.py"):
        module = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        folder = module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target in modules and target != module and target.rsplit(".", 1)[0] == folder:
                    edges[(module, target)].append(f"{module}:{node.lineno} -> {target}")
    return edges


def module_cycles(edges) -> list[list[str]]:
    """Every cycle of the module graph (as found one at a time, its edges then removed)."""
    left, found = dict(edges), []
    while (cycle := find_cycle(left)) is not None:
        found.append(cycle)
        for a, b in pairwise(cycle):
            left.pop((a, b), None)
    return found


def test_no_import_cycle_inside_a_folder():
    edges = module_edges()
    cycles = module_cycles(edges)  # none: the last two went with the asked-items engine
    if cycles:
        pytest.fail("import cycles inside a folder:\n" + "\n".join(
            " -> ".join(c) + ": " + "; ".join(e for a, b in pairwise(c) for e in edges[(a, b)]) for c in cycles))


def test_the_folder_cycle_finder_finds_a_sibling_circle():
    edges = {("spatialprobe.runner.a", "spatialprobe.runner.b"): ["x"],
             ("spatialprobe.runner.b", "spatialprobe.runner.a"): ["y"]}
    assert module_cycles(edges) == [["spatialprobe.runner.a", "spatialprobe.runner.b", "spatialprobe.runner.a"]]
