"""Find which phrases occur in plain-text corpora of any size (BookCorpus is about 5 GB).

Normalisation, applied to the phrases and to the corpus alike: Unicode lower-case, and every
run of whitespace (spaces, tabs, line breaks) becomes one space; a trailing ``.`` of a phrase
is dropped. Nothing else changes: punctuation stays, so ``a man drives the car`` matches
``A man\\n drives the CAR, then`` but not ``a man drives the carpet`` (a match must start and
end at a word boundary: the character before and after it is not a letter or digit).

The files are read in binary chunks (default 8 MiB) and decoded incrementally, so memory does
not grow with the file. The last ``longest phrase + 1`` characters of each chunk are carried
into the next one, so a phrase split by a chunk boundary is still found. One Aho-Corasick
automaton (pyahocorasick) scans each chunk for all phrases at once.

Resuming: after every chunk the state (per file: bytes done and the carried tail; the phrases
found so far and where) is written atomically to a small JSON file. Running again with the same
phrases continues where the last run stopped; a state file for other phrases is refused, or
with ``restart_stale`` replaced (``generalize`` does this: its state file belongs to its output).
"""

from __future__ import annotations

import codecs
import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from spatialprobe.errors import UsageError
from spatialprobe.extras import require
from spatialprobe.files import read_json, write_json

CHUNK_BYTES = 8 << 20


def normalize(text: str) -> str:
    """Lower-case and collapse whitespace runs to one space (keeps a leading/trailing space)."""
    text = text.lower()
    core = " ".join(text.split())
    if not core:
        return " " if text else ""
    lead = " " if text[:1].isspace() else ""
    trail = " " if text[-1:].isspace() else ""
    return lead + core + trail


def normalize_phrase(phrase: str) -> str:
    return normalize(phrase).strip().rstrip(".").strip()


@dataclass(frozen=True)
class FilterResult:
    """Which phrases were found, and where first."""

    found: dict[str, str]
    """Normalised phrase -> first location ``file:byte`` (byte offset of the chunk it was in)."""
    bytes_scanned: int
    """Bytes read in this call (0 when everything was already done)."""
    seconds: float
    """Wall time of this call."""


def _phrases_hash(phrases: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sorted(phrases)).encode()).hexdigest()[:16]


def build_automaton(phrases: Iterable[str]):
    ahocorasick = require("ahocorasick", "generalize", "The corpus filter")
    automaton = ahocorasick.Automaton()
    for phrase in phrases:
        automaton.add_word(phrase, phrase)
    automaton.make_automaton()
    return automaton


def _bounded(buffer: str, start: int, end: int) -> bool:
    """True if buffer[start:end+1] is not glued to a letter or digit on either side."""
    before = buffer[start - 1] if start > 0 else " "
    after = buffer[end + 1] if end + 1 < len(buffer) else " "
    return not before.isalnum() and not after.isalnum()


def scan_buffer(automaton, buffer: str, final: bool, carried: bool = False) -> Iterable[str]:
    """Phrases that occur in ``buffer`` at word boundaries.

    Unless ``final``, a match that ends on the buffer's last character is skipped: the next
    character is not known yet, and the carried tail lets the next chunk find it again.
    With ``carried`` (the buffer starts with a full-length tail of the previous buffer), a
    match that starts on the first character is skipped: the character before it is not known
    here, and the match, shorter than the tail, lay wholly inside the previous buffer, which
    already judged it.
    """
    last = len(buffer) - 1
    for end, phrase in automaton.iter(buffer):
        start = end - len(phrase) + 1
        if (end == last and not final) or (start == 0 and carried):
            continue
        if _bounded(buffer, start, end):
            yield phrase


