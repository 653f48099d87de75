"""The options of the commands that ask a benchmark's items of a model through the engine (``bench``,
``vsr``, ``spatialmqa``, ``qa text|image``, and ``probe`` with a model asked the task's question),
declared once, and the one way they run it: build the run's settings
(:mod:`spatialprobe.engine.build`), execute, print.

:func:`ask_options` adds the options a command names (:data:`ASK_OPTIONS`: ``--protocol``,
``--image-condition``, ``--blind``, ``--max-new-tokens``, ``--scorer-arg``, ``--seed``,
``--device-map``, ``--max-memory``, ``--backend``, ``--items``, ``--protocol-variants``, ``--samples``,
``--temperature``, ``--base-url``, ``--api-key-env``) to its
signature, in the order named (none named: all of them), and hands the command the run's
:class:`~spatialprobe.engine.build.AskOptions` as ``asked``, read from them: a ``--max-memory``,
``--protocol-variants`` or ``--scorer-arg`` that does not read is refused in one sentence before
the command reads any data. The command sets what is its own (``device``, ``batch_size``, a
``--method`` that fixes the protocol) with :func:`dataclasses.replace`.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from spatialprobe.commands.console import warn
from spatialprobe.commands.hub import with_options
from spatialprobe.commands.model_options import DeviceMapOption, MaxMemoryOption

if TYPE_CHECKING:
    from spatialprobe.engine.build import AskOptions

ProtocolOption = typer.Option(None, "--protocol", help="likelihood (score each option), generate (parse the "
                              "reply) or both \\[default: likelihood]; the model adapter must answer them.")
ImageConditionOption = typer.Option(None, "--image-condition", help="real (the item's image), blank, none "
                                    "(text only) or shuffled (another item's image) "
                                    "\\[default: real where items have images].")
BlindOption = typer.Option(False, "--blind", help="Also ask every item under the blank, none and shuffled "
                           "conditions and report the vision gain (real − blind).")
MaxNewTokensOption = typer.Option(None, "--max-new-tokens", min=1, help="Generate protocol: at most this many "
                                  "tokens per reply [16].")
ScorerArgOption = typer.Option([], "--scorer-arg", help="KEY=VALUE: an option of the model adapter "
                               "(spatialprobe ls); repeatable.")
SeedOption = typer.Option(0, "--seed", help="Seed of the shuffled-image condition.")
ItemsOption = typer.Option(None, "--items", help="Ask only the items a subset file keeps (spatialprobe audit "
                           "blind --debias); the file's hash is part of the run's identity.")
ProtocolVariantsOption = typer.Option(None, "--protocol-variants", help="circular (every rotation of "
                                     "the lettered options) and/or swap (left/right, above/below swapped), "
                                     "comma-separated: also ask these variants and report vanilla and "
                                     "consistent accuracy (every item of a group right) and their gap.")
BackendOption = typer.Option(None, "--backend", "--scorer", help="The model adapter, taken by name (openai-api: "
                             "--model is the server's name for it); else the first that accepts the checkpoint's "
                             "config.json and understands the items (spatialprobe ls).")
BaseUrlOption = typer.Option(None, "--base-url", help="--backend openai-api: the server's API root, such as "
                             "http://127.0.0.1:8000/v1 (vLLM, SGLang, TGI, transformers serve, a hosted API).")
ApiKeyEnvOption = typer.Option(None, "--api-key-env", help="--backend openai-api: the NAME of the environment "
                               "variable holding the server's key (the key itself is never written).")
SamplesOption = typer.Option(1, "--samples", min=1, help="Ask each item this many times (generate protocol, "
                             "with --temperature above 0); the headline is the benchmark's rule over them (the mean "
                             "unless it votes), its interval over items and samples.")
TemperatureOption = typer.Option(None, "--temperature", min=0.0, help="Sample the generated replies at this "
                                 "temperature, a seed per sample recorded \\[default: greedy].")

ASK_OPTIONS: dict[str, tuple[Any, Any]] = {  # typer reads Optional[...], not X | None
    "protocol": (Optional[str], ProtocolOption),  # noqa: UP045
    "image_condition": (Optional[str], ImageConditionOption),  # noqa: UP045
    "blind": (bool, BlindOption),
    "max_new_tokens": (Optional[int], MaxNewTokensOption),  # noqa: UP045
    "scorer_arg": (list[str], ScorerArgOption),
    "seed": (int, SeedOption),
    "device_map": (Optional[str], DeviceMapOption),  # noqa: UP045
    "max_memory": (list[str], MaxMemoryOption),
    "backend": (Optional[str], BackendOption),  # noqa: UP045
    "items": (Optional[Path], ItemsOption),  # noqa: UP045
    "protocol_variants": (Optional[str], ProtocolVariantsOption),  # noqa: UP045
    "base_url": (Optional[str], BaseUrlOption),  # noqa: UP045
    "api_key_env": (Optional[str], ApiKeyEnvOption),  # noqa: UP045
    "samples": (int, SamplesOption),
    "temperature": (Optional[float], TemperatureOption),  # noqa: UP045
}
"""Each shared option's parameter name -> (its type, its typer option: flag, default, help)."""


