"""``spatialprobe probe | consistency | runs | report``: masked-LM probing and what reads it."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from spatialprobe.commands.console import warn
from spatialprobe.commands.engine_options import (
    ApiKeyEnvOption,
    BaseUrlOption,
    BlindOption,
    ImageConditionOption,
    MaxNewTokensOption,
    ProtocolOption,
    SamplesOption,
    TemperatureOption,
)
from spatialprobe.commands.hub import hub_model_options
from spatialprobe.commands.model_options import DeviceMapOption, MaxMemoryOption, device_map_settings
from spatialprobe.commands.output_checks import require_out_file, require_run_dir
from spatialprobe.commands.scale_options import scale_options
from spatialprobe.errors import SpatialprobeError, UsageError


def check_folds(dataset, folds: int, seed: int = 0, allow_duplicates: bool = False) -> None:
    """``--folds`` against the dataset before anything is scored; repeated pairs kept and
    instances that no fold tests are said (:func:`spatialprobe.tasks.probe_data.data_notes`)."""
    from spatialprobe.commands.console import warn
    from spatialprobe.tasks.probe_data import data_notes

    for note in data_notes(dataset, folds, seed, allow_duplicates):
        warn(note)


def probe(
    task: str = typer.Argument(..., help="A task (spatialprobe ls): size, height, posrel, ..."),
    model: str = typer.Option(..., "--model", "-m",
                              help="Checkpoint id or local directory (any adapter family, spatialprobe ls); "
                              "'dummy' = untrained smoke scorer."),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="Run directory \\[default: runs/probe-TASK-MODEL-ID, ID: the run's identity]. "
                                    "An existing run of the same settings resumes."),
    data: Path | None = typer.Option(None, "--data",
                                     help="Release-format JSON lines file instead of the built-in set."),
    pairs: Path | None = typer.Option(None, "--pairs", help="CSV/TSV/JSONL of object pairs (size/height)."),
    first: str | None = typer.Option(None, help="--pairs: column of the first object \\[default: obj_a]."),
    second: str | None = typer.Option(None, help="--pairs: column of the second object \\[default: obj_b]."),
    answer: str | None = typer.Option(
        None, help="--pairs: column saying whether the first is larger/taller \\[default: label]."),
    delimiter: str | None = typer.Option(None, help="--pairs: CSV delimiter \\[default: by suffix]."),
    allow_duplicates: bool = typer.Option(False, "--allow-duplicates",
                                          help="--pairs: keep repeated rows (counted) instead of refusing them."),
    candidates: str = typer.Option("builtin", "--candidates",
                                   help="'builtin', 'manual' (hand-written prompt only) or a candidates JSON file."),
    folds: int = typer.Option(5, min=2, help="Object-disjoint folds."),
    seed: int = typer.Option(0, help="Seed of the fold assignment."),
    device: str = typer.Option("auto", help="auto, cpu or cuda (half precision on cuda)."),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Sequences per forward pass."),
    scorer: str = typer.Option(
        "auto", "--scorer", "--backend",
        help="auto (from the checkpoint's config), hf-mlm, hf-causal, vilt, hf-mllm, openai-api or dummy "
        "(spatialprobe ls), taken by name."),
    scorer_arg: list[str] = typer.Option(
        [], "--scorer-arg", help="KEY=VALUE: an option the scorer declares (spatialprobe ls; e.g. "
        "normalize=char for hf-causal, image=RUN for vilt); repeatable."),
    image: str | None = typer.Option(
        None, help="= --scorer-arg image=...: vilt's 'blank' gray image or a synthesis run directory; a "
        "multimodal LLM: none, blank or a synthesis run holding an image of each instance \\[default: vilt "
        "blank, a multimodal LLM none]."),
    normalize: str | None = typer.Option(
        None, help="= --scorer-arg normalize=...: hf-causal's sum, token or char \\[default: sum]."),
    format: str = typer.Option(
        "plain", "--format", help="plain (cloze sentences) or chat (hf-causal: the task's question in the "
        "tokenizer's chat template, the options scored as the reply)."),
    protocol: str | None = ProtocolOption,
    image_condition: str | None = ImageConditionOption,
    blind: bool = BlindOption,
    max_new_tokens: int | None = MaxNewTokensOption,
    samples: int = SamplesOption,
    temperature: float | None = TemperatureOption,
    device_map: str | None = DeviceMapOption,
    max_memory: list[str] = MaxMemoryOption,
    base_url: str | None = BaseUrlOption,
    api_key_env: str | None = ApiKeyEnvOption,
) -> None:
    """Probe any model whose adapter asks the object pairs (spatialprobe ls): a masked, causal or seq2seq LM, a
    vision-language model or a multimodal LLM; best prompt per dev fold, accuracy and macro-F1 on object-disjoint
    test folds."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from spatialprobe import tasks
    from spatialprobe.models import chat
    from spatialprobe.models.options import parse_pairs
    from spatialprobe.probing.run import ProbeSettings, run_probe
    from spatialprobe.prompts.templates import resolve
    from spatialprobe.reports.tables import probe_table
    from spatialprobe.tasks.data import DataError
    from spatialprobe.tasks.probe_data import task_data

    if task not in tasks.names():
        raise UsageError(f"unknown task {task!r}; choose from {', '.join(tasks.names())}.")
    spread = device_map_settings(device_map, max_memory)
    try:
        scorer_args = parse_pairs(scorer_arg)
    except ValueError as err:
        raise UsageError(str(err)) from None
    format = scorer_args.pop("format", format)  # the run asks the chat question: a setting of its own
    if format not in ("plain", "chat"):
        raise UsageError(f"--format must be plain or chat, not {format!r}.")
    if format == "chat" and candidates != "builtin":
        raise UsageError("--candidates does not apply to --format chat: it asks each task's own question "
                         "(see the README, 'Causal and instruction-tuned LMs').")
    try:
        dataset, source = task_data(task, data, pairs, first=first, second=second, answer=answer,
                                    delimiter=delimiter, allow_duplicates=allow_duplicates)
        cands = chat.candidates(task) if format == "chat" else resolve(candidates, task)
    except (DataError, ValueError) as err:
        raise UsageError(str(err)) from None
    try:
        check_folds(dataset, folds, seed, allow_duplicates)
    except ValueError as err:
        raise UsageError(str(err)) from None
    from spatialprobe.runner.folders import DefaultRunDir

    require_run_dir(out)
    target = out or DefaultRunDir(task, model)
    from spatialprobe.models.choice import probe_route

    asked = probe_route(model, scorer)  # an adapter that answers the task's question, else the cloze
    named = [name for name, value in (("--protocol", protocol), ("--image-condition", image_condition),
                                      ("--blind", blind), ("--max-new-tokens", max_new_tokens),
                                      ("--samples", samples > 1), ("--temperature", temperature is not None)) if value]
    server = {"base_url": base_url, "api_key_env": api_key_env}
    given = [flag for flag, value in (("--base-url", base_url), ("--api-key-env", api_key_env)) if value]
    if given and not asked:
        raise UsageError(f"{given[0]} applies to a model behind a server, asked the task's question (--backend "
                         f"openai-api); the {scorer} scorer runs {model!r} in this process.")
    if named and not asked:
        raise UsageError(f"{', '.join(named)} apply to models asked the task's question (a multimodal LLM, a "
                         f"model behind a server); {model!r} is not one.")
    if asked:
        _ask_task(dataset, source, model, scorer_args, image, image_condition, protocol, blind,
                  max_new_tokens, folds, seed, device, batch_size, target,
                  plain=format == "plain" and candidates == "builtin", spread=spread,
                  backend=None if scorer == "auto" else scorer, sampling=(samples, temperature), server=server)
        return
    settings = ProbeSettings(model=model, folds=folds, seed=seed, device=device, batch_size=batch_size,
                             scorer=scorer, image=image, normalize=normalize, format=format,
                             scorer_args=scorer_args, device_map=spread[0], max_memory=spread[1])
    console = Console(stderr=True)
    if model == "dummy":
        console.print("[yellow]--model dummy is an UNTRAINED smoke scorer: its numbers mean nothing.[/]")
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console) as bar:
        job = bar.add_task(f"loading {model}", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(job, completed=done, total=total, description=f"scoring {task} prompts")

        try:
            summary = run_probe(dataset, cands, settings, target, on_progress=progress, source=source)
        except (SpatialprobeError, ValueError) as err:
            raise UsageError(str(err)) from None
    choice = summary["details"].get("scorer_choice") or {}
    if scorer == "auto" and choice:
        console.print(f"--scorer auto chose {choice['scorer']}: {choice['reason']}.")
    typer.echo(probe_table(summary))
    typer.echo(f"Run written to {os.fspath(target)}")


def _ask_task(dataset, source, model, scorer_args, image, condition, protocol, blind, max_new_tokens,
              folds, seed, device, batch_size, target, plain: bool, spread=(None, None), backend=None,
              sampling=(1, None), server=None) -> None:
    """A model that answers questions asked the task's own question (``questions.choice``) over the
    probe's folds, with the instance's image from a synthesis run, a blank image, or none."""
    from spatialprobe.benchmarks.commonsense import task_source
    from spatialprobe.commands.engine_options import ask_and_print
    from spatialprobe.engine.build import AskOptions

    if not plain:
        raise UsageError("--candidates and --format do not apply to a multimodal LLM: it is asked each task's own "
                         "question (the task file's questions.choice).")
    image = image or "none"
    if image in ("none", "blank") and condition not in (None, image):
        raise UsageError(f"--image-condition {condition} needs the instances' images: give --image RUN "
                         "(a synthesis run).")
    condition = condition or (image if image in ("none", "blank") else "real")
    source_ask, _ = task_source(dataset, source, image, folds, seed)
    given = AskOptions(protocol, condition, blind, max_new_tokens, seed, device, batch_size, backend,
                       scorer_args, device_map=spread[0], max_memory=spread[1], samples=sampling[0],
                       temperature=sampling[1], server=server or {})
    ask_and_print(source_ask, model, given, target, f"{dataset.task} questions answered", "probe")


def consistency(
    run: Path = typer.Argument(..., help="A probe run directory."),
    plot: bool = typer.Option(True, help="Write the per-object chart consistency_objects.png."),
) -> None:
    """Symmetry and transitivity of a size/height run's predictions, and a per-object chart."""
    from spatialprobe.reports.consistency_table import consistency_report

    try:
        result = consistency_report(run, plot=plot)
    except (FileNotFoundError, ValueError) as err:
        raise UsageError(str(err)) from None
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


def _run_folders(given: list[Path] | None, default: Path = Path("runs")) -> list[Path]:
    """The folders given, else every indexed run; where the index cannot be read (one warning
    said why), the run folders under ``./runs``."""
    from spatialprobe.store import find_runs, list_runs

    if given:
        return list(given)
    indexed = list_runs()  # None: unreadable, and it said so (once)
    if indexed is None:
        return find_runs([default])
    return [Path(r["path"]) for r in indexed]


def runs(
    run_dirs: list[Path] = typer.Argument(None, help="Folders holding runs \\[default: every indexed run, or the "
                                          "runs under ./runs where the index cannot be read; with --rebuild: ./runs]."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Make the index again from the run folders "
                                 "(config.json and summary.json) at or under RUN_DIRS."),
) -> None:
    """List runs with their settings and coverage (the index, $SPATIALPROBE_HOME/index.sqlite, is a
    cache of the run folders)."""
    from spatialprobe.reports.runs import backend, coverage, load_runs, settings_text
    from spatialprobe.reports.tables import markdown_table
    from spatialprobe.store import find_runs, home, rebuild_index

    folders = find_runs(run_dirs or [Path("runs")]) if rebuild or run_dirs else _run_folders(None)
    found, skipped = load_runs(folders)
    for sentence in skipped:
        warn(sentence)
    if rebuild and rebuild_index((run.path, run.summary) for run in found):
        typer.echo(f"rebuilt {home() / 'index.sqlite'} from {len(found)} run folder(s).")

    def number(run, name: str) -> str:
        value = (run.summary.get(name) or {}).get("mean")
        return "–" if value is None else f"{value:.1f}"

    rows = [[str((r.summary.get("provenance") or {}).get("created", "")), str(r.summary.get("kind")),
             str(r.summary.get("task") or "–"), str(r.summary.get("model")), backend(r), str(r.summary.get("dataset")),
             settings_text(r) or "–", coverage(r.summary), number(r, "accuracy"), number(r, "macro_f1"),
             str(r.path)] for r in found]
    typer.echo(markdown_table(["created", "kind", "task", "model", "backend", "dataset", "settings", "coverage",
                               "accuracy", "macro-F1", "path"], rows))


def report(
    run_dirs: list[Path] = typer.Argument(None, help="Run directories \\[default: every indexed run (the runs "
                                          "under ./runs where the index cannot be read)]."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Also write the table to this markdown file."),
    by: str | None = typer.Option(None, "--by", help="fact: join runs of any kinds on the spatial facts they "
                                  "all state; per relation, which runs get each fact right, with exact McNemar "
                                  "tests between them (docs/compare.md)."),
) -> None:
    """Put runs side by side: one table per benchmark and metric family (kind, task, dataset), one
    row per run labelled by what differs between the runs (model, dataset, every setting, the
    adapter's options too), with 95 % intervals. For exactly two
    runs on the same items, add their paired difference and test. A damaged run is named and
    skipped."""
    from spatialprobe.files import atomic_write_text
    from spatialprobe.reports.paired_report import paired_section
    from spatialprobe.reports.runs import labels, load_runs
    from spatialprobe.reports.tables import comparison_table, provenance_line

    require_out_file(out)
    if by is not None:
        return _by_fact(run_dirs, by, out)
    found, skipped = load_runs(_run_folders(run_dirs))
    for sentence in skipped:
        warn(sentence)
    if not found:
        raise UsageError("no runs to report; pass run directories or run `spatialprobe probe` first.")
    two = bool(run_dirs) and len(found) == 2
    text = comparison_table(found, labels(found, ["A", "B"] if two else None))
    if two:
        text += paired_section([r.path for r in found], [dict(r.summary) for r in found])
    sources = "\n".join(f"- `{r.path}`: {provenance_line(r.summary)}" for r in found)
    typer.echo(text)
    if out:
        atomic_write_text(out, f"{text}\nRuns:\n{sources}\n")


def _by_fact(run_dirs: list[Path] | None, by: str, out: Path | None) -> None:
    """``report --by fact RUN...``: the runs joined on their shared facts (:mod:`spatialprobe.reports.facts`)."""
    import json

    from spatialprobe.files import atomic_write_text
    from spatialprobe.reports.facts import by_fact, fact_table

    if by != "fact":
        raise UsageError(f"--by {by!r} is not a way to join runs; the one there is: fact.")
    result = by_fact(_run_folders(run_dirs))
    text = fact_table(result)
    typer.echo(text)
    if out:  # the table, and the numbers beside it (FILE.json); a .json FILE gets the numbers only
        if out.suffix != ".json":
            atomic_write_text(out, text)
        atomic_write_text(out.with_suffix(".json"), json.dumps(result, indent=2, ensure_ascii=False) + "\n")


def register(app: typer.Typer) -> None:
    app.command("probe")(scale_options(hub_model_options(probe)))
    app.command("consistency")(consistency)
    app.command("runs")(runs)
    app.command("report")(report)
