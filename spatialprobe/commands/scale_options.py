"""``--ray [ADDRESS]`` and ``--workers N``, declared once for every command that makes a run.

:func:`scale_options` adds both options to a command and runs it under
:func:`spatialprobe.runner.scale.scaled`, so the run the command executes fans its batches out
over Ray (:mod:`spatialprobe.runner.scale`) and records both as runtime: a run begun here
resumes on a cluster and the other way round. ``--ray`` alone starts a Ray cluster on this
machine (:class:`BareRayGroup` reads it as ``--ray local``); ``--workers`` without ``--ray``
is refused. Under ``--ray`` each worker's items per second are logged at INFO on stderr.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
from collections.abc import Callable
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from spatialprobe.commands.hub import with_options

RAY_HELP = ("Fan the run out over Ray workers, one per GPU (else one per CPU): --ray alone "
            "starts a cluster on this machine, --ray ADDRESS joins one (runtime: a run resumes "
            "with or without it).")
WORKERS_HELP = "With --ray: how many workers, at most one per GPU, else per CPU \\[default: that most]."


def scale_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with ``--ray [ADDRESS]`` and ``--workers N`` added to its options."""
    signature = inspect.signature(command)
    added = [
        inspect.Parameter("ray", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],  # noqa: UP045 (typer reads it)
                          default=typer.Option(None, "--ray", help=RAY_HELP)),
        inspect.Parameter("workers", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[int],  # noqa: UP045
                          default=typer.Option(None, "--workers", min=1, help=WORKERS_HELP)),
    ]

    @functools.wraps(command)
    def with_scale_options(*args: Any, ray: str | None = None, workers: int | None = None,
                           **kwargs: Any) -> Any:
        from spatialprobe.runner.scale import Scale, scaled

        Scale(ray, workers)  # refuses --workers without --ray
        if ray is not None:
            show_worker_rates()
        with scaled(ray, workers):
            return command(*args, **kwargs)

    return with_options(with_scale_options, signature, added)


def show_worker_rates() -> None:
    """Each Ray worker's items per second (logged at INFO by :mod:`spatialprobe.runner.scale`)
    on stderr, once."""
    logger = logging.getLogger("spatialprobe.runner.scale")
    if not logger.handlers:
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


class _Stderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record comes (a test runner swaps it)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def bare_ray_means_local(args: list[str]) -> list[str]:
    """Typer options cannot have an optional value, so a bare ``--ray`` becomes ``--ray local``."""
    fixed = []
    for i, arg in enumerate(args):
        fixed.append(arg)
        if arg == "--ray" and (i + 1 == len(args) or args[i + 1].startswith("-")):
            fixed.append("local")
    return fixed


class BareRayGroup(TyperGroup):
    """The command group that lets ``--ray`` stand alone (start a local cluster) or take an
    ADDRESS, for every command under it."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, bare_ray_means_local(list(args)))