def read_asked(values: Mapping[str, Any]) -> AskOptions:
    """The run's :class:`~spatialprobe.engine.build.AskOptions` from the shared options typed
    (``values``: parameter name -> value; the command sets its device and batch size); a
    ``--max-memory``, ``--protocol-variants`` or ``--scorer-arg`` that does not read is refused in
    one sentence."""
    from spatialprobe.commands.model_options import device_map_settings
    from spatialprobe.engine.build import AskOptions
    from spatialprobe.engine.variants import parse_variants
    from spatialprobe.models.options import parse_pairs

    given = {name: values.get(name, default.default) for name, (_, default) in ASK_OPTIONS.items()}
    device_map, max_memory = device_map_settings(given["device_map"], given["max_memory"])
    variants = parse_variants(given["protocol_variants"])
    scorer_args = parse_pairs(given["scorer_arg"])
    items = given["items"]
    return AskOptions(given["protocol"], given["image_condition"], given["blind"], given["max_new_tokens"],
                      given["seed"], backend=given["backend"], scorer_args=scorer_args, device_map=device_map,
                      max_memory=max_memory, items=None if items is None else str(items), protocol_variants=variants,
                      samples=given["samples"], temperature=given["temperature"],
                      server={"base_url": given["base_url"], "api_key_env": given["api_key_env"]})


def ask_options(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: the command (whose keyword-only ``asked`` parameter takes the run's
    :class:`~spatialprobe.engine.build.AskOptions`) with the shared options ``names`` (keys of
    :data:`ASK_OPTIONS`; none named: every one) added after its own, in this order."""
    names = names or tuple(ASK_OPTIONS)

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command)
        own = signature.replace(parameters=[p for p in signature.parameters.values() if p.name != "asked"])
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ASK_OPTIONS[name][0],
                                   default=ASK_OPTIONS[name][1]) for name in names]

        @functools.wraps(command)
        def with_ask_options(*args: Any, **kwargs: Any) -> Any:
            return command(*args, asked=read_asked({name: kwargs.pop(name) for name in names}), **kwargs)

        with_ask_options.__annotations__ = {k: v for k, v in command.__annotations__.items() if k != "asked"}
        return with_options(with_ask_options, own, added)

    return decorate

def text_alone(asked: AskOptions) -> bool:
    """Whether the run asks the items without any image (``--image-condition none``, no ``--blind``):
    then their image files are neither needed nor looked for."""
    return asked.condition == "none" and not asked.blind


def progress_bar(label: str):
    """A rich progress display fed by the run spine's progress(done, total)."""
    from rich.progress import MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(SpinnerColumn(), TextColumn(label), MofNCompleteColumn(), TimeElapsedColumn(),
                   transient=True)
    task = bar.add_task(label, total=None)
    return bar, lambda done, total: bar.update(task, completed=done, total=total)


def ask_and_print(source: Any, model: str, given: Any, out: Any, label: str, command: str) -> dict[str, Any]:
    """Ask the source's items (refusals in one sentence, before anything is written), print the
    table; the run's summary."""
    from spatialprobe.engine.build import run_ask
    from spatialprobe.engine.question_free import warning as question_free_warning

    bar, advance = progress_bar(label)
    with bar:
        kind, summary = run_ask(source, model, given, out, command, advance)
    typer.echo(kind.table(summary))
    unasked = question_free_warning((summary.get("details") or {}).get("question_free"))
    if unasked:
        warn(unasked)
    typer.echo(f"Run written to {os.fspath(out)}")
    return summary
