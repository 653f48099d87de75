"""``spatialprobe prompts ...``: show and generate prompt candidates."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from spatialprobe.commands.declared import command_group
from spatialprobe.commands.hub import hub_model_options
from spatialprobe.commands.output_checks import require_out_file
from spatialprobe.errors import UsageError

prompts_app = command_group("Prompt templates and answer candidates.")


@prompts_app.command("show")
def show(task: str = typer.Argument(..., help="size, height or posrel."),
         candidates: str = typer.Option("builtin", help="'builtin', 'manual' or a candidates file.")) -> None:
    """Print a task's candidates as JSON (the editable file format)."""
    from spatialprobe.prompts.templates import resolve

    typer.echo(json.dumps(resolve(candidates, task).to_dict(), indent=1))


@prompts_app.command("backtranslate")
@hub_model_options
def backtranslate_cmd(
    task: str = typer.Option(..., "--task", help="size, height or posrel."),
    n: int = typer.Option(10, "--n", min=1, help="Candidates to keep for the template and for each answer."),
    forward: str = typer.Option("facebook/wmt19-en-de", help="English->German FSMT model id or path."),
    backward: str = typer.Option("facebook/wmt19-de-en", help="German->English FSMT model id or path."),
    data: Path | None = typer.Option(None, help="Release-format file to take the example from."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write the candidates JSON here."),
    device: str = typer.Option("auto", help="auto, cpu or cuda."),
) -> None:
    """Back-translate (en->de->en, WMT19) the prompt template and answer words into candidates."""
    from spatialprobe.files import write_json
    from spatialprobe.models.masked_lm import ModelLoadError
    from spatialprobe.prompts.backtranslate import FSMTTranslator, backtranslate
    from spatialprobe.store import provenance
    from spatialprobe.tasks import data as task_data

    require_out_file(out)
    try:
        dataset = task_data.load_release(data, task) if data else task_data.load(task)
        result = backtranslate(dataset, FSMTTranslator(forward, device), FSMTTranslator(backward, device), n,
                               source=f"backtranslate:{forward}+{backward}")
    except (ModelLoadError, ValueError) as err:
        raise UsageError(str(err)) from None
    payload = {**result.to_dict(), "provenance": provenance(), "models": [forward, backward], "n": n}
    if out:
        write_json(out, payload)
        typer.echo(f"wrote {len(result.templates)} templates and answers for "
                   f"{', '.join(result.answers)} to {out}")
    else:
        typer.echo(json.dumps(payload, indent=1))


def register(app: typer.Typer) -> None:
    app.add_typer(prompts_app, name="prompts")
