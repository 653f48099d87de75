"""The blind audit on every benchmark module, each on the synthetic copy the test suite builds
(``tests/audit_bench_data.py``: each benchmark's own file layout, about 40 items, a known
structure: a planted shortcut, a constant gold or a question that never changes): one markdown
row per module, as the README's second blind-audit table shows. It says that ``audit blind``
reads every module text-only and what a shortcut in such data looks like; it measures nothing
about the real benchmarks (run ``audit blind NAME --data YOUR_COPY`` for that).

    python bench/audit_table.py [--items 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def cell(entry: dict[str, Any]) -> str:
    """An accuracy with its interval."""
    ci = entry.get("ci")
    return f"{entry['accuracy']:.1f}" + (f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else " [–]")


def row(name: str, found: dict[str, Any], why: str) -> str:
    """The markdown row of one module's audit."""
    best = max(found["priors"], key=lambda k: found["priors"][k]["accuracy"])
    models, guard = found["classifiers"], found["guard"]
    return (f"| {name} | {why} | {found['n']} | {found['folds']}, {found['grouped_by']} | {found['chance']:.1f} | "
            f"{best}: {cell(found['priors'][best])} | {cell(models['logistic'])} | {cell(models['forest'])} | "
            f"{guard['accuracy']:.1f}, {'passed' if guard['passed'] else 'FAILED'} |")


def main() -> None:
    from audit_bench_data import MODULES, build
    from typer.testing import CliRunner

    from spatialprobe.cli import app
    from spatialprobe.files import read_json

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print("| benchmark module (the tests' synthetic copy) | what the copy holds | items | folds, grouped by | "
          "chance | best prior (training folds) | logistic regression | random forest | guard |")
    print("|---|---|---:|---|---:|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name in MODULES:
            copy = build(name, Path(folder) / name, args.items, args.seed)
            out = Path(folder) / f"{name}.json"
            result = CliRunner().invoke(app, ["audit", "blind", name, "--data", str(copy.path), "--out", str(out),
                                              *copy.args], env=copy.env)
            if result.exit_code:
                raise SystemExit(f"audit blind {name} failed: {result.output}")
            print(row(name, read_json(out), copy.why))


if __name__ == "__main__":
    main()
