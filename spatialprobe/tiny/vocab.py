"""Tokenizers built on the spot for the tiny models, with no download and no ../shared: a
vocabulary learnt (``tokenizers``) from the toolkit's own texts, so every prompt the toolkit
writes - the tasks' objects, templates and answer words, the chat formats, the benchmarks'
relation words and options - is covered (byte-level BPE covers any text at all)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

SPATIAL_WORDS = (
    "left right above below under on top of behind in front inside outside beside near far next to between "
    "over underneath across from facing away towards closer farther further camera viewer larger smaller "
    "taller shorter bigger heavier lighter yes no true false A B C D E F answer option options question "
    "image images picture photo scene object objects which one is the a an of to and or what where how many "
    "Is Are Which What Where Answer with letter the option's only first second third fourth map maze grid "
    "caption correct relation relative position direction north south east west up down cup box mug plate "
    "table chair dog cat car bus person man woman boy girl red green blue yellow purple orange circle square "
    "triangle star sphere cube cylinder Yes No True False USER ASSISTANT user assistant system"
)
"""Words of the benchmarks' questions and options beyond the task files (kept whole in the vocabularies)."""


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def toolkit_texts() -> list[str]:
    """Every string of the task files, their prompt candidates and the package's data files, and
    :data:`SPATIAL_WORDS`: what the toolkit's prompts are made of."""
    texts = [SPATIAL_WORDS]
    folders = [resources.files("spatialprobe.tasks"), resources.files("spatialprobe.tasks") / "candidates",
               resources.files("spatialprobe") / "data"]
    for folder in folders:
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".json"):
                texts.extend(_strings(json.loads(entry.read_text(encoding="utf-8"))))
            elif entry.name.endswith((".jsonl", ".tsv")):
                texts.extend(entry.read_text(encoding="utf-8").splitlines())
    return [" ".join(t.split()) for t in texts if t.strip()]


def words(texts: Sequence[str] = (), toolkit: bool = True) -> list[str]:
    """The distinct words and punctuation marks of ``texts`` (and, with ``toolkit``, of the toolkit's
    texts), lower-cased, sorted."""
    found: set[str] = set()
    for text in [*(toolkit_texts() if toolkit else ()), *texts]:
        found.update(re.findall(r"\w+|[^\w\s]", text.lower()))
    return sorted(found)


def byte_bpe(folder: Path, vocab_size: int = 3000, special_tokens: Sequence[str] = ("<|endoftext|>",),
             texts: Sequence[str] = (), toolkit: bool = True, repeat: int = 2) -> tuple[Path, Path]:
    """A byte-level BPE (GPT-2's and RoBERTa's kind) learnt from the toolkit's texts (with
    ``toolkit``) and ``texts``, each ``repeat`` times: ``vocab.json`` and ``merges.txt`` in
    ``folder``. Every text tokenizes (bytes at worst); the toolkit's words are mostly whole tokens."""
    from tokenizers import ByteLevelBPETokenizer

    folder.mkdir(parents=True, exist_ok=True)
    corpus = [*(toolkit_texts() if toolkit else ()), *texts]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus * repeat, vocab_size=vocab_size, min_frequency=1,
                            special_tokens=list(special_tokens), show_progress=False)
    bpe.save_model(str(folder))
    return folder / "vocab.json", folder / "merges.txt"


def wordpiece_file(folder: Path, specials: Sequence[str] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
                   texts: Sequence[str] = (), extra: Sequence[str] = ()) -> Path:
    """A BERT ``vocab.txt``: ``specials``, every word of the toolkit's texts (and ``texts``) whole,
    ``extra`` pieces, and every character alone and as a ``##`` piece, so an unseen word splits
    into pieces instead of becoming ``[UNK]``."""
    found = words(texts)
    chars = sorted({c for w in found for c in w})
    vocab = list(dict.fromkeys([*specials, *found, *extra, *chars, *(f"##{c}" for c in chars)]))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "vocab.txt"
    path.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return path


def word_level(vocabulary: Sequence[str], unk: str = "<unk>", lowercase: bool = False, split: str = "whitespace",
               post: tuple[str, int] | None = None, **special: Any) -> Any:
    """A fast tokenizer whose tokens are exactly ``vocabulary`` (one id per word, in order).

    ``split``: ``whitespace`` (words and punctuation apart), ``whitespace-split`` (on spaces only)
    or ``chars`` (every character a token); ``post``: an end token and its id appended to every text."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocabulary)}, unk_token=unk))
    if lowercase:
        backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = {"whitespace": pre_tokenizers.Whitespace(),
                             "whitespace-split": pre_tokenizers.WhitespaceSplit(),
                             "chars": pre_tokenizers.Split("", "isolated")}[split]
    if post is not None:
        backend.post_processor = processors.TemplateProcessing(single=f"$A {post[0]}", special_tokens=[post])
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token=unk, **special)


def clip_characters(folder: Path, max_length: int = 77) -> Any:
    """CLIP's BPE with no merges over every byte (GPT-2's byte table), alone and word-final: any text
    tokenizes, one token per character. Saved in ``folder``; the tokenizer is returned."""
    from transformers import CLIPTokenizer

    chars = list(_bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    tokenizer = CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=max_length)
    tokenizer.save_pretrained(str(folder))
    return tokenizer


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2/CLIP's reversible byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs), strict=True))
