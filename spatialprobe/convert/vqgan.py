"""Convert a taming-transformers VQGAN checkpoint (``last.ckpt`` + ``model.yaml``) to diffusers.

The taming ``VQModel`` and diffusers' ``VQModel`` are the same network under different names:

=============================================  ===============================================
taming                                          diffusers
=============================================  ===============================================
``encoder.down.{i}.block.{j}``                  ``encoder.down_blocks.{i}.resnets.{j}``
``encoder.down.{i}.attn.{j}``                   ``encoder.down_blocks.{i}.attentions.{j}``
``encoder.down.{i}.downsample.conv``            ``encoder.down_blocks.{i}.downsamplers.0.conv``
``decoder.up.{i}.block.{j}``                    ``decoder.up_blocks.{n-1-i}.resnets.{j}``
``decoder.up.{i}.upsample.conv``                ``decoder.up_blocks.{n-1-i}.upsamplers.0.conv``
``*.mid.block_1`` / ``attn_1`` / ``block_2``    ``*.mid_block.resnets.0`` / ``attentions.0`` / ``resnets.1``
``*.norm_out``                                  ``*.conv_norm_out``
``nin_shortcut``                                ``conv_shortcut``
attention ``norm``, ``q``, ``k``, ``v``,        ``group_norm``, ``to_q``, ``to_k``, ``to_v``,
``proj_out`` (1x1 convolutions)                 ``to_out.0`` (linear layers)
``quantize.embedding``, ``quant_conv``,         unchanged
``post_quant_conv``
=============================================  ===============================================

taming numbers decoder levels from the highest resolution (``up.0``) while diffusers numbers them
in the order they run (``up_blocks.0`` is the lowest resolution), hence ``n-1-i``. The training
losses (``loss.*``: discriminator, LPIPS) are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.errors import SpatialprobeError
from spatialprobe.extras import require

_ATTN_NAMES = {"norm": "group_norm", "q": "to_q", "k": "to_k", "v": "to_v", "proj_out": "to_out.0"}
_KEPT_PREFIXES = ("encoder.", "decoder.", "quantize.", "quant_conv.", "post_quant_conv.")


class ConversionError(SpatialprobeError, ValueError):
    """A checkpoint or config that does not describe a supported taming VQGAN."""


def read_taming_config(yaml_path: str | Path) -> dict[str, Any]:
    """``model.params`` of a taming ``model.yaml``: ``embed_dim``, ``n_embed`` and ``ddconfig``."""
    yaml = require("yaml", "synthesis", "Reading a taming model.yaml")

    try:
        with open(yaml_path, encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        where = ""
        if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
            where = f" (line {err.problem_mark.line + 1}: {err.problem})"
        raise ConversionError(f"{yaml_path}: not a readable YAML file{where}.") from None
    if not isinstance(config, dict):
        raise ConversionError(f"{yaml_path}: expected a mapping with model.params, got "
                              f"{type(config).__name__}; is this a taming VQGAN model.yaml?")
    model = config["model"] if isinstance(config.get("model"), dict) else {}
    params = model.get("params", config)
    missing = [k for k in ("embed_dim", "n_embed", "ddconfig") if k not in params]
    if missing:
        raise ConversionError(f"{yaml_path}: model.params lacks {', '.join(missing)}; "
                              "is this a taming VQGAN model.yaml?")
    dd = params["ddconfig"]
    needed = ("ch", "ch_mult", "num_res_blocks", "attn_resolutions", "z_channels", "resolution")
    lacking = [k for k in needed if k not in dd]
    if lacking:
        raise ConversionError(f"{yaml_path}: model.params.ddconfig lacks {', '.join(lacking)}.")
    if dd.get("double_z", False):
        raise ConversionError(f"{yaml_path}: ddconfig.double_z is true: that is a KL autoencoder, "
                              "not a VQGAN.")
    return {"embed_dim": int(params["embed_dim"]), "n_embed": int(params["n_embed"]), "ddconfig": dd}


def level_has_attention(dd: Mapping[str, Any]) -> list[bool]:
    """Per resolution level (highest resolution first), whether taming puts attention there."""
    levels = len(dd["ch_mult"])
    resolutions = [int(dd["resolution"]) // 2 ** i for i in range(levels)]
    return [r in set(dd["attn_resolutions"]) for r in resolutions]


def vqmodel_config(params: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of diffusers ``VQModel`` equivalent to a taming config."""
    dd = params["ddconfig"]
    attn = level_has_attention(dd)
    down = tuple("AttnDownEncoderBlock2D" if a else "DownEncoderBlock2D" for a in attn)
    up = tuple("AttnUpDecoderBlock2D" if a else "UpDecoderBlock2D" for a in reversed(attn))
    return {
        "in_channels": int(dd.get("in_channels", 3)),
        "out_channels": int(dd.get("out_ch", 3)),
        "down_block_types": down,
        "up_block_types": up,
        "block_out_channels": tuple(int(dd["ch"]) * int(m) for m in dd["ch_mult"]),
        "layers_per_block": int(dd["num_res_blocks"]),
        "latent_channels": int(dd["z_channels"]),
        "sample_size": int(dd["resolution"]),
        "num_vq_embeddings": int(params["n_embed"]),
        "vq_embed_dim": int(params["embed_dim"]),
        "norm_num_groups": 32,
    }


