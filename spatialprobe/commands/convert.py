"""``spatialprobe convert ...``: turn released checkpoints into directories transformers loads.

``convert_app`` is a typer group; each converter is one self-contained command function so
converters written elsewhere (e.g. ``convert vqgan``) can join the same group.
"""

from __future__ import annotations

from pathlib import Path

import typer

from spatialprobe.commands.declared import command_group
from spatialprobe.errors import UsageError

convert_app = command_group("Convert released checkpoints to transformers/diffusers format.")


@convert_app.command("vinvl")
def convert_vinvl_command(
    ckpt_dir: Path = typer.Argument(..., help="Oscar/VinVL pretrained checkpoint directory "
                                              "(pytorch_model.bin, config.json, vocab.txt)."),
    out_dir: Path = typer.Argument(..., help="Directory to write the BertForMaskedLM model to."),
    cased: bool = typer.Option(False, "--cased", help="Keep case when tokenizing "
                                                      "(VinVL/Oscar base models are uncased)."),
) -> None:
    """Convert an Oscar/VinVL checkpoint into a BertForMaskedLM directory for the masked-LM prober."""
    from spatialprobe.convert.vinvl import CheckpointError, convert_vinvl
    from spatialprobe.loading import ModelLoadError

    try:
        record = convert_vinvl(ckpt_dir, out_dir, lowercase=not cased)
    except (CheckpointError, ModelLoadError) as err:
        raise UsageError(str(err)) from None
    typer.echo(f"wrote BertForMaskedLM to {out_dir} (image embedding: "
               f"{len(record['image_embedding'])} tensors kept in img_embedding.safetensors)")
    typer.echo(f"probe it with: spatialprobe probe size --model {out_dir}")


@convert_app.command("vqgan")
def convert_vqgan_command(
    ckpt: Path = typer.Argument(..., help="taming checkpoint, e.g. last.ckpt"),
    yaml: Path = typer.Argument(..., help="its model.yaml"),
    out: Path = typer.Argument(..., help="directory to write the diffusers VQModel to"),
    allow_pickle: bool = typer.Option(False, "--allow-pickle",
                                      help="Allow arbitrary pickled objects in CKPT (trusted files)."),
) -> None:
    """Convert a taming-transformers VQGAN checkpoint into a diffusers VQModel directory."""
    from spatialprobe.convert.vqgan import ConversionError, convert_vqgan

    for path in (ckpt, yaml):
        if not path.is_file():
            raise UsageError(f"{path}: no such file")
    try:
        model = convert_vqgan(ckpt, yaml, out, allow_pickle=allow_pickle)
    except ConversionError as err:
        raise UsageError(str(err)) from None
    cfg = model.config
    typer.echo(f"wrote VQModel to {out}: {cfg.num_vq_embeddings} codes of dim {cfg.vq_embed_dim}, "
               f"downsampling f={2 ** (len(cfg.block_out_channels) - 1)}")


def register(app: typer.Typer) -> None:
    app.add_typer(convert_app, name="convert")
