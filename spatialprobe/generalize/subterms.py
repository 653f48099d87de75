"""Subterms of a word: ConceptNet IsA edges (conceptnet-lite) or WordNet hyponyms (nltk).

Both sources implement :class:`SubtermSource`: ``subterms(word)`` returns the more specific
terms of ``word`` (``woman`` -> ``enchantress``, ``car`` -> ``ambulance``), lower-case, with
underscores turned into spaces, sorted and without ``word`` itself.

Nothing is ever downloaded: conceptnet-lite's ``connect`` would fetch a 10 GB file when the
database is missing, and ``nltk.download`` would fetch WordNet, so both sources check that the
data is there first and say what to do when it is not.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Protocol

from spatialprobe.errors import DataError, UsageError
from spatialprobe.extras import require


class SubtermSource(Protocol):
    name: str

    def subterms(self, word: str) -> list[str]:
        """More specific terms of ``word``; empty if the word is unknown."""

    def describe(self) -> dict:
        """Source name, data path and settings, for the output's provenance."""


def _clean(term: str) -> str:
    return " ".join(term.replace("_", " ").lower().split())


class ConceptNetSubterms:
    """Start concepts of English ``IsA`` edges that end in ``word`` (``X IsA word``).

    ``depth`` > 1 follows IsA edges further down (subterms of subterms).
    """

    name = "conceptnet"

    def __init__(self, db_path: str | os.PathLike[str], depth: int = 1, language: str = "en"):
        path = Path(db_path).expanduser()
        if path.is_dir():
            path = path / "conceptnet.db"
        if not path.is_file():
            raise FileNotFoundError(
                f"ConceptNet database not found at {path}; download conceptnet.db as the "
                f"conceptnet-lite README describes and pass its path with --conceptnet.")
        conceptnet_lite = require("conceptnet_lite", "generalize", "ConceptNet subterms")
        _check_conceptnet_db(path)  # connect() would add empty tables to any other file
        conceptnet_lite.connect(str(path), db_download_url=None)
        self.path, self.depth, self.language = path, depth, language
        self._cache: dict[str, list[str]] = {}

    def _direct(self, word: str) -> list[str]:
        import peewee
        from conceptnet_lite import Label, Language, edges_to

        try:
            language = Language.get(name=self.language)
            label = Label.get(text=word.strip().lower().replace(" ", "_"), language=language)
        except peewee.DoesNotExist:
            return []
        concepts = list(label.concepts)
        if not concepts:
            return []
        found = set()
        for edge in edges_to(concepts, relation="is_a"):
            start = edge.start
            if start.label.language_id == language.id:
                found.add(_clean(start.text))
        return sorted(found)

    def subterms(self, word: str) -> list[str]:
        key = _clean(word)
        if key not in self._cache:
            self._cache[key] = _expand(key, self._direct, self.depth)
        return self._cache[key]

    def describe(self) -> dict:
        return {"source": self.name, "path": str(self.path.resolve()), "depth": self.depth,
                "language": self.language}


def _check_conceptnet_db(path: Path) -> None:
    """Refuse a file that is not a conceptnet-lite database, reading it only."""
    import sqlite3

    needed = {"relation", "language", "label", "concept", "edge"}
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as err:
        raise UsageError(f"{path} is not a conceptnet-lite database ({err}).") from None
    if not needed <= tables:
        raise UsageError(f"{path} is not a conceptnet-lite database (tables missing: "
                         f"{', '.join(sorted(needed - tables))}).")


def _expand(word: str, direct, depth: int) -> list[str]:
    """Terms reachable from ``word`` in 1..depth steps of ``direct``, breadth first."""
    seen: set[str] = set()
    frontier = [word]
    for _ in range(max(depth, 1)):
        nxt = []
        for term in frontier:
            for sub in direct(term):
                if sub != word and sub not in seen:
                    seen.add(sub)
                    nxt.append(sub)
        frontier = nxt
    return sorted(seen)


