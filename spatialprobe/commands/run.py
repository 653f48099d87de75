"""``spatialprobe run CONFIG.json``: run again whatever a run's ``config.json`` describes."""

from __future__ import annotations

from pathlib import Path

import typer


def run(
    config: Path = typer.Argument(..., help="A run's config.json (or its directory)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory [the config's own]."),
    device: str | None = typer.Option(None, help="Runtime override: auto, cpu or cuda."),
    batch_size: int | None = typer.Option(None, "--batch-size", min=1, help="Runtime override."),
) -> None:
    """Replay a run from its config.json: the same identity resumes or confirms it; elsewhere
    (another --out, another machine) it reproduces it. Only runtime settings may be overridden."""
    from spatialprobe import registry
    from spatialprobe.commands.errors import fail, require_run_dir
    from spatialprobe.runner import RunSpec, execute
    from spatialprobe.validate import read_run_config

    path = config / "config.json" if config.is_dir() else config
    require_run_dir(out)
    try:
        data = read_run_config(path)
    except ValueError as err:  # DataError: names the file, line and field
        fail(str(err))
    spec = RunSpec.from_dict(data)
    overrides = {k: v for k, v in (("device", device), ("batch_size", batch_size)) if v is not None}
    unknown = sorted(set(overrides) - set(spec.runtime))
    if unknown:
        fail(f"a {spec.kind} run has no runtime setting {', '.join(unknown)}.")
    spec = RunSpec(spec.kind, spec.settings, {**spec.runtime, **overrides})
    try:
        kind = registry.lookup("run-kind", spec.kind).from_spec(spec, path)  # checked key by key
        # the spine writes the kind's extra files (gallery, detections.json, plots) on replay too
        summary = execute(kind, out or path.parent)
    except (registry.UnknownComponent, ValueError, KeyError, RuntimeError) as err:
        fail(str(err))
    typer.echo((Path(out or path.parent) / "table.md").read_text(encoding="utf-8"))
    same = summary["identity"] == data.get("identity")
    typer.echo(f"{'confirmed' if same else 'new run'}: identity {summary['identity'][:12]}")


def register(app: typer.Typer) -> None:
    app.command("run")(run)