def _rename_block_part(rest: str) -> str:
    """Inside one resnet or attention block: taming leaf names -> diffusers leaf names."""
    rest = rest.replace("nin_shortcut.", "conv_shortcut.")
    head, _, leaf = rest.partition(".")
    return f"{_ATTN_NAMES[head]}.{leaf}" if head in _ATTN_NAMES and leaf in ("weight", "bias") else rest


def convert_key(key: str, levels: int) -> str:
    """One taming state-dict key -> the diffusers ``VQModel`` key."""
    patterns = [
        (r"encoder\.down\.(\d+)\.block\.(\d+)\.(.+)",
         lambda m: f"encoder.down_blocks.{m[1]}.resnets.{m[2]}.{_rename_block_part(m[3])}"),
        (r"encoder\.down\.(\d+)\.attn\.(\d+)\.(.+)",
         lambda m: f"encoder.down_blocks.{m[1]}.attentions.{m[2]}.{_rename_block_part(m[3])}"),
        (r"encoder\.down\.(\d+)\.downsample\.conv\.(.+)",
         lambda m: f"encoder.down_blocks.{m[1]}.downsamplers.0.conv.{m[2]}"),
        (r"decoder\.up\.(\d+)\.block\.(\d+)\.(.+)",
         lambda m: f"decoder.up_blocks.{levels - 1 - int(m[1])}.resnets.{m[2]}."
                   f"{_rename_block_part(m[3])}"),
        (r"decoder\.up\.(\d+)\.attn\.(\d+)\.(.+)",
         lambda m: f"decoder.up_blocks.{levels - 1 - int(m[1])}.attentions.{m[2]}."
                   f"{_rename_block_part(m[3])}"),
        (r"decoder\.up\.(\d+)\.upsample\.conv\.(.+)",
         lambda m: f"decoder.up_blocks.{levels - 1 - int(m[1])}.upsamplers.0.conv.{m[2]}"),
        (r"(encoder|decoder)\.mid\.block_([12])\.(.+)",
         lambda m: f"{m[1]}.mid_block.resnets.{int(m[2]) - 1}.{_rename_block_part(m[3])}"),
        (r"(encoder|decoder)\.mid\.attn_1\.(.+)",
         lambda m: f"{m[1]}.mid_block.attentions.0.{_rename_block_part(m[2])}"),
        (r"(encoder|decoder)\.norm_out\.(.+)", lambda m: f"{m[1]}.conv_norm_out.{m[2]}"),
    ]
    for pattern, build in patterns:
        match = re.fullmatch(pattern, key)
        if match:
            return build(match)
    return key  # conv_in, conv_out, quant_conv, post_quant_conv, quantize.embedding


