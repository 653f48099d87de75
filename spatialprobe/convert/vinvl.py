"""Convert an Oscar/VinVL pretrained checkpoint into a plain transformers ``BertForMaskedLM``.

Oscar and VinVL release ``BertImgForPreTraining`` checkpoints: a directory with
``pytorch_model.bin`` (or ``model.safetensors``), ``config.json`` and ``vocab.txt``. Its state
dict is a BERT with two additions::

    bert.embeddings.*  bert.encoder.*  bert.pooler.*    BERT proper
    cls.predictions.*                                   masked-LM head (what the prober reads)
    bert.img_embedding.*                                region features (2054-d) -> hidden size
    cls.seq_relationship.*                              image-text contrastive head

The converted directory holds the BERT body and the masked-LM head as ``BertForMaskedLM``
(``config.json`` + ``model.safetensors`` + ``vocab.txt``/``tokenizer_config.json``), so
``AutoModelForMaskedLM``/``AutoTokenizer`` and ``spatialprobe probe ... --model OUT_DIR`` load it
like any BERT. Nothing is thrown away: ``img_embedding.safetensors`` keeps the image path
(``bert.img_embedding.*``, and ``bert.LayerNorm.*`` of checkpoints trained with
``use_img_layernorm``) and ``pretraining_heads.safetensors`` keeps the pooler,
``cls.seq_relationship`` and any other tensor outside BERT;
``vinvl.json`` records where they came from.

Text-only probing feeds no regions: the sequence is ``[CLS] text [SEP]`` and the image
embedding is unused, which is how the spatial-commonsense paper probed VinVL.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from spatialprobe.errors import SpatialprobeError
from spatialprobe.files import atomic_write_text
from spatialprobe.fingerprints import sha256_file
from spatialprobe.loading import load_pretrained

WEIGHT_FILES = ("pytorch_model.bin", "model.safetensors")
MLM_PREFIXES = ("bert.embeddings.", "bert.encoder.", "cls.predictions.")
HEAD_PREFIXES = ("bert.pooler.", "cls.seq_relationship.")
# Oscar-only config keys that BertConfig does not use; kept in vinvl.json instead.
_OSCAR_CONFIG_KEYS = ("img_feature_dim", "img_feature_type", "img_layer_norm_eps",
                      "use_img_layernorm", "num_contrast_classes", "num_labels", "loss_type",
                      "classifier", "cls_hidden_scale")


class CheckpointError(SpatialprobeError, ValueError):
    """The directory is not an Oscar/VinVL checkpoint we can convert."""


def load_state_dict(ckpt_dir: Path) -> tuple[dict[str, Any], Path]:
    """The checkpoint's tensors and the file they came from."""
    import torch

    for name in WEIGHT_FILES:
        path = ckpt_dir / name
        if not path.exists():
            continue
        if name.endswith(".safetensors"):
            from safetensors.torch import load_file

            return load_file(str(path)), path
        state = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(state, dict) and "model" in state and isinstance(state["model"], dict):
            state = state["model"]  # training checkpoints wrap the weights
        return dict(state), path
    raise CheckpointError(
        f"{ckpt_dir} holds none of {', '.join(WEIGHT_FILES)}; point CKPT_DIR at the unpacked "
        "Oscar/VinVL checkpoint directory (e.g. checkpoint-2000000/)."
    )


def _modern_name(key: str) -> str:
    """Old BERT checkpoints name LayerNorm parameters gamma/beta."""
    if key.endswith(".gamma"):
        return key[: -len("gamma")] + "weight"
    if key.endswith(".beta"):
        return key[: -len("beta")] + "bias"
    return key


