"""The blind audit on every lettered benchmark module the test suite can build
(``tests/audit_bench_data.py``: each benchmark's own file layout, 40 items, the gold option's text
always ``left``, the options in a random order): one markdown row per module, as the README's second
blind-audit table shows. It says that ``audit blind`` reads every module text-only and what a planted
shortcut looks like there; it measures nothing about the real benchmarks (run ``audit blind NAME
--data YOUR_COPY`` for that).

    python bench/audit_table.py [--items 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    from audit_bench_data import PLANTED, planted_copy

    from spatialprobe.audit.blind import audit_source
    from spatialprobe.commands.audit import benchmark

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    def cell(entry: dict) -> str:
        ci = entry.get("ci")
        return f"{entry['accuracy']:.1f}" + (f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else " [–]")

    print("| benchmark module (the tests' planted copy) | items | folds grouped by | chance | majority prior | "
          "per-position prior | logistic regression | random forest | guard |")
    print("|---|---:|---|---:|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name in PLANTED:
            path, more = planted_copy(name, Path(folder) / name, args.items, args.seed)
            source, _ = benchmark(name, path, None, "test", None, (more.get("subset"), None, []))
            found = audit_source(source, 5, 0).to_dict()
            priors, names = found["priors"], found["classifiers"]
            print(f"| {name} | {found['n']} | {found['grouped_by']} | {found['chance']:.1f} | "
                  f"{cell(priors['majority'])} | {cell(priors['per position'])} | {cell(names['logistic'])} | "
                  f"{cell(names['forest'])} | {found['guard']['accuracy']:.1f}, "
                  f"{'passed' if found['guard']['passed'] else 'FAILED'} |")


if __name__ == "__main__":
    main()
