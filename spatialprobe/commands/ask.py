"""The options of the commands that ask a source's items of a model (``vsr``, ``spatialmqa``,
``qa text|image``, and ``probe`` with a model asked the task's question), and the one way they
run it: build the ask run's settings (:mod:`spatialprobe.benchmarks.asking`), execute, print.
The model adapter is chosen from the checkpoint's configuration by the adapters' declarations."""

from __future__ import annotations

import os
from typing import Any

import typer

from spatialprobe.commands.errors import refusals, warn

ProtocolOption = typer.Option(None, "--protocol", help="likelihood (score each option), generate (parse the "
                              "reply) or both \\[likelihood]; the model adapter must answer them.")
ImageConditionOption = typer.Option(None, "--image-condition", help="real (the item's image), blank, none "
                                    "(text only) or shuffled (another item's image) \\[real where items have images].")
BlindOption = typer.Option(False, "--blind", help="Also ask every item under the blank, none and shuffled "
                           "conditions and report the vision gain (real − blind).")
MaxNewTokensOption = typer.Option(None, "--max-new-tokens", min=1, help="Generate protocol: at most this many "
                                  "tokens per reply [16].")
ScorerArgOption = typer.Option([], "--scorer-arg", help="KEY=VALUE: an option of the model adapter "
                               "(spatialprobe ls); repeatable.")
SeedOption = typer.Option(0, "--seed", help="Seed of the shuffled-image condition.")
ItemsOption = typer.Option(None, "--items", help="Ask only the items a subset file keeps (spatialprobe audit "
                           "blind --debias); the file's hash is part of the run's identity.")
BackendOption = typer.Option(None, "--backend", "--scorer", help="The model adapter, among those that accept "
                             "the checkpoint's config.json and understand the items (spatialprobe ls) \\[the first].")


def progress_bar(label: str):
    """A rich progress display fed by the run spine's progress(done, total)."""
    from rich.progress import MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(SpinnerColumn(), TextColumn(label), MofNCompleteColumn(), TimeElapsedColumn(),
                   transient=True)
    task = bar.add_task(label, total=None)
    return bar, lambda done, total: bar.update(task, completed=done, total=total)


def ask_and_print(source: Any, model: str, given: Any, out: Any, label: str, command: str) -> dict[str, Any]:
    """Ask the source's items (refusals in one sentence, before anything is written), print the
    table; the run's summary."""
    from spatialprobe.benchmarks.asking import run_ask
    from spatialprobe.benchmarks.question_free import warning as question_free_warning

    bar, advance = progress_bar(label)
    with refusals(), bar:
        kind, summary = run_ask(source, model, given, out, command, advance)
    typer.echo(kind.table(summary))
    unasked = question_free_warning((summary.get("details") or {}).get("question_free"))
    if unasked:
        warn(unasked)
    typer.echo(f"Run written to {os.fspath(out)}")
    return summary
