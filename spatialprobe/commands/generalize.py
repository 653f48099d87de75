"""``spatialprobe generalize``: posrel scenarios with uncommon persons and objects."""

from __future__ import annotations

from pathlib import Path

import typer

from spatialprobe.commands.output_checks import require_out_file
from spatialprobe.errors import UsageError


def generalize_command(
    out: Path = typer.Option(..., "--out", help="Release-format JSON lines file to write."),
    source: str = typer.Option("posrel", "--source", help="posrel dataset: built-in name or file."),
    conceptnet: Path | None = typer.Option(
        None, "--conceptnet", help="conceptnet-lite database file (conceptnet.db): IsA subterms."),
    wordnet: str | None = typer.Option(
        None, "--wordnet", help="WordNet hyponyms: a data directory or wordnet.zip, or 'auto' to find nltk's."),
    corpus: list[Path] = typer.Option(
        [], "--corpus", help="Plain-text reference corpus file (repeatable); scenarios in it are dropped."),
    replace: str = typer.Option("both", help="Replace the person, the object, or both."),
    depth: int = typer.Option(1, min=1, help="Levels of subterms to follow (1 = direct)."),
    senses: int = typer.Option(1, min=1, help="WordNet: noun senses of each word to use, most frequent first."),
    max_per_scenario: int = typer.Option(20, min=0, help="Most substitutions kept per source scenario (0 = all)."),
    seed: int = typer.Option(0, help="Seed for sampling substitutions."),
) -> None:
    """Replace persons and objects of posrel scenarios by subterms; drop those the corpus contains."""
    from spatialprobe.generalize.scenarios import generalize
    from spatialprobe.generalize.subterms import ConceptNetSubterms, SubtermSource, WordNetSubterms
    from spatialprobe.tasks import data as task_data

    require_out_file(out)
    if (conceptnet is None) == (wordnet is None):
        raise UsageError("Give exactly one of --conceptnet DB or --wordnet [DIR|auto].")
    terms: SubtermSource
    try:
        if conceptnet is not None:
            terms = ConceptNetSubterms(conceptnet, depth=depth)
        else:
            terms = WordNetSubterms(None if wordnet == "auto" else wordnet, depth=depth, senses=senses)
    except (FileNotFoundError, ImportError, ValueError) as err:
        raise UsageError(str(err)) from None
    if not corpus:
        typer.echo("warning: no --corpus given; no scenario is checked against a reference corpus.",
                   err=True)
    try:
        report = generalize(task_data.load(source, task="posrel"), terms, out, corpus=corpus,
                            replace=replace, max_per_scenario=max_per_scenario or None, seed=seed,
                            show_progress=True)
    except (ValueError, FileNotFoundError) as err:  # DataError is a ValueError
        raise UsageError(str(err)) from None
    typer.echo(f"{report.candidates} generalized scenarios, {report.in_corpus} found in the corpus "
               f"and dropped, {report.kept} written to {report.out}")
    if report.no_subterms:
        typer.echo(f"no subterms for: {', '.join(report.no_subterms)}")


def register(app: typer.Typer) -> None:
    app.command("generalize")(generalize_command)
