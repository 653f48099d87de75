"""The answer cache of the ``openai-api`` model: each answer committed, as it arrives, to an SQLite
file, keyed by everything that decides it.

The key (:func:`request_key`) is the SHA-256 of the endpoint, the served model as the server's
``/models`` names it (id, ``root``, owner: a model swapped behind the same name gets other keys), and
the request's whole JSON body: the messages with each image's bytes (its data URL), and the
decoding (``temperature``, ``max_tokens``, ``echo``, ``logprobs``). So a fresh run is never handed
another model's answers, nor answers decoded otherwise or about other images (the three ways
lm-eval's cache went wrong: its #3597, #3881 and #4006). The key's value is never part of it.
Only usable answers are stored: an empty or unreadable reply never is.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class AnswerCache:
    """Answers by request key in one SQLite table, each committed as it is stored."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT NOT NULL)")
        self._db.commit()
        self._lock = threading.Lock()  # one connection, shared by whichever thread asks

    @classmethod
    def at(cls, cache_dir: str) -> AnswerCache | None:
        """The cache in ``cache_dir`` (``""``: ``$SPATIALPROBE_HOME/cache``); None for ``off``."""
        if cache_dir == "off":
            return None
        if cache_dir:
            return cls(Path(cache_dir) / "openai-api.sqlite")
        from spatialprobe.store import home

        return cls(home() / "cache" / "openai-api.sqlite")

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        wanted, found = sorted(set(keys)), {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            with self._lock:
                rows = self._db.execute(f"SELECT key, answer FROM answers WHERE key IN "
                                        f"({','.join('?' * len(chunk))})", chunk).fetchall()
            found.update({key: json.loads(answer) for key, answer in rows})
        return found

    def put(self, key: str, answer: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?)", (key, json.dumps(answer)))
            self._db.commit()

    def close(self) -> None:
        self._db.close()


def request_key(base_url: str, path: str, body: Mapping[str, Any], served: Mapping[str, Any]) -> str:
    """SHA-256 of the request's content: where it goes, the served model's entry, and its canonical
    JSON body (never the key)."""
    text = json.dumps({"url": base_url.rstrip("/") + path, "served": dict(served), "body": dict(body)},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
