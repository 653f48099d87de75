"""What the commands that read an image run share (``judge``, ``visor``, ``annotate``, and the
VQA judge's): the ``--partial``/``--skip-missing`` options, the image-run check, component specs
from ``--X-model``/``--X-arg``, and the run of a judge kind with its progress bar and table."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from spatialprobe.commands.console import warn
from spatialprobe.errors import UsageError

PARTIAL = typer.Option(False, "--partial", help="Read an unfinished image run (fewer images than prompts x "
                       "images per prompt, or still being written); recorded in the run and its table.")
SKIP_MISSING = typer.Option(False, "--skip-missing", help="Leave out images whose file is gone "
                            "(counted and recorded in the run); else refused, naming them.")


def require_image_run(run: Path) -> Path:
    """Refuse a path that holds no image run (ImageStore would create an empty one)."""
    if not (run / "run.sqlite").exists():
        raise UsageError(f"{run} is not an image run (no run.sqlite); give the directory "
                         "written by spatialprobe synthesize.")
    return run


def parse_args(pairs: list[str] | None) -> dict[str, Any]:
    """``key=value`` pairs; values are read as JSON when they parse, else kept as strings."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"expected key=value, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def component_spec(name: str, model: str | None, extra: list[str] | None, **more: Any) -> Any:
    """The registry spec of a component from its command options (``None`` options left out)."""
    from spatialprobe.registry import Spec

    args = {k: v for k, v in more.items() if v is not None}
    if model:  # a local directory is recorded absolute, so the run's config names it anywhere
        args["model"] = str(Path(model).resolve()) if Path(model).exists() else model
    args.update(parse_args(extra))
    return Spec(name, args)


def execute_judging(make_kind: Callable[[], Any], target: Any, task: str,
                    verb: str = "judging") -> tuple[dict, Path]:
    """Build a judge kind (``make_kind()``), name the prompts it leaves out, run it with a
    progress bar and print its table: (summary, run folder)."""
    from rich.progress import Progress

    from spatialprobe.judging.judged_images import unscorable_note
    from spatialprobe.reports.tables import print_table
    from spatialprobe.runner import execute

    with Progress(transient=True) as bar:
        kind = make_kind()
        if kind.unscorable:  # never a silent skip: name the prompts left out, and why
            warn(unscorable_note(kind.unscorable, task))
        job = bar.add_task(f"{verb} {task}", total=len(kind.images))
        summary = execute(kind, target, lambda done, total: bar.update(job, completed=done, total=total))
    out = Path(target)
    warn_skipped(summary["details"], "judged")
    print_table((out / "table.md").read_text(encoding="utf-8"))
    return summary, out


def warn_skipped(details: dict, verb: str) -> None:
    """Never a silent skip: deleted image files skipped (--skip-missing) and a partial image run."""
    missing = details.get("missing_images")
    if missing:
        warn(f"{missing['note']}; {verb} the rest (--skip-missing, recorded in summary.json).")
    image_run = details.get("image_run") or {}
    if image_run.get("partial"):
        warn(f"the image run is unfinished: {verb} {image_run['images']:,} of its {image_run['expected']:,} "
             "images (--partial, recorded in summary.json).")
