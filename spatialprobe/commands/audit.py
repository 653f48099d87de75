"""``spatialprobe audit blind BENCHMARK|RUN`` (what a benchmark's questions give away without the
image, :mod:`spatialprobe.audit.blind`), ``spatialprobe audit parse RUN`` (how much of a run's
score is its answer parser's, :mod:`spatialprobe.audit.parse`) and ``spatialprobe audit data``
(the test set's own quality, :mod:`spatialprobe.commands.audit_data`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from spatialprobe.commands.audit_data import data_command
from spatialprobe.commands.audit_sources import benchmark
from spatialprobe.commands.declared import MODULE_OPTIONS, command_group, take_options
from spatialprobe.errors import UsageError

audit_app = command_group("Audit a benchmark (blind solvability, a debiased subset) or a run (answer "
                          "extraction).")

SOURCES = ("size", "height", "posrel", "vsr", "spatialmqa", "qa")
__all__ = ["SOURCES", "audit_app", "benchmark", "blind_table", "register"]


def blind_table(found: dict[str, Any]) -> str:
    """The audit as a markdown table: chance, each prior and classifier, the guard, the vision gap."""
    def cell(entry: dict[str, Any]) -> str:
        ci = entry.get("ci")
        return f"{entry['accuracy']:.1f}" + (f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else " [–]")

    lines = [f"Blind audit of {found['dataset']}: {found['n']:,} items, {found['folds']} folds grouped by "
             f"{found['grouped_by']} (seed {found['seed']}).", "",
             "| blind predictor | accuracy [95 % interval] |", "|---|---|", f"| chance | {found['chance']:.1f} |"]
    lines += [f"| prior: {name} (training folds) | {cell(v)} |" for name, v in found["priors"].items()]
    lines += [f"| prior: {name} (training split) | {cell(v)} |"
              for name, v in found["priors_from_training_split"].items()]
    names = {"logistic": "logistic regression", "forest": "random forest"}
    lines += [f"| text-only {names[name]} | {cell(v)} |" for name, v in found["classifiers"].items()]
    guard = found["guard"]
    lines.append(f"| permutation guard ({names[guard['classifier']]}) | {cell(guard)}, "
                 f"{'passed' if guard['passed'] else 'FAILED'} (p above chance {guard['p_above_chance']:.2g}) |")
    if found.get("vision"):
        v = found["vision"]
        ci = v["ci"]
        label = v.get("label", "the run with its images")
        lines.append(f"| {label} − blind | {v['accuracy']:.1f} − {v['blind']:.1f} = "
                     f"{v['difference']:+.1f}" + (f" [{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else " [–]") + " |")
    top = found["importances"][found["bias_classifier"]][:5]
    lines += ["", f"Top features ({names[found['bias_classifier']]}): "
              + "; ".join(f"{name} ({value:+.3g})" for name, value in top)]
    return "\n".join(lines) + "\n"


@audit_app.command("blind")
@take_options(MODULE_OPTIONS)
def blind(
    *,
    target: str = typer.Argument(..., help="A benchmark (size, height, posrel, vsr, spatialmqa, qa, or a benchmark "
                                 "module: whatsup, cv-bench, ...) or a run folder, asked or imported (its source "
                                 "replayed or its items as the log kept them, its accuracy compared)."),
    data: Path | None = typer.Option(None, "--data", help="The benchmark's data: the VSR or SpatialMQA folder, "
                                     "a task's release-format file, a QA file, a benchmark module's local copy."),
    split: str | None = typer.Option(None, "--split", help="VSR: random or zeroshot; a benchmark module: the "
                                     "split of a `datasets` copy or Parquet folder \\[default: VSR's random]."),
    subset: str | None, limit: int | None, option: list[str],  # declared in MODULE_OPTIONS
    part: str = typer.Option("test", "--part", help="VSR, SpatialMQA: the part audited (train, dev or test)."),
    task: str | None = typer.Option(None, "--task", help="qa: the task whose questions are audited."),
    items: Path | None = typer.Option(None, "--items", help="Audit only a subset file's items."),
    folds: int = typer.Option(5, "--folds", min=2, help="Cross-validation folds, grouped by the cluster unit."),
    seed: int = typer.Option(0, "--seed", help="Seed of the folds and the random forest."),
    out: Path | None = typer.Option(None, "--out", help="Write the audit as JSON here (with every item's bias score)."),
    debias: Path | None = typer.Option(None, "--debias", help="Write a debiased subset file here (a folder: "
                                       "subset-HASH.json inside), usable as --items in a run: the items with the "
                                       "highest bias score (logistic regression, refitted each round) pruned."),
    step: float = typer.Option(0.05, "--step", min=0.001, max=1.0,
                               help="--debias: share of the items pruned per round."),
    max_pruned: float = typer.Option(0.3, "--max-pruned", min=0.0, max=1.0,
                                     help="--debias: at most this share pruned."),
) -> None:
    """How much of a benchmark its questions give away without the image: prior baselines and
    text-only classifiers over folds grouped by its cluster unit, with a label-permutation guard."""
    from spatialprobe.audit.blind import audit_source

    path = Path(target)
    rows = None
    if (path / "config.json").is_file():
        if data is not None or task is not None or split is not None or (subset, limit, option) != (None, None, []):
            raise UsageError("--data, --task, --split, --subset, --limit and --option name a benchmark; a run "
                             "folder's source is its own.")
        from spatialprobe.audit.run_rows import run_config, run_source

        source, rows = run_source(path)
        if debias is not None and source.name == "imported":
            raise UsageError(f"--debias writes a subset that a run asks again, and no source here asks the items "
                             f"of {path}: import it joined to its benchmark (--source), or audit the benchmark.")
        train: tuple[Any, ...] = ()
    else:
        source, train = benchmark(target, data, split, part, task, (subset, limit, option))
    if items is not None:
        from spatialprobe.engine.rebuild import restrict

        source = restrict(source, items)
    found = audit_source(source, folds, seed, train, rows).to_dict()
    if rows is not None and run_config(path).get("kind") == "imported":
        found["vision"]["label"] = "the imported run (the harness's verdicts)"
    typer.echo(blind_table(found))
    if out is not None:
        out.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
        typer.echo(f"Audit written to {out}")
    if debias is not None:
        from spatialprobe.audit.debias import debiased_subset

        written, pruning = debiased_subset(source, debias, "logistic", folds, seed, step, max_pruned)
        last = pruning["rounds"][-1]
        typer.echo(f"Debiased subset: {last['items']:,} of {len(source.items):,} items kept after "
                   f"{len(pruning['rounds']) - 1} round(s), blind accuracy {last['blind_accuracy']:.1f} "
                   f"(chance {last['chance']:.1f}); written to {written} (use it as --items).")


@audit_app.command("parse")
def parse(
    run: Path = typer.Argument(..., help="A run folder whose rows hold generated replies."),
    out: Path | None = typer.Option(None, "--out", help="Write the audit as JSON here."),
) -> None:
    """Every answer extractor the toolkit has, applied to a run's stored replies: each one's
    unparsed rate and accuracy, the items whose correctness flips, and the range of scores with a
    paired interval."""
    from spatialprobe.audit.parse import audit_run, parse_table

    found = audit_run(run)
    typer.echo(parse_table(found))
    if out is not None:
        out.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
        typer.echo(f"Audit written to {out}")


def register(app: typer.Typer) -> None:
    audit_app.command("data")(data_command)
    app.add_typer(audit_app, name="audit")
