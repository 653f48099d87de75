"""Tiny random multimodal chat models of REAL architectures, for the adapter's tests and bench.

Each builder reads a genuine configuration from ``../shared/models`` (see its README), changes
only sizes (the README's shrink recipe: vocabulary, special and image token ids, image and patch
sizes stay, so the real processor, chat template and image-token count go through), builds the
model with ``AutoModelForImageTextToText.from_config`` and saves it with the genuine processor
files into a temporary directory: a checkpoint directory as a user would pass one. Nothing
from ``../shared/models`` is copied into the project.

:func:`bias_toward` wires a model so that one token wins at every text position whatever the
input: hidden dimension ``d`` of the language model's residual stream is made a positive
constant (every token embedding holds ``+c`` there and no layer writes to it), and the LM head
reads dimension ``d`` only for the chosen token.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "models"

TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2}

FOLDERS = {"llava": "llava-1.5-7b-hf", "smolvlm": "smolvlm-256m-instruct",
           "mllama": "llama-3.2-11b-vision-instruct", "qwen2.5-vl": "qwen2.5-vl-3b-instruct"}


def shrink(family: str, config, tiles: int = 4):
    """The README's recipe for ``family`` applied to a deep copy of its genuine config."""
    cfg = copy.deepcopy(config)
    text, vision = cfg.text_config, cfg.vision_config
    for key, value in TEXT.items():
        setattr(text, key, value)
    if hasattr(text, "head_dim"):
        text.head_dim = 16
    if family == "llava":
        vision.update({"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "projection_dim": 32})
    elif family == "smolvlm":
        vision.update({"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                       "num_attention_heads": 4})
    elif family == "mllama":
        text.num_hidden_layers, text.cross_attention_layers = 4, [1, 3]
        vision.update({"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 4,
                       "num_global_layers": 2, "attention_heads": 4, "intermediate_layers_indices": [1, 3],
                       "vision_output_dim": 96})
        if tiles != 4:
            vision.update({"max_num_tiles": tiles, "supported_aspect_ratios": [[1, 1]]})
    elif family == "qwen2.5-vl":
        text.max_window_layers = 2
        text.rope_parameters["mrope_section"] = [2, 3, 3]
        vision.update({"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4,
                       "out_hidden_size": 64, "fullatt_block_indexes": [1]})
        cfg.tie_word_embeddings = text.tie_word_embeddings = False  # bias_toward needs its own head
    return cfg


def processor_loads(family: str) -> str | None:
    """None when ``family``'s genuine processor loads here, else why not (a test's skip reason)."""
    from transformers import AutoProcessor

    folder = SHARED / FOLDERS[family]
    if not folder.is_dir():
        return f"{folder} is absent"
    try:
        AutoProcessor.from_pretrained(folder)
    except Exception as err:  # Qwen2.5-VL's processor needs torchvision, which is not installed
        detail = " ".join(str(err).split())[:200] or type(err).__name__
        return f"AutoProcessor cannot load {folder.name} here (torchvision is not installed?): {detail}"
    return None


def build(family: str, directory: Path, seed: int = 0, bias_word: str | None = None, tiles: int = 4,
          split: bool = True) -> Path:
    """A tiny random ``family`` model with its genuine processor files, saved in ``directory``.

    ``tiles``: Mllama's most image tiles (the real 4, or 1: the vision tower then attends over
    1,601 patches instead of 6,404, ~16x less attention on a CPU; the processor's
    ``max_image_tiles`` is set to match). ``split``: SmolVLM's image splitting (the real
    processor's; off, an image is its 64-token global view instead of 4x4 tiles + 1 = 1,088)."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    folder = SHARED / FOLDERS[family]
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(shrink(family, AutoConfig.from_pretrained(folder), tiles))
    if bias_word is not None:
        bias_toward(model, first_tokens(folder, bias_word))
    model.save_pretrained(directory)
    for path in folder.iterdir():  # the genuine processor and tokenizer files, at test time only
        if path.suffix in (".json", ".jinja", ".model", ".txt") and path.name != "config.json" \
                and not path.name.startswith("LICENSE"):
            shutil.copy(path, directory / path.name)
    light = {"mllama": {"max_image_tiles": tiles}, "smolvlm": {"do_image_splitting": split}}.get(family)
    if light and (tiles != 4 or not split):
        settings = json.loads((directory / "preprocessor_config.json").read_text(encoding="utf-8"))
        settings.update(light)
        (directory / "preprocessor_config.json").write_text(json.dumps(settings), encoding="utf-8")
    return directory


def first_tokens(folder: Path, word: str) -> set[int]:
    """The ids a reply ``word`` can start with: its first piece with and without a leading space
    (a template ending in ``ASSISTANT:`` is answered `` Yes``, one ending in a newline ``Yes``)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    firsts = {tokenizer(text, add_special_tokens=False)["input_ids"][0] for text in (word, " " + word)}
    return {t for t in firsts if tokenizer.convert_ids_to_tokens(t).strip("▁Ġ ")}


def bias_toward(model, tokens: set[int], dim: int = 0, constant: float = 10.0) -> None:
    """Make ``tokens`` the arg-max at every text position (see the module's docstring)."""
    import torch

    language = model.get_input_embeddings()
    hidden = language.weight.shape[1]
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Linear) and module.out_features == hidden \
                    and not name.endswith("lm_head"):
                module.weight[dim] = 0  # nothing writes to dimension `dim` of the residual stream
                if module.bias is not None:
                    module.bias[dim] = 0
        language.weight[:, dim] = constant
        head = model.get_output_embeddings().weight
        head[:, dim] = 0
        head[sorted(tokens), dim] = constant