def split_state_dict(state: dict[str, Any]) -> tuple[dict, dict, dict]:
    """(masked-LM tensors, image-embedding tensors, pretraining-head tensors)."""
    mlm, image, heads = {}, {}, {}
    for raw_key, tensor in state.items():
        key = _modern_name(raw_key.removeprefix("module."))
        if key.startswith(MLM_PREFIXES):
            mlm[key] = tensor
        elif key.startswith(HEAD_PREFIXES) or not key.startswith("bert."):
            heads[key] = tensor
        else:  # bert.img_embedding.*, and bert.LayerNorm.* where use_img_layernorm is set
            image[key] = tensor
    if "bert.embeddings.word_embeddings.weight" not in mlm:
        raise CheckpointError("no bert.embeddings.word_embeddings.weight: not a BERT checkpoint")
    if "cls.predictions.transform.dense.weight" not in mlm:
        raise CheckpointError("no cls.predictions.*: the checkpoint has no masked-LM head "
                              "(fine-tuned task checkpoints drop it; use a pretrained one)")
    # The decoder is tied to the word embeddings; older checkpoints store it, newer ones may not.
    mlm.setdefault("cls.predictions.decoder.weight", mlm["bert.embeddings.word_embeddings.weight"])
    if "cls.predictions.bias" in mlm:
        mlm.setdefault("cls.predictions.decoder.bias", mlm["cls.predictions.bias"])
    return mlm, image, heads


def bert_config(ckpt_dir: Path):
    """A BertConfig for BertForMaskedLM, plus the Oscar-only keys it does not use."""
    from transformers import BertConfig

    path = ckpt_dir / "config.json"
    if not path.exists():
        raise CheckpointError(f"{path} not found: the checkpoint directory needs its config.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    oscar = {k: raw.pop(k) for k in _OSCAR_CONFIG_KEYS if k in raw}
    raw.pop("architectures", None)
    raw["model_type"] = "bert"
    config = BertConfig(**{k: v for k, v in raw.items() if not k.startswith("_")})
    config.architectures = ["BertForMaskedLM"]
    return config, oscar


def convert_vinvl(ckpt_dir: str | Path, out_dir: str | Path, *, lowercase: bool = True) -> dict:
    """Write ``out_dir`` as a BertForMaskedLM directory; returns what ``vinvl.json`` records."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertForMaskedLM, BertTokenizerFast  # type: ignore[attr-defined]  # v5: untyped alias

    ckpt_dir, out_dir = Path(ckpt_dir), Path(out_dir)
    if not (ckpt_dir / "vocab.txt").exists():
        raise CheckpointError(f"{ckpt_dir / 'vocab.txt'} not found: the checkpoint needs its vocabulary")
    state, weights_path = load_state_dict(ckpt_dir)
    mlm, image, heads = split_state_dict(state)
    config, oscar = bert_config(ckpt_dir)
    vocab_rows = mlm["bert.embeddings.word_embeddings.weight"].shape[0]
    if config.vocab_size != vocab_rows:
        raise CheckpointError(f"config.json says vocab_size={config.vocab_size} but the word "
                              f"embeddings have {vocab_rows} rows")

    model = BertForMaskedLM(config)
    missing, unexpected = model.load_state_dict(mlm, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise CheckpointError(f"weights do not fit BertForMaskedLM: missing {missing[:5]}, "
                              f"unexpected {unexpected[:5]}")
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    # from_pretrained on the directory reads vocab.txt the same way across transformers versions
    # Oscar checkpoints carry no tokenizer_config.json: set the length limit from the model, so
    # the tokenizer truncates at 512 (say) instead of feeding positions the model does not have.
    load_pretrained(BertTokenizerFast, str(ckpt_dir), "the checkpoint's tokenizer", do_lower_case=lowercase,
                    model_max_length=config.max_position_embeddings).save_pretrained(out_dir)
    shutil.copyfile(ckpt_dir / "vocab.txt", out_dir / "vocab.txt")  # newer versions write only tokenizer.json

    def contiguous(tensors: dict) -> dict:
        return {k: v.detach().to(torch.float32).contiguous() for k, v in tensors.items()}

    if image:
        save_file(contiguous(image), str(out_dir / "img_embedding.safetensors"))
    if heads:
        save_file(contiguous(heads), str(out_dir / "pretraining_heads.safetensors"))
    record = {
        "source": str(ckpt_dir.resolve()),
        "source_weights": weights_path.name,
        "source_sha256": sha256_file(weights_path),
        "oscar_config": oscar,
        "image_embedding": sorted(image),
        "pretraining_heads": sorted(heads),
        "text_only_probing": "no region features are given: the input is [CLS] text [SEP]",
    }
    # written last, atomically: its presence marks a whole conversion
    atomic_write_text(out_dir / "vinvl.json", json.dumps(record, indent=2) + "\n")
    return record
