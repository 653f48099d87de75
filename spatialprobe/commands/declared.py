"""Typer declarations that several commands share: a command group (:func:`command_group`) and
a table of options that commands taking the same inputs declare once (:func:`take_options`,
:data:`MODULE_OPTIONS`; the options every command that asks items takes are
:mod:`spatialprobe.commands.engine_options`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import typer

MODULE_OPTIONS = {
    "subset": typer.Option(None, "--subset", help="A benchmark module: its subset or task, where it has several."),
    "limit": typer.Option(None, "--limit", min=1, help="A benchmark module: only its first N items (smoke tests)."),
    "option": typer.Option([], "--option", help="A benchmark module: KEY=VALUE, one of its options; repeatable."),
}
"""The options that pick what a benchmark module reads of its copy, as ``bench``, ``audit blind``
and ``audit data`` take them (:func:`take_options`)."""


def command_group(help: str) -> typer.Typer:
    """A group of subcommands (``spatialprobe GROUP ...``) that shows its help when called bare."""
    return typer.Typer(help=help, no_args_is_help=True)


def take_options(options: Mapping[str, Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: each parameter of the command named in ``options`` (declared there without a
    default) takes that typer option, where it stands, so that ``--help`` lists it in the
    command's own order; the command is called with its value as with any other option."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command)
        unknown = set(options) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{command.__name__} has no parameter {', '.join(sorted(unknown))}")
        command.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[p.replace(default=options[p.name]) if p.name in options else p
                        for p in signature.parameters.values()])
        return command

    return decorate
