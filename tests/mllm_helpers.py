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

from pathlib import Path

from spatialprobe.tiny.chat_models import shrink  # noqa: F401 (tests and benches import it from here)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "models"

FOLDERS = {"llava": "llava-1.5-7b-hf", "smolvlm": "smolvlm-256m-instruct",
           "mllama": "llama-3.2-11b-vision-instruct", "qwen2.5-vl": "qwen2.5-vl-3b-instruct"}


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
    """A tiny random ``family`` model with its genuine processor files, saved in ``directory``
    (:func:`spatialprobe.tiny.chat_models.from_genuine`; ``tiles`` and ``split`` are its), wired by
    :func:`bias_toward` to answer ``bias_word`` where one is given."""
    from spatialprobe.tiny.chat_models import from_genuine

    folder = SHARED / FOLDERS[family]
    wire = None if bias_word is None else (lambda model: bias_toward(model, first_tokens(folder, bias_word)))
    return from_genuine(family, folder, directory, seed, tiles, split, wire)


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
