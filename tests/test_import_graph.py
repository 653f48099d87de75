"""The package's data flows one way: no import cycle between its packages (issue 12).

Every ``from spatialprobe... import`` (module level, inside functions, and under TYPE_CHECKING)
is an edge between the top-level packages of the two modules; the graph must have no cycle.
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