def convert_state_dict(state_dict: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Rename a taming VQGAN state dict to diffusers ``VQModel`` keys (losses dropped)."""
    levels = len(params["ddconfig"]["ch_mult"])
    if "quantize.embed.weight" in state_dict:
        raise ConversionError("this is a Gumbel-softmax VQGAN (quantize.embed); only the "
                              "VectorQuantizer models (quantize.embedding) are supported.")
    out = {}
    for key, value in state_dict.items():
        if not key.startswith(_KEPT_PREFIXES):
            continue
        new = convert_key(key, levels)
        if ".attentions." in new and value.ndim == 4:
            value = value[:, :, 0, 0]  # 1x1 convolution -> linear layer
        out[new] = value
    return out


class _Unimportable:
    """Stands in for a class a trusted checkpoint names but this Python lacks (Lightning's
    ``ModelCheckpoint`` in the ``callbacks`` of taming's ``last.ckpt``); only tensors are used."""

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass


def _lenient_pickle():
    """The ``pickle`` module with an Unpickler that replaces unimportable classes by
    ``_Unimportable``, so a trusted Lightning checkpoint loads without pytorch_lightning."""
    import pickle
    import types

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            try:
                return super().find_class(module, name)
            except (ImportError, AttributeError):
                return type(name, (_Unimportable,), {"__module__": module})

    lenient = types.ModuleType("lenient_pickle")
    lenient.__dict__.update({k: v for k, v in vars(pickle).items() if not k.startswith("__")})
    lenient.__dict__["Unpickler"] = Unpickler  # a module's namespace: attributes mypy cannot declare
    lenient.__dict__["load"] = lambda file, **kw: Unpickler(file, **kw).load()
    return lenient


def load_taming_state_dict(ckpt_path: str | Path, *, allow_pickle: bool = False) -> dict[str, Any]:
    """The ``state_dict`` of a Lightning ``.ckpt`` (or a bare state dict / safetensors file)."""
    import pickle

    import torch

    path = Path(ckpt_path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    with open(path, "rb") as handle:
        head = handle.read(4)
    if not (head.startswith(b"PK") or head[:1] == b"\x80"):  # torch.save zip, or a bare pickle
        raise ConversionError(f"{path} is not a PyTorch checkpoint (neither a torch.save zip "
                              "archive nor a pickle); pass the taming last.ckpt.")
    try:
        if allow_pickle:
            loaded = torch.load(path, map_location="cpu", weights_only=False,
                                pickle_module=_lenient_pickle())
        else:
            loaded = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        raise ConversionError(
            f"{path} holds Python objects besides tensors ({str(err).splitlines()[0]}). If you "
            "trust the file, rerun with --allow-pickle.") from None
    return loaded.get("state_dict", loaded)


def convert_vqgan(ckpt_path: str | Path, yaml_path: str | Path, out_dir: str | Path, *,
                  allow_pickle: bool = False):
    """Convert and ``save_pretrained`` into ``out_dir``; returns the loaded diffusers model."""
    require("diffusers", "synthesis", "Converting a VQGAN")
    from diffusers.models import VQModel  # the top level's hints name diffusers' torch-less dummy

    params = read_taming_config(yaml_path)
    state = convert_state_dict(load_taming_state_dict(ckpt_path, allow_pickle=allow_pickle), params)
    model = VQModel(**vqmodel_config(params))
    expected = set(model.state_dict())
    missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
    if missing or unexpected:
        raise ConversionError(
            f"{ckpt_path} does not match {yaml_path}: missing {missing[:5]}"
            f"{' ...' if len(missing) > 5 else ''}, unexpected {unexpected[:5]}"
            f"{' ...' if len(unexpected) > 5 else ''}.")
    model.load_state_dict(state, strict=True)
    model.save_pretrained(str(out_dir))
    return model.eval()
