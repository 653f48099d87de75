"""``spatialprobe probe | consistency | runs | report``: masked-LM probing and what reads it."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from spatialprobe.commands.errors import fail, require_out_dir


def _load_dataset(task: str, data: Path | None, pairs: Path | None, first: str | None,
                  second: str | None, answer: str | None, delimiter: str | None):
    """(dataset, source) for --data, --pairs or the built-in set; pair options need --pairs."""
    from spatialprobe import datasets
    from spatialprobe.datasets import sources

    if data and pairs:
        fail("give either --data (release format) or --pairs (comparison pairs), not both.")
    given = [name for name, value in (("--first", first), ("--second", second), ("--answer", answer),
                                      ("--delimiter", delimiter)) if value is not None]
    if given and not pairs:
        fail(f"{', '.join(given)} name columns of a --pairs file; without --pairs they do not apply.")
    if pairs:
        first, second, answer = first or "obj_a", second or "obj_b", answer or "label"
        return (datasets.load_pairs(pairs, task, first=first, second=second, answer=answer,
                                    delimiter=delimiter),
                sources.pairs_source(pairs, first, second, answer, delimiter))
    if data:
        return datasets.load_release(data, task=task), sources.release_source(data)
    return datasets.load(task), sources.builtin_source(task)


def check_folds(dataset, folds: int) -> None:
    """``--folds`` against the dataset before anything is scored: each fold needs an object."""
    objects = {key for inst in dataset.instances for key in inst.fold_keys}
    if folds > len(objects):
        fail(f"--folds {folds} is more than the {len(objects)} objects of {dataset.name}: each "
             f"object-disjoint fold needs at least one; use --folds {len(objects)} or fewer.")


def probe(
    task: str = typer.Argument(..., help="A task (spatialprobe ls): size, height, posrel, ..."),
    model: str = typer.Option(..., "--model", "-m",
                              help="Masked or causal LM id or local directory; 'dummy' = untrained smoke scorer."),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="Run directory (default runs/TASK-MODEL). An existing run resumes."),
    data: Path | None = typer.Option(None, "--data",
                                     help="Release-format JSON lines file instead of the built-in set."),
    pairs: Path | None = typer.Option(None, "--pairs", help="CSV/TSV/JSONL of object pairs (size/height)."),
    first: str | None = typer.Option(None, help="--pairs: column of the first object [obj_a]."),
    second: str | None = typer.Option(None, help="--pairs: column of the second object [obj_b]."),
    answer: str | None = typer.Option(
        None, help="--pairs: column saying whether the first is larger/taller [label]."),
    delimiter: str | None = typer.Option(None, help="--pairs: CSV delimiter (default by suffix)."),
    candidates: str = typer.Option("builtin", "--candidates",
                                   help="'builtin', 'manual' (hand-written prompt only) or a candidates JSON file."),
    folds: int = typer.Option(5, min=2, help="Object-disjoint folds."),
    seed: int = typer.Option(0, help="Seed of the fold assignment."),
    device: str = typer.Option("auto", help="auto, cpu or cuda (half precision on cuda)."),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Sequences per forward pass."),
    scorer: str = typer.Option(
        "auto", help="auto (from the checkpoint's config), hf-mlm, hf-causal, vilt or dummy (spatialprobe ls)."),
    scorer_arg: list[str] = typer.Option(
        [], "--scorer-arg", help="KEY=VALUE: an option the scorer declares (spatialprobe ls; e.g. "
        "normalize=char for hf-causal, image=RUN for vilt); repeatable."),
    image: str | None = typer.Option(
        None, help="= --scorer-arg image=...: vilt's 'blank' gray image [default], or a synthesis run directory."),
    normalize: str | None = typer.Option(
        None, help="= --scorer-arg normalize=...: hf-causal's sum [default], token or char."),
    format: str = typer.Option(
        "plain", "--format", help="plain (cloze sentences) or chat (hf-causal: the task's question in the "
        "tokenizer's chat template, the options scored as the reply)."),
) -> None:
    """Probe a masked or causal LM: best prompt per dev fold, accuracy and macro-F1 on object-disjoint test folds."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from spatialprobe import tasks
    from spatialprobe.datasets import DataError
    from spatialprobe.probing.run import ProbeSettings, run_probe
    from spatialprobe.prompts.templates import resolve
    from spatialprobe.reports.tables import probe_table
    from spatialprobe.scorers import chat
    from spatialprobe.scorers.masked_lm import ModelLoadError
    from spatialprobe.scorers.options import parse_pairs

    if task not in tasks.names():
        fail(f"unknown task {task!r}; choose from {', '.join(tasks.names())}.")
    try:
        scorer_args = parse_pairs(scorer_arg)
    except ValueError as err:
        fail(str(err))
    format = scorer_args.pop("format", format)  # the run asks the chat question: a setting of its own
    if format not in ("plain", "chat"):
        fail(f"--format must be plain or chat, not {format!r}.")
    if format == "chat" and candidates != "builtin":
        fail("--candidates does not apply to --format chat: it asks each task's own question "
             "(see the README, 'Causal and instruction-tuned LMs').")
    try:
        dataset, source = _load_dataset(task, data, pairs, first, second, answer, delimiter)
        cands = chat.candidates(task) if format == "chat" else resolve(candidates, task)
    except (DataError, ValueError) as err:
        fail(str(err))
    check_folds(dataset, folds)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model.strip("/").split("/")[-1])
    out = out or Path("runs") / f"{task}-{slug}"
    require_out_dir(out)
    settings = ProbeSettings(model=model, folds=folds, seed=seed, device=device, batch_size=batch_size,
                             scorer=scorer, image=image, normalize=normalize, format=format,
                             scorer_args=scorer_args)
    console = Console(stderr=True)
    if model == "dummy":
        console.print("[yellow]--model dummy is an UNTRAINED smoke scorer: its numbers mean nothing.[/]")
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console) as bar:
        job = bar.add_task(f"loading {model}", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(job, completed=done, total=total, description=f"scoring {task} prompts")

        try:
            summary = run_probe(dataset, cands, settings, out, on_progress=progress, source=source)
        except (ModelLoadError, DataError, ValueError, RuntimeError, KeyError) as err:
            fail(str(err))
    choice = summary["details"].get("scorer_choice") or {}
    if scorer == "auto" and choice:
        console.print(f"--scorer auto chose {choice['scorer']}: {choice['reason']}.")
    typer.echo(probe_table(summary))
    typer.echo(f"Run written to {out}")


def consistency(
    run: Path = typer.Argument(..., help="A probe run directory."),
    plot: bool = typer.Option(True, help="Write the per-object chart consistency_objects.png."),
) -> None:
    """Symmetry and transitivity of a size/height run's predictions, and a per-object chart."""
    from spatialprobe.reports.consistency import consistency_report

    try:
        result = consistency_report(run, plot=plot)
    except (FileNotFoundError, ValueError) as err:
        fail(str(err))
    typer.echo(f"symmetry {_share(result, 'symmetry')} over {result['symmetry_pairs']} pairs; "
               f"transitivity {_share(result, 'transitivity')} over {result['transitivity_triples']} triples")
    info = result["intervals"]
    typer.echo(f"[low, high]: 95 % intervals, {info['method']}, {info['resamples']} resamples, seed {info['seed']}")
    typer.echo(f"written to {run / 'consistency.json'}")


def _share(result: dict, name: str) -> str:
    """``87.5% [80.1, 93.0]``; ``–`` where nothing was measured (no pair asked in both orders)."""
    value, ci = result[name], result.get(f"{name}_ci")
    if value is None:
        return "–"
    return f"{value:.1f}% [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else f"{value:.1f}%"


def runs() -> None:
    """List the runs in the index ($SPATIALPROBE_HOME/index.sqlite)."""
    from rich.console import Console
    from rich.table import Table

    from spatialprobe.store import home, list_runs

    table = Table("created", "kind", "task", "model", "dataset", "accuracy", "macro-F1", "path",
                  title=f"runs indexed in {home() / 'index.sqlite'}")
    for r in list_runs():
        table.add_row(r["created"], r["kind"], r["task"] or "", r["model"] or "", r["dataset"] or "",
                      "" if r["accuracy"] is None else f"{r['accuracy']:.1f}",
                      "" if r["macro_f1"] is None else f"{r['macro_f1']:.1f}", r["path"])
    Console(width=200).print(table)


def report(
    run_dirs: list[Path] = typer.Argument(None, help="Run directories; default: every indexed run."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Also write the table to this markdown file."),
    resamples: int = typer.Option(1000, min=100,
                                  help="Two runs: bootstrap resamples and permutations of the paired test."),
    seed: int = typer.Option(0, help="Two runs: seed of the paired test's resampling."),
) -> None:
    """Put runs side by side (models as rows; tasks' accuracy and macro-F1 with 95 % intervals as
    columns); for exactly two runs on the same items, add their paired difference and test."""
    from spatialprobe.files import atomic_write_text, read_json
    from spatialprobe.reports.tables import comparison_table, provenance_line
    from spatialprobe.store import list_runs

    paths = list(run_dirs or [Path(r["path"]) for r in list_runs()])
    summaries = []
    for path in paths:
        file = Path(path) / "summary.json"
        if not file.exists():
            fail(f"{path} has no summary.json: not a finished run.")
        summaries.append(read_json(file))
    if not summaries:
        fail("no runs to report; pass run directories or run `spatialprobe probe` first.")
    two = bool(run_dirs) and len(paths) == 2
    same_task = two and summaries[0].get("task") == summaries[1].get("task")  # else rows do not collide
    text = comparison_table(summaries, labels=["A", "B"] if same_task else None)
    if two:
        text += _paired(paths, summaries, resamples, seed)
    sources = "\n".join(f"- `{p}`: {provenance_line(s)}" for p, s in zip(paths, summaries, strict=True))
    typer.echo(text)
    if out:
        atomic_write_text(out, f"{text}\nRuns:\n{sources}\n")


def _paired(paths: list[Path], summaries: list[dict], resamples: int, seed: int) -> str:
    """The paired section of ``report A B``, or a note saying why the two runs cannot be paired."""
    from spatialprobe.files import read_jsonl
    from spatialprobe.metrics.paired import paired_differences, resampling_of, unpaired_reason
    from spatialprobe.reports.tables import paired_table, unpaired_note

    names = [f"`{p}` ({s.get('model')})" for p, s in zip(paths, summaries, strict=True)]
    rows = [read_jsonl(Path(p) / "predictions.jsonl") if (Path(p) / "predictions.jsonl").exists() else []
            for p in paths]
    specs = [resampling_of(s, r) for s, r in zip(summaries, rows, strict=True)]
    reason = None
    if specs[0].key != specs[1].key:
        reason = (f"A's predictions are one per ({', '.join(specs[0].key)}) and B's one per "
                  f"({', '.join(specs[1].key)}): runs of different kinds ({summaries[0].get('kind')}, "
                  f"{summaries[1].get('kind')}) do not predict the same rows")
    reason = reason or unpaired_reason(summaries[0], rows[0], summaries[1], rows[1], specs[0])
    if reason is None and specs[0] != specs[1]:
        reason = "their runs resample different clusters or labels"
    if reason is not None:
        return unpaired_note(names[0], names[1], reason)
    differences = paired_differences(rows[0], rows[1], specs[0], resamples, seed)
    method = specs[0].describe(resamples, seed)["method"]
    return paired_table(names[0], names[1], differences, resamples, seed, method)


def register(app: typer.Typer) -> None:
    app.command("probe")(probe)
    app.command("consistency")(consistency)
    app.command("runs")(runs)
    app.command("report")(report)
