"""Every import is declared in setup.cfg, and optional ones stay optional.

The source is read with ``ast`` (module-level and function-level imports, and the
``spatialprobe.extras.require(module, extra)`` calls), each third-party module is mapped to the
distribution that installs it, and that is compared with ``install_requires`` and the extras.
"""

from __future__ import annotations

import ast
import configparser
import json
import subprocess
import sys
from functools import cache
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from spatialprobe.extras import EXTRA_FEATURES, MissingExtra, require

ROOT = Path(__file__).resolve().parents[1]
OWN = ({"spatialprobe"} | {p.stem for folder in ("tests", "bench") for p in (ROOT / folder).glob("*.py")}
       | {p.parent.name for p in (ROOT / "tests").glob("*/__init__.py")})  # test packages: official/


@cache
def declared() -> dict[str, frozenset[str]]:
    """``{"base": names, extra: names, ...}`` from setup.cfg, names canonicalized."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")

    def names(text: str) -> frozenset[str]:
        return frozenset(canonicalize_name(Requirement(line).name)
                         for line in text.strip().splitlines() if line.strip())

    out = {"base": names(cfg["options"]["install_requires"])}
    out.update({extra: names(text) for extra, text in cfg["options.extras_require"].items()})
    return out


def optional() -> frozenset[str]:
    """Distributions that only an extra installs (not dev's tools)."""
    extras = [names for extra, names in declared().items() if extra not in ("base", "dev")]
    return frozenset().union(*extras) - declared()["base"]


@cache
def module_distributions() -> dict[str, list[str]]:
    return packages_distributions()  # reads every installed distribution's file list: slow


def distribution(module: str) -> str | None:
    found = module_distributions().get(module.split(".")[0])
    return canonicalize_name(found[0]) if found else None


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """(module, line, inside a function) of each absolute import statement of ``path``."""
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module, child.lineno, in_function))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse(path.read_text("utf-8")), False)
    return found


def require_calls(path: Path) -> list[tuple[str, str, int]]:
    """(module, extra, line) of each ``require("module", "extra", ...)`` call in ``path``."""
    return [(node.args[0].value, node.args[1].value, node.lineno)
            for node in ast.walk(ast.parse(path.read_text("utf-8")))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "require"
            and len(node.args) >= 2
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[:2])]


def third_party(path: Path) -> list[tuple[str, str | None, int, bool]]:
    """(module, distribution, line, lazy) of the imports of ``path`` outside the standard library."""
    return [(module, distribution(module), line, lazy) for module, line, lazy in imports(path)
            if module.split(".")[0] not in sys.stdlib_module_names | OWN]


def sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", ["spatialprobe", "tests", "bench"])
def test_every_import_is_declared(folder):
    allowed = frozenset().union(*(names for extra, names in declared().items()
                                  if folder != "spatialprobe" or extra != "dev"))
    undeclared = [f"{path.relative_to(ROOT)}:{line} imports {module} ({dist or 'not installed'})"
                  for path in sources(folder) for module, dist, line, _ in third_party(path)
                  if dist not in allowed]
    assert not undeclared, "declare these in setup.cfg:\n" + "\n".join(undeclared)


def test_optional_imports_are_lazy_and_in_the_extra_the_module_names():
    problems = []
    for path in sources("spatialprobe"):
        name = path.relative_to(ROOT)
        calls = require_calls(path)
        for module, extra, line in calls:
            if distribution(module) not in declared().get(extra, ()):
                problems.append(f"{name}:{line}: require({module!r}, {extra!r}) but the {extra!r} "
                                f"extra does not declare {distribution(module)}")
        extras = {extra for _, extra, _ in calls}
        for module, dist, line, lazy in third_party(path):
            if dist not in optional():
                continue
            if not lazy:
                problems.append(f"{name}:{line}: module-level import of optional {module}")
            if not any(dist in declared()[extra] for extra in extras):
                problems.append(f"{name}:{line}: {module} imported without require(...) naming "
                                f"an extra that declares {dist}")
    assert not problems, "\n".join(problems)


