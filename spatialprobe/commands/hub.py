"""``--revision`` and ``--trust-remote-code``, declared once for every command that loads a hub model.

:func:`hub_model_options` adds both options to a command and runs it under
:func:`spatialprobe.loading.hub_settings`, so every model the command loads goes through
:func:`spatialprobe.loading.load_pretrained` with them, and each run records them with its model
inputs (:func:`spatialprobe.fingerprints.model_input`): the revision asked for and the commit it
resolved to, and whether the checkpoint's own code was trusted. ``spatialprobe run CONFIG``
restores them from the config.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Optional

import typer

REVISION_HELP = ("Hub models: the branch, tag or commit to load (recorded with the commit it "
                 "resolves to). Refused for a local directory \\[default: the default branch].")
TRUST_HELP = ("Run the Python code a hub checkpoint ships (transformers' trust_remote_code; "
              "recorded in the run). Off by default: only for checkpoints you trust.")


def hub_model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with ``--revision REV`` and ``--trust-remote-code`` added to its options."""
    signature = inspect.signature(command)
    added = [
        inspect.Parameter("revision", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],  # noqa: UP045 (typer reads it)
                          default=typer.Option(None, "--revision", help=REVISION_HELP)),
        inspect.Parameter("trust_remote_code", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                          default=typer.Option(False, "--trust-remote-code", help=TRUST_HELP)),
    ]

    @functools.wraps(command)
    def with_hub_options(*args: Any, revision: str | None = None, trust_remote_code: bool = False,
                         **kwargs: Any) -> Any:
        from spatialprobe.loading import hub_settings

        with hub_settings(revision, trust_remote_code):
            return command(*args, **kwargs)

    return with_options(with_hub_options, signature, added)


def with_options(wrapper: Callable[..., Any], signature: inspect.Signature,
                 added: list[inspect.Parameter]) -> Callable[..., Any]:
    """``wrapper`` with the options of ``signature`` (its command's) and ``added`` (typer reads
    the signature)."""
    params = list(signature.parameters.values())
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for p in params if p.kind != p.VAR_KEYWORD] + added)
    return wrapper
