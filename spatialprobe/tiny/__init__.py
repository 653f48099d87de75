"""Tiny UNTRAINED models of every family the toolkit asks, built offline (``spatialprobe models
tiny FAMILY --out DIR``): random weights of the real architecture, a tokenizer learnt from the
toolkit's own texts and an image processor of explicit sizes, saved with ``save_pretrained`` so
they load through the same public path as a real checkpoint. Their numbers mean nothing: the
folder holds :data:`MARKER` saying so, and every run of such a folder is marked untrained
(:func:`untrained`), as runs of ``--model dummy`` are. The tests build their models here too.

A family is one line of :data:`FAMILIES` (its builder, imported when used)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MARKER = "UNTRAINED.md"
"""The file in a tiny model's folder that says it is untrained (and how it was built)."""


@dataclass(frozen=True)
class Family:
    """One family ``models tiny`` builds."""

    builder: str
    """``module:function`` of :mod:`spatialprobe.tiny` taking ``(folder, seed=...)``, with fixed keyword arguments."""
    what: str
    """What it is and which adapter asks it (``spatialprobe ls``)."""
    asks: str
    """A command that asks it, for the folder's note (``MODEL`` is the folder)."""
    args: tuple[tuple[str, Any], ...] = ()


FAMILIES = {
    "bert": Family("text:bert", "masked LM (BERT, WordPiece): the hf-mlm adapter",
                   "spatialprobe probe size --model MODEL"),
    "roberta": Family("text:roberta", "masked LM (RoBERTa, byte-level BPE): the hf-mlm adapter",
                      "spatialprobe probe size --model MODEL"),
    "gpt2": Family("text:gpt2", "causal LM with a chat template (GPT-2, byte-level BPE): the hf-causal adapter, "
                   "plain or --scorer-arg format=chat", "spatialprobe bench posqa --demo --model MODEL"),
    "t5": Family("text:t5", "seq2seq yes/no answerer (T5, word-level): the t5 adapter",
                 "spatialprobe qa text --model MODEL"),
    "clip": Family("image_text:clip", "contrastive image-text (CLIP): the contrastive adapter",
                   "spatialprobe vsr --demo --model MODEL"),
    "siglip": Family("image_text:siglip", "contrastive image-text (SigLIP, sigmoid scores): the contrastive adapter",
                     "spatialprobe bench whatsup --demo --model MODEL"),
    "vilt": Family("image_text:vilt", "ViLT masked LM (probes with an image): the vilt adapter",
                   "spatialprobe probe size --model MODEL"),
    "vilt-vqa": Family("image_text:vilt", "ViLT visual question answering (yes/no classes): the vilt-vqa adapter",
                       "spatialprobe qa image --model MODEL", (("head", "vqa"),)),
    "llava": Family("chat_models:llava", "multimodal LLM (LLaVA: CLIP vision + Llama, LLaVA-1.5 chat template): "
                    "the hf-mllm adapter", "spatialprobe bench cv-bench --demo --model MODEL"),
    "smolvlm": Family("chat_models:smolvlm", "multimodal LLM (SmolVLM / Idefics3: pixel-shuffled vision + Llama, "
                      "SmolVLM's chat template): the hf-mllm adapter", "spatialprobe bench blink --demo --model MODEL"),
}
"""Every family ``spatialprobe models tiny`` builds."""


def build(family: str, folder: Path, seed: int = 0) -> Path:
    """The tiny untrained ``family`` model saved in ``folder`` with its :data:`MARKER` note."""
    from spatialprobe.errors import UsageError

    if family not in FAMILIES:
        raise UsageError(f"no tiny model family {family!r}; the families are: {', '.join(FAMILIES)}")
    spec = FAMILIES[family]
    module, _, function = spec.builder.partition(":")
    builder: Callable[..., Path] = getattr(importlib.import_module(f"spatialprobe.tiny.{module}"), function)
    folder.mkdir(parents=True, exist_ok=True)
    builder(folder, seed=seed, **dict(spec.args))
    write_marker(folder, family, seed)
    return folder


def write_marker(folder: Path, family: str, seed: int) -> Path:
    """The note that says the folder's model is untrained, how it was built and how to try it."""
    from spatialprobe import __version__

    spec = FAMILIES[family]
    path = folder / MARKER
    path.write_text(
        f"# UNTRAINED tiny {family} model\n\n"
        f"Built by `spatialprobe models tiny {family}` (spatialprobe {__version__}, seed {seed}): {spec.what}.\n"
        "Its weights are random and its tokenizer was learnt from the toolkit's own texts; nothing was\n"
        "downloaded. Its numbers mean NOTHING: it is for trying the toolkit offline, end to end.\n"
        "Every run of this folder is marked untrained in its summary and table.\n\n"
        f"Try it: `{spec.asks.replace('MODEL', str(folder))}`\n", encoding="utf-8")
    return path


def untrained(model: str) -> bool:
    """Whether ``model`` names a local folder holding :data:`MARKER` (a tiny model built here)."""
    try:
        return (Path(model) / MARKER).is_file()
    except (OSError, ValueError):
        return False