def test_all_is_every_extra_and_every_extra_is_described():
    runtime = {extra for extra in declared() if extra not in ("base", "dev", "all")}
    assert declared()["all"] == frozenset().union(*(declared()[e] for e in runtime))
    assert set(EXTRA_FEATURES) == runtime


def base_closure() -> frozenset[str]:
    """The base requirements and everything they install in turn (no extras)."""
    seen: set[str] = set()
    todo = list(declared()["base"])
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = [Requirement(r) for r in requires(name) or []]
        except PackageNotFoundError:
            continue
        todo.extend(canonicalize_name(r.name) for r in reqs
                    if r.marker is None or r.marker.evaluate({"extra": ""}))
    return frozenset(seen)


PROBED = {"pyarrow"}
"""Optional modules a base dependency probes for itself when present (pandas, which statsmodels and
scikit-learn bring, checks for pyarrow): blocking them with ``sys.modules[name] = None`` breaks that
probe in a way a machine without them never sees, so they are left importable here."""


def blocked_modules() -> list[str]:
    """Top-level modules of the distributions that only an extra brings."""
    absent = optional() - base_closure()
    return sorted(m for m, dists in module_distributions().items()
                  if any(canonicalize_name(d) in absent for d in dists) and m.isidentifier() and m not in PROBED)


def run_cli(args: list[str], block: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """``spatialprobe ARGS`` in a fresh interpreter where the ``block`` modules cannot be imported."""
    code = ("import sys\n"
            f"for name in {block!r}: sys.modules[name] = None\n"
            f"sys.argv = ['spatialprobe'] + {args!r}\n"
            "from spatialprobe.cli import main\n"
            "main()\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env=_env(), timeout=300)


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def test_importing_the_cli_loads_no_optional_dependency():
    code = "import json, sys\nimport spatialprobe.cli\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(),
                          check=True, timeout=120)
    loaded = {distribution(m) for m in json.loads(done.stdout)} - {None}
    assert not loaded & optional()


def test_the_main_job_runs_with_base_dependencies_only(tmp_path):
    block = blocked_modules()
    assert {"diffusers", "ray", "nltk", "accelerate", "conceptnet_lite", "ahocorasick"} <= set(block)
    done = run_cli(["probe", "size", "--model", "dummy", "--out", "run"], block, tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["task"] == "size"


@pytest.mark.parametrize("args, module, extra", [
    (["synthesize", "--prompts", "posrel", "--backend", "diffusers", "--model", "m", "--out", "o"],
     "diffusers", "synthesis"),
    (["vsr-train", "--data", "d", "--images", "i", "--out", "o"], "accelerate", "vl"),
    (["generalize", "--source", "posrel", "--wordnet", "auto", "--out", "g.jsonl"], "nltk", "generalize"),
])
def test_a_missing_extra_is_one_sentence_naming_it(args, module, extra, tmp_path):
    done = run_cli(args, [module], tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert f"needs the '{extra}' extra: pip install 'spatialprobe[{extra}]' (missing module: {module})" \
        in lines[0]


def test_require_returns_the_module_or_names_the_extra(tmp_path, monkeypatch):
    assert require("json", "vl") is json
    with pytest.raises(MissingExtra) as caught:
        require("no_such_module_for_spatialprobe", "judge", "The page")
    assert str(caught.value) == ("The page needs the 'judge' extra: pip install 'spatialprobe[judge]' "
                                 "(missing module: no_such_module_for_spatialprobe)")
    # A package that is there but broken keeps its own error: installing the extra would not help.
    (tmp_path / "half_installed.py").write_text("import no_such_dependency_of_it\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as broken:
        require("half_installed", "vl")
    assert not isinstance(broken.value, MissingExtra)
    assert broken.value.name == "no_such_dependency_of_it"
