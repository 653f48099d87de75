"""``spatialprobe convert ...``: turn released checkpoints into directories transformers loads.

``convert_app`` is a typer group; each converter is one self-contained command function so
converters written elsewhere (e.g. ``convert vqgan``) can join the same group.
"""

from __future__ import annotations

from pathlib import Path

import typer

convert_app = typer.Typer(help="Convert released checkpoints to transformers/diffusers format.",
                          no_args_is_help=True)


@convert_app.command("vinvl")
def convert_vinvl_command(
    ckpt_dir: Path = typer.Argument(..., help="Oscar/VinVL pretrained checkpoint directory "
                                              "(pytorch_model.bin, config.json, vocab.txt)."),
    out_dir: Path = typer.Argument(..., help="Directory to write the BertForMaskedLM model to."),
    cased: bool = typer.Option(False, "--cased", help="Keep case when tokenizing "
                                                      "(VinVL/Oscar base models are uncased)."),
) -> None:
    """Convert an Oscar/VinVL checkpoint into a BertForMaskedLM directory for the masked-LM prober."""
    from ..probes.vinvl import CheckpointError, convert_vinvl

    try:
        record = convert_vinvl(ckpt_dir, out_dir, lowercase=not cased)
    except CheckpointError as err:
        raise typer.BadParameter(str(err), param_hint="CKPT_DIR") from None
    typer.echo(f"wrote BertForMaskedLM to {out_dir} (image embedding: "
               f"{len(record['image_embedding'])} tensors kept in img_embedding.safetensors)")
    typer.echo(f"probe it with: spatialprobe probe size --model {out_dir}")


def register(app: typer.Typer) -> None:
    app.add_typer(convert_app, name="convert")
