"""Multimodal LLMs on every task: what ``probe``, ``vsr`` and ``spatialmqa`` do when ``--model``
is an image-text-to-text chat checkpoint (the ``hf-mllm`` adapter, chosen from its config).

The options below apply to those models only; given with any other model they are refused.
"""

from __future__ import annotations

import os
from typing import Any

import typer

from spatialprobe.commands.errors import fail

ProtocolOption = typer.Option(None, "--protocol", help="Multimodal LLMs: likelihood (score each option), "
                              "generate (parse the reply) or both [likelihood].")
ImageConditionOption = typer.Option(None, "--image-condition", help="Multimodal LLMs: real (the item's "
                                    "image), blank, none (text only) or shuffled (another item's image) [real].")
BlindOption = typer.Option(False, "--blind", help="Multimodal LLMs: also ask every item under the blank, "
                           "none and shuffled conditions and report the vision gain (real − blind).")
MaxNewTokensOption = typer.Option(None, "--max-new-tokens", min=1, help="Multimodal LLMs, generate "
                                  "protocol: at most this many tokens per reply [16].")
ScorerArgOption = typer.Option([], "--scorer-arg", help="Multimodal LLMs: KEY=VALUE, an option of the "
                               "hf-mllm adapter (spatialprobe ls); repeatable.")
SeedOption = typer.Option(0, "--seed", help="Multimodal LLMs: seed of the shuffled-image condition.")
RUNTIME_OPTIONS = ("batch_size",)
"""Options of the adapter that say how it runs, not what it computes (the run's runtime)."""


def is_mllm(model: str, scorer: str = "auto") -> bool:
    """Whether ``model`` is asked as a multimodal LLM: ``--scorer hf-mllm``, or its config says so."""
    if scorer != "auto" or model == "dummy":
        return scorer == "hf-mllm"
    from spatialprobe.models.choice import _read_config, adapters_for

    config, _ = _read_config(model)
    return config is not None and "hf-mllm" in adapters_for(config)


def refuse_unless_mllm(mllm: bool, model: str, **given: Any) -> None:
    """The multimodal-LLM options are refused, in one sentence, for any other model."""
    named = [f"--{key.replace('_', '-')}" for key, value in given.items() if value not in (None, False)]
    if named and not mllm:
        fail(f"{', '.join(named)} apply to multimodal LLMs (image-text-to-text checkpoints) only; "
             f"{model!r} is not one.")


def run_ask(source: Any, source_settings: dict[str, Any], model: str, scorer_args: dict[str, str], *,
            out: Any, protocol: str | None, condition: str | None, blind: bool, max_new_tokens: int | None,
            seed: int, device: str, batch_size: int, label: str, device_map: str | None = None,
            max_memory: dict[str, str] | None = None) -> dict[str, Any]:
    """Build the adapter, ask the source's items, print the table; the run's summary."""
    from spatialprobe.benchmarks.ask import AskRun
    from spatialprobe.benchmarks.ask_sources import load_model
    from spatialprobe.commands.vl import _progress
    from spatialprobe.models.options import resolve, sharding
    from spatialprobe.runner import execute
    from spatialprobe.runner.settings import Component

    if max_new_tokens is not None and (protocol or "likelihood") == "likelihood":
        fail("--max-new-tokens applies to the generate protocol; --protocol likelihood generates nothing.")
    options = resolve("hf-mllm", {"batch_size": batch_size, **scorer_args})
    runtime = {key: options.pop(key) for key in RUNTIME_OPTIONS}
    spread = sharding("hf-mllm", device, device_map, max_memory)  # refused here, before the run starts
    component = Component("hf-mllm", {"model": model, **options})
    kind = AskRun(source, None, component, source_settings, protocol=protocol or "likelihood",
                  condition=condition or "real", blind=blind, seed=seed, max_new_tokens=max_new_tokens or 16,
                  device=device, batch_size=runtime["batch_size"], device_map=spread.get("device_map", "none"),
                  max_memory=spread.get("max_memory"))
    kind.model = load_model(component, device, runtime["batch_size"], kind.device_map, kind.max_memory)
    bar, advance = _progress(label)
    with bar:
        summary = execute(kind, out, advance)
    typer.echo(kind.table(summary))
    typer.echo(f"Run written to {os.fspath(out)}")
    return summary
