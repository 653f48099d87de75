"""The HTTP traffic of the ``openai-api`` model (:mod:`spatialprobe.models.openai_api`) with one
OpenAI-compatible server, and the cache of its answers.

* **Traffic.** At most ``concurrency`` requests in flight (a thread pool over one ``httpx``
  client); HTTP 429, 5xx, connection errors and timeouts are retried up to ``retries`` times,
  waiting ``backoff`` seconds, doubled at each retry (a longer ``Retry-After`` is honoured, up to
  60 s); other statuses are refused at once. Every attempt, failure and cache hit is counted
  (:meth:`ServerClient.traffic`).
* **Cache.** Each answer is committed, as it arrives, to an SQLite file (``cache_dir``, default
  ``$SPATIALPROBE_HOME/cache``, file ``openai-api.sqlite``) keyed by the SHA-256 of the request's
  content (base URL, endpoint, JSON body: model, messages with the image's bytes, decoding): a
  rerun, or a resume after the server or the run died, sends nothing already answered.
* **Key.** ``api_key_env`` names an environment variable; its value is read here and sent as a
  bearer token, never recorded (not in the cache key, not in an error).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from spatialprobe.errors import ModelLoadError, UsageError
from spatialprobe.extras import require
from spatialprobe.models.base import Progress


class ServerClient:
    """One server's requests: sent at most ``concurrency`` at a time, retried with exponential
    backoff, counted, and answered from the :class:`AnswerCache` where it holds them."""

    def __init__(self, base_url: str, api_key_env: str, concurrency: int, timeout: float, retries: int,
                 backoff: float, cache_dir: str):
        httpx = require("httpx", "api", "The openai-api model")
        self.base_url = base_url
        self.concurrency, self.timeout, self.retries, self.backoff = concurrency, timeout, retries, backoff
        headers = {"Authorization": f"Bearer {_key(api_key_env)}"} if api_key_env else {}
        self.api_key_env = api_key_env
        self._http = httpx.Client(headers=headers, timeout=timeout, limits=httpx.Limits(max_connections=concurrency))
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.cache = AnswerCache.at(cache_dir)

    def traffic(self) -> dict[str, Any]:
        """Counts of this client's requests: ``sent`` (HTTP attempts), ``answered``,
        ``cache_hits``, ``retries`` and ``failures`` by reason (``429``, ``5xx``, ``connection``,
        ``timeout``)."""
        with self._lock:
            counts = dict(self._counts)
        failures = {k.removeprefix("failure:"): v for k, v in sorted(counts.items()) if k.startswith("failure:")}
        return {"sent": counts.get("sent", 0), "answered": counts.get("answered", 0),
                "cache_hits": counts.get("cache_hits", 0), "retries": counts.get("retries", 0),
                "failures": failures}

    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counts[key] += n

    def send(self, path: str, bodies: Sequence[dict[str, Any]], progress: Progress | None
              ) -> list[dict[str, Any]]:
        """The first choice of each body's answer: from the cache, else from the server (at most
        ``concurrency`` in flight), each answer committed to the cache as it arrives."""
        keys = [request_key(self.base_url, path, body) for body in bodies]
        found: dict[str, dict[str, Any]] = self.cache.get_many(keys) if self.cache else {}
        self._count("cache_hits", sum(key in found for key in keys))
        if progress and found:
            progress(sum(key in found for key in keys))
        todo = {key: body for key, body in zip(keys, bodies, strict=True) if key not in found}
        if todo:
            found.update(self._fetch(path, todo, keys, progress))
        return [found[key] for key in keys]

    def _fetch(self, path: str, todo: dict[str, dict[str, Any]], keys: Sequence[str],
               progress: Progress | None) -> dict[str, dict[str, Any]]:
        got: dict[str, dict[str, Any]] = {}
        with ThreadPoolExecutor(self.concurrency) as pool:
            pending: dict[Future[Any], str] = {pool.submit(self._first_choice, path, body): key
                                               for key, body in todo.items()}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        key = pending.pop(future)
                        got[key] = future.result()  # raises the request's refusal
                        if self.cache:
                            self.cache.put(key, got[key])
                        if progress:
                            progress(keys.count(key))
            finally:  # what was in flight still lands in the cache before the error propagates
                for future in pending:
                    future.cancel()
                for future, key in pending.items():
                    if not future.cancelled() and future.exception() is None and self.cache:
                        self.cache.put(key, future.result())
        return got

    def _first_choice(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.request("POST", path, body)
        choices = answer.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            raise ModelLoadError(f"the server at {self.base_url} answered {path} with no choices.")
        return {**choices[0], "usage": answer.get("usage")}

    def request(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        """One request, re-sent after a retryable failure with exponential backoff; its JSON."""
        import httpx

        url = self.base_url + path
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self._count("retries")
            self._count("sent")
            try:
                response = self._http.request(method, url, json=body)
            except httpx.TimeoutException:
                reason, wait_s, last = "timeout", 0.0, f"no answer within {self.timeout:g} s"
            except httpx.TransportError as err:
                reason, wait_s, last = "connection", 0.0, f"{type(err).__name__}: {err}"
            else:
                if response.status_code == 200:
                    self._count("answered")
                    return _json(response, url)
                retryable = _retryable(response.status_code)
                if retryable is None:
                    raise _refusal(response, url, self.api_key_env)
                reason, wait_s, last = retryable, _retry_after(response), f"HTTP {response.status_code}"
            self._count(f"failure:{reason}")
            if attempt < self.retries:
                time.sleep(max(self.backoff * 2 ** attempt, wait_s))
        raise ModelLoadError(f"the server at {url} did not answer after {self.retries + 1} tries (last: {last}); "
                             "what it answered before is cached, so a rerun resumes from there.")

    def close(self) -> None:
        self._http.close()
        if self.cache:
            self.cache.close()


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


def request_key(base_url: str, path: str, body: dict[str, Any]) -> str:
    """SHA-256 of the request's content: where it goes and its canonical JSON body (never the key)."""
    text = json.dumps({"url": base_url.rstrip("/") + path, "body": body}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _key(variable: str) -> str:
    value = os.environ.get(variable, "")
    if not value:
        raise UsageError(f"--scorer-arg api_key_env={variable}: the environment variable {variable} is not set.")
    return value


def _retryable(status: int) -> str | None:
    return "429" if status == 429 else "5xx" if 500 <= status < 600 else None


def _retry_after(response: Any) -> float:
    try:
        return min(60.0, max(0.0, float(response.headers.get("retry-after", 0))))
    except ValueError:  # an HTTP date: fall back on the backoff
        return 0.0


def _json(response: Any, url: str) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        raise ModelLoadError(f"the server at {url} answered with something that is not JSON.") from None
    if not isinstance(data, dict):
        raise ModelLoadError(f"the server at {url} answered with JSON that is not an object.")
    return data


def _refusal(response: Any, url: str, api_key_env: str) -> UsageError:
    """A status that no retry will change, as one sentence (the server's own words, cut short)."""
    detail = " ".join(response.text.split())[:200]
    if response.status_code in (401, 403):
        where = f"the key in ${api_key_env}" if api_key_env else "no key (give --scorer-arg api_key_env=VARIABLE)"
        return UsageError(f"the server at {url} refused {where}: HTTP {response.status_code} {detail}")
    return UsageError(f"the server at {url} refused the request: HTTP {response.status_code} {detail}")

