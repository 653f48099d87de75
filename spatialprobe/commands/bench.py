"""``spatialprobe bench NAME``: any benchmark that is one source module on the engine, read from
the user's local copy and asked of any model that understands its items.

A benchmark module (``spatialprobe/benchmarks/NAME.py``) is registered once as a ``source``; it
declares ``OPTIONS`` (its ``--option KEY=VALUE`` keys, each with a sentence of help) and a
``rebuild_source(settings, seed)`` that builds its items from :func:`spatialprobe.benchmarks.base.given`.
Sources with a command of their own (``probe``, ``vsr``, ``spatialmqa``, ``qa``) declare no
``OPTIONS`` and are named here to be asked there.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from spatialprobe.commands.declared import MODULE_OPTIONS, take_options
from spatialprobe.commands.demo import DemoOption
from spatialprobe.commands.engine_options import ask_options
from spatialprobe.commands.hub import hub_model_options
from spatialprobe.commands.output_checks import require_run_dir
from spatialprobe.commands.scale_options import scale_options
from spatialprobe.errors import UsageError

if TYPE_CHECKING:
    from spatialprobe.engine.build import AskOptions

OWN_COMMANDS = {"task": "probe TASK --model M", "vsr": "vsr", "spatialmqa": "spatialmqa", "qa": "qa text|image"}
"""The sources asked by a command of their own, and that command."""


def module_of(name: str) -> Any:
    """The benchmark module registered as source ``name``; refused in one sentence where ``name``
    is no benchmark (naming those there are) or has a command of its own."""
    import importlib

    from spatialprobe import registry
    from spatialprobe.errors import UnknownComponent

    if name in OWN_COMMANDS:
        raise UsageError(f"{name} is asked with its own command: spatialprobe {OWN_COMMANDS[name]}")
    try:
        target = registry.lookup("source", name)
    except UnknownComponent:
        raise UsageError(f"no benchmark {name!r}; the benchmarks are {', '.join(benchmarks())}") from None
    module = importlib.import_module(target.__module__)
    if not hasattr(module, "OPTIONS"):
        raise UsageError(f"source {name!r} declares no OPTIONS: it is not a benchmark module (spatialprobe ls source)")
    return module


def benchmarks() -> list[str]:
    """The registered benchmark modules (sources without a command of their own)."""
    from spatialprobe import registry

    return sorted(n for n in registry.names("source") if n not in OWN_COMMANDS)


def source_settings(name: str, data: str, images: Path | None, split: str | None, subset: str | None,
                    limit: int | None, option: list[str], wording: str | None = None) -> dict[str, Any]:
    """The settings ``spatialprobe bench`` builds the source from; an ``--option`` key the module
    does not declare is refused, naming those it does, and so is a ``--wording`` it does not offer
    (a module's ``WORDINGS``: its authors' prompts)."""
    from spatialprobe.models.options import parse_pairs

    module = module_of(name)
    options = parse_pairs(option, "--option")
    unknown = [key for key in options if key not in module.OPTIONS]
    if unknown:
        known = ", ".join(sorted(module.OPTIONS)) or "none"
        raise UsageError(f"--option {unknown[0]} does not apply to {name}; its options are: {known}")
    offered = getattr(module, "WORDINGS", {})
    if wording is not None and wording not in offered:
        raise UsageError(f"--wording {wording} does not apply to {name}; "
                         + (f"it offers: {', '.join(offered)}" if offered else "it asks the toolkit's wording only"))
    return {"name": name, "data": data, "images": str(images) if images else None, "split": split,
            "subset": subset, "limit": limit, "options": options, **({"wording": wording} if wording else {})}


@take_options(MODULE_OPTIONS)
def bench_command(
    *,
    name: str = typer.Argument(..., help="The benchmark (spatialprobe ls source): whatsup, cv-bench, 3dsrbench, ..."),
    model: str | None = typer.Option(None, "--model", help="Any checkpoint whose adapter understands the items "
                                     "(spatialprobe ls): a multimodal LLM, a contrastive image-text model, a text "
                                     "LM, ... (with --demo: the tiny model the demo names)"),
    data: str | None = typer.Option(None, "--data", help="Your local copy: a .json/.jsonl/.csv/.tsv/.parquet file, a "
                                    "folder of Parquet files or a `datasets` save_to_disk folder, or hf:NAME (the "
                                    "Hugging Face cache, offline). Nothing is downloaded."),
    out: Path | None = typer.Option(None, "--out", help="Run directory (resumes if it exists) "
                                    "\\[default: runs/ask-NAME-MODEL-IDENTITY8]."),
    images: Path | None = typer.Option(None, "--images", help="The folder the items' image paths are relative to "
                                       "(where images are files, not embedded)."),
    split: str | None = typer.Option(None, "--split", help="The split of a `datasets` copy or Parquet folder."),
    subset: str | None, limit: int | None, option: list[str],  # declared in MODULE_OPTIONS
    wording: str | None = typer.Option(None, "--wording", help="official: the benchmark authors' own prompt, where "
                                       "the module offers it (mmsi) \\[default: the toolkit's lettered question]."),
    demo: bool = DemoOption,
    device: str = typer.Option("auto", "--device", help="auto, cpu or cuda."),
    batch_size: int = typer.Option(8, "--batch-size", min=1),
    asked: AskOptions,
) -> None:
    """A benchmark from your local copy, asked of any model that understands its items: its
    official metrics, clustered intervals over its declared unit, the answer prior and, with
    --blind, the vision gain. --demo tries it offline on a synthetic copy."""
    from contextlib import nullcontext

    from spatialprobe.benchmarks.copy_images import text_only
    from spatialprobe.commands.demo import demo_inputs, required
    from spatialprobe.commands.engine_options import ask_and_print, text_alone
    from spatialprobe.engine.rebuild import rebuild_source
    from spatialprobe.runner.folders import DefaultRunDir

    require_run_dir(out)
    if demo:
        found = demo_inputs(name, module_of(name), data, model, images=images, split=split)
        data, images, subset, model = str(found.data), found.images, subset or found.subset, found.model
        option = [*option, *(f"{key}={value}" for key, value in found.options.items())]
    data, model = required(data, "--data", f"bench {name}"), required(model, "--model", f"bench {name}")
    with text_only() if text_alone(asked) else nullcontext():  # no image is looked for
        source = rebuild_source(source_settings(name, data, images, split, subset, limit, option, wording),
                                asked.seed)
    ask_and_print(source, model, replace(asked, device=device, batch_size=batch_size),
                  out or DefaultRunDir(name, model), f"{name} items asked", "bench")


def register(app: typer.Typer) -> None:
    app.command("bench")(scale_options(hub_model_options(ask_options()(bench_command))))