class CorpusFilter:
    """Scan corpus files for ``phrases``; resumable through ``state_path``."""

    def __init__(self, phrases: Iterable[str], state_path: str | os.PathLike[str] | None = None,
                 chunk_bytes: int = CHUNK_BYTES, restart_stale: bool = False):
        self.phrases = sorted({normalize_phrase(p) for p in phrases if normalize_phrase(p)})
        self.automaton = build_automaton(self.phrases) if self.phrases else None
        self.keep = max((len(p) for p in self.phrases), default=0) + 1
        self.state_path = Path(state_path) if state_path else None
        if chunk_bytes < 4:  # a chunk must hold a whole UTF-8 character
            raise UsageError(f"chunk_bytes must be at least 4, not {chunk_bytes}.")
        self.chunk_bytes = chunk_bytes
        self.state = self._load_state(restart_stale)

    def _load_state(self, restart_stale: bool) -> dict:
        """The saved progress; one for other phrases is refused, or dropped if ``restart_stale``."""
        fresh = {"phrases_hash": _phrases_hash(self.phrases), "files": {}, "found": {}}
        if self.state_path is None or not self.state_path.exists():
            return fresh
        state = read_json(self.state_path)
        if state.get("phrases_hash") != fresh["phrases_hash"]:
            if restart_stale:
                return fresh
            raise UsageError(
                f"{self.state_path} holds the progress of a scan for other phrases; "
                f"delete it to start over.")
        return state

    def _save(self) -> None:
        if self.state_path is not None:
            write_json(self.state_path, self.state)

    def _file_state(self, path: Path) -> dict:
        key = str(path.resolve())
        size = path.stat().st_size
        entry = self.state["files"].get(key)
        if entry is None or entry["size"] != size:
            entry = {"size": size, "offset": 0, "tail": "", "done": False}
            self.state["files"][key] = entry
        return entry

    def scan(self, files: Sequence[str | os.PathLike[str]], progress=None) -> FilterResult:
        """Scan ``files`` (resuming where a previous run stopped) and return what was found.

        ``progress`` is called with the number of bytes just read.
        """
        import time

        begin, scanned = time.perf_counter(), 0
        paths = [Path(f) for f in files]
        for path in paths:
            if not path.is_file():
                raise FileNotFoundError(f"Corpus file not found: {path}")
        for path in paths:
            entry = self._file_state(path)
            if progress and entry["offset"]:
                progress(entry["offset"])
            if entry["done"] or self.automaton is None:
                if progress:
                    progress(entry["size"] - entry["offset"])
                entry["done"] = True
                continue
            scanned += self._scan_file(path, entry, progress)
        self._save()
        return FilterResult(dict(self.state["found"]), scanned, time.perf_counter() - begin)

    def _scan_file(self, path: Path, entry: dict, progress) -> int:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        found, scanned = self.state["found"], 0
        with open(path, "rb") as handle:
            handle.seek(entry["offset"])
            while True:
                chunk = handle.read(self.chunk_bytes)
                final = len(chunk) < self.chunk_bytes
                text = decoder.decode(chunk, final=final)
                buffer = normalize(entry["tail"] + text)
                # A full-length tail was cut from a longer buffer: what preceded it is unknown.
                carried = len(entry["tail"]) >= self.keep
                for phrase in scan_buffer(self.automaton, buffer, final, carried):
                    found.setdefault(phrase, f"{path.name}:{entry['offset']}")
                pending = len(decoder.getstate()[0])  # bytes of a character cut by the chunk
                entry["offset"] += len(chunk) - pending
                entry["tail"] = buffer[-self.keep:]
                scanned += len(chunk)
                if pending:  # re-read the cut character with the next chunk
                    handle.seek(entry["offset"])
                    decoder.reset()
                if final:
                    entry["done"] = True
                self._save()
                if progress:
                    progress(len(chunk) - pending)
                if final:
                    return scanned


def filter_phrases(phrases: Iterable[str], files: Sequence[str | os.PathLike[str]],
                   state_path: str | os.PathLike[str] | None = None, show_progress: bool = False,
                   chunk_bytes: int = CHUNK_BYTES, restart_stale: bool = False) -> FilterResult:
    """Scan ``files`` for ``phrases`` with a rich progress bar when ``show_progress``."""
    corpus = CorpusFilter(phrases, state_path, chunk_bytes=chunk_bytes, restart_stale=restart_stale)
    if not show_progress:
        return corpus.scan(files)
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    total = sum(Path(f).stat().st_size for f in files if Path(f).is_file())
    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), TimeRemainingColumn()) as bar:
        task = bar.add_task(f"scanning {len(files)} file(s)", total=total)
        return corpus.scan(files, progress=lambda n: bar.advance(task, n))