def _wordnet_zip_root(path: Path) -> str | None:
    """``ZIP/wordnet/`` if ``path`` is a zip (as nltk's downloader may leave it) holding WordNet."""
    import zipfile

    if not zipfile.is_zipfile(path):
        return None
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
    for inner in ("wordnet/", ""):
        if f"{inner}index.noun" in names:
            return f"{path}/{inner}"
    return None


def find_wordnet(root: str | os.PathLike[str] | None = None) -> Path:
    """The WordNet data: ``root`` if given, else ``corpora/wordnet`` (or ``wordnet.zip``) on nltk's path.

    A directory holding ``index.noun`` or a zip of one (nltk's ``corpora/wordnet.zip``).
    """
    if root is not None:
        path = Path(root).expanduser()
        if not ((path / "index.noun").is_file() or (path.is_file() and _wordnet_zip_root(path))):
            raise FileNotFoundError(
                f"No WordNet data in {path} (index.noun missing); pass the directory that holds "
                f"index.noun and data.noun, e.g. ~/nltk_data/corpora/wordnet, or nltk's wordnet.zip.")
        return path
    nltk = require("nltk", "generalize", "WordNet subterms")

    for base in nltk.data.path:
        candidate = Path(base) / "corpora" / "wordnet"
        if (candidate / "index.noun").is_file():
            return candidate
        archive = candidate.with_suffix(".zip")
        if archive.is_file() and _wordnet_zip_root(archive):
            return archive
    raise FileNotFoundError(
        "WordNet data not found on nltk's data path; on a machine with network run "
        "`python -m nltk.downloader wordnet` and pass the directory or wordnet.zip with --wordnet.")


class WordNetSubterms:
    """Hyponyms of the first ``senses`` noun senses of a word (WordNet lists senses by frequency).

    ``depth`` levels of hyponyms are followed (1 = direct hyponyms); every lemma name of a
    hyponym synset is a subterm. Instance hyponyms are not: they name individuals (Lascaux is
    a cave, not a kind of cave), which would read "the lascaux" in a scenario.
    """

    name = "wordnet"

    def __init__(self, root: str | os.PathLike[str] | None = None, depth: int = 1, senses: int = 1):
        require("nltk", "generalize", "WordNet subterms")
        from nltk.corpus.reader.wordnet import WordNetCorpusReader

        self.root = find_wordnet(root)
        import nltk

        # nltk reads only from directories on its data path; the user named this one.
        folder = self.root.resolve() if self.root.is_dir() else self.root.resolve().parent
        if str(folder) not in map(str, nltk.data.path):
            nltk.data.path.append(str(folder))
        reader_root = str(self.root) if self.root.is_dir() else _wordnet_zip_root(self.root.resolve())

        class _EnglishOnly(WordNetCorpusReader):
            def map_wn(self, version="wordnet"):
                return None  # the OMW mapping loads a second corpus; English needs none

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "multilingual functions are not available"
            try:
                self.reader = _EnglishOnly(reader_root, None)
            except (OSError, LookupError, ValueError) as err:  # lexnames or another file missing or broken
                raise DataError(self.root, None, None, f"not a complete WordNet data directory ({err}); "
                                "pass nltk's corpora/wordnet or wordnet.zip as downloaded") from None
        self.depth, self.senses = depth, senses
        self._cache: dict[str, list[str]] = {}

    def subterms(self, word: str) -> list[str]:
        key = _clean(word)
        if key in self._cache:
            return self._cache[key]
        synsets = self.reader.synsets(key.replace(" ", "_"), pos="n")[: max(self.senses, 1)]
        found: set[str] = set()
        frontier = list(synsets)
        for _ in range(max(self.depth, 1)):
            nxt = []
            for synset in frontier:
                for hyponym in synset.hyponyms():
                    nxt.append(hyponym)
                    found.update(_clean(name) for name in hyponym.lemma_names())
            frontier = nxt
        found.discard(key)
        self._cache[key] = sorted(found)
        return self._cache[key]

    def describe(self) -> dict:
        return {"source": self.name, "path": str(self.root.resolve()), "depth": self.depth,
                "senses": self.senses}
