"""``spatialprobe run CONFIG.json``: run again whatever a run's ``config.json`` describes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from spatialprobe.commands.model_options import DeviceMapOption, MaxMemoryOption, device_map_settings
from spatialprobe.commands.scale_options import scale_options
from spatialprobe.errors import SpatialprobeError, UsageError


def run(
    config: Path = typer.Argument(..., help="A run's config.json (or its directory)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory \\[default: the config's own]."),
    device: str | None = typer.Option(None, help="Runtime override: auto, cpu or cuda."),
    batch_size: int | None = typer.Option(None, "--batch-size", min=1, help="Runtime override."),
    device_map: str | None = DeviceMapOption,
    max_memory: list[str] = MaxMemoryOption,
) -> None:
    """Replay a run from its config.json: the same identity resumes or confirms it (a finished
    run is read, not rewritten); elsewhere (another --out, another machine) it reproduces it.
    Only runtime settings may be overridden; a config field the run cannot honour is refused,
    and inputs (models, files) changed since the run make a new run only in a new --out.
    It computes here unless --ray is given (the Ray address a run recorded may be gone)."""
    from spatialprobe.commands.output_checks import require_run_dir
    from spatialprobe.fingerprints import hub_settings_of
    from spatialprobe.loading import hub_settings
    from spatialprobe.runner import RunSpec
    from spatialprobe.runner.scale import SCALE_KEYS, ambient
    from spatialprobe.validate import read_run_config

    path = config / "config.json" if config.is_dir() else config
    require_run_dir(out)
    try:
        data = read_run_config(path)
    except ValueError as err:  # DataError: names the file, line and field
        raise UsageError(str(err)) from None
    spec = RunSpec.from_dict(data)
    spread, memory = device_map_settings(device_map, max_memory)
    given = (("device", device), ("batch_size", batch_size), ("device_map", spread), ("max_memory", memory))
    overrides = {k: v for k, v in given if v is not None}
    unknown = sorted(set(overrides) - set(spec.runtime) - _runtime_fields(spec.kind))
    if unknown:
        raise UsageError(f"a {spec.kind} run has no runtime setting {', '.join(unknown)}.")
    here = {k: v for k, v in spec.runtime.items() if k not in SCALE_KEYS}  # --ray (or not) says where
    spec = RunSpec(spec.kind, spec.settings, {**here, **overrides, **ambient().runtime()}, spec.inputs)
    target = Path(out or path.parent)
    try:
        with hub_settings(*hub_settings_of(spec.inputs)):  # the --revision the run was made with
            summary, changed = _replay(path, data, spec, target)
    except (SpatialprobeError, ValueError) as err:  # a bad config: one sentence
        raise UsageError(str(err)) from None
    typer.echo((target / "table.md").read_text(encoding="utf-8"))
    if changed:
        typer.echo(f"new run of changed inputs ({'; '.join(changed)}): identity {summary['identity'][:12]}")
        return
    same = summary["identity"] == data.get("identity")
    typer.echo(f"{'confirmed' if same else 'new run'}: identity {summary['identity'][:12]}")


def _runtime_fields(kind: str) -> set[str]:
    """The runtime settings a kind takes though its config may not record them (``device_map``
    and ``max_memory`` are recorded only when given)."""
    from dataclasses import fields

    from spatialprobe import registry
    from spatialprobe.runner import RUNTIME_KEYS

    return {f.name for f in fields(registry.lookup("run-kind", kind).Settings)} & set(RUNTIME_KEYS)


def _replay(config: Path, data: dict[str, Any], spec: Any, target: Path) -> tuple[dict[str, Any], list[str]]:
    """(summary, inputs changed) of the replayed run (a finished run of the same identity in
    its own folder is confirmed by the spine, which then writes nothing)."""
    from spatialprobe import registry
    from spatialprobe.runner import execute
    from spatialprobe.runner.replay import check_replay

    kind = registry.lookup("run-kind", spec.kind).from_spec(spec, config)  # checked key by key
    if kind.migration is not None:  # a retired kind's folder, read as an ask run
        from spatialprobe.engine.legacy import check

        check(config, data, kind.spec(), target)
        typer.echo(f"migrated: a {spec.kind} run (identity {spec.identity[:12]}) read as an ask run")
        return execute(kind, target), []
    changed = check_replay(config, data, kind.spec(), target)
    # the spine writes the kind's extra files (gallery, detections.json, plots) on replay too
    return execute(kind, target), changed


def register(app: typer.Typer) -> None:
    app.command("run")(scale_options(run))
