"""The HTTP traffic of the ``openai-api`` model (:mod:`spatialprobe.models.openai_api`) with one
OpenAI-compatible server: a misbehaving server cannot make a wrong number.

* **In flight.** Requests run on one ``asyncio`` loop (``httpx.AsyncClient``), at most as many open
  as :class:`~spatialprobe.models.in_flight.InFlight` allows: adaptive from 32, halved on HTTP
  429/503, or fixed by ``concurrency``.
* **Timeout.** ``timeout`` bounds a whole request, from connecting to the last byte of its answer
  (a server that drips a byte every 0.1 s is cut off at ``timeout`` too); it counts as a failure.
* **Retries.** Timeouts, connection errors, HTTP 5xx, and an empty, null or unreadable answer are
  sent again up to ``retries`` times, waiting ``backoff`` seconds doubled at each; rate limits (HTTP
  429, 503) up to four times as often, waiting what their ``Retry-After`` asks (at most 60 s), else
  the backoff. Another
  status is refused at once with the server's own words. An answer still empty after the retries
  is None (the run records a parse failure), never cached.
* **Size.** An answer is read up to a bound (:func:`answer_bound`: 64 KiB, plus 4 KiB per
  ``max_tokens``, plus 512 bytes per character of an echoed prompt); past it, reading stops and the
  answer is what can be read of the reply up to there. A chat reply is cut at 64 characters per
  ``max_tokens``. Either is counted under ``truncated``.
* **First contact.** A server that refuses the first connection is one sentence at once, with no
  retry and no promise of a resume.
* **Secrets.** The key (read from the variable ``api_key_env`` names) is sent as a bearer token and
  never printed: every message passes :func:`redact` (the key's value, a URL's password, a bearer
  token, each as ``***``).
* **Counts.** :meth:`ServerClient.traffic`: requests sent, answered, cache hits, retries, failures
  by reason, truncated answers, tokens, requests/s and tokens/s, the concurrency reached.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from spatialprobe.errors import ModelLoadError, UsageError
from spatialprobe.extras import require
from spatialprobe.models.base import Progress
from spatialprobe.models.in_flight import InFlight, LoopThread
from spatialprobe.models.openai_cache import AnswerCache, request_key

RATE_LIMITS = (429, 503)
"""Statuses that say "fewer at once, later": they halve the requests in flight."""
RATE_LIMIT_TRIES = 4
"""A rate-limited request is re-sent up to this many times ``retries``."""
REPLY_CHARACTERS = 64
"""A chat reply is cut at this many characters per ``max_tokens`` (and counted as truncated)."""


class ServerClient:
    """One server's requests: sent at most as many at once as :attr:`in_flight` allows, each
    bounded in time and size, retried, counted, and answered from the cache where it holds them."""

    def __init__(self, base_url: str, api_key_env: str, concurrency: int | None, timeout: float, retries: int,
                 backoff: float, cache_dir: str):
        httpx = require("httpx", "api", "The openai-api model")
        self.base_url, self.api_key_env = base_url, api_key_env
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self._secret = _key(api_key_env) if api_key_env else ""
        self.in_flight = InFlight(concurrency)
        self.served: dict[str, Any] = {}
        """The served model's ``/models`` entry, part of every cache key (set by the adapter)."""
        self._loop = LoopThread()
        headers = {"Authorization": f"Bearer {self._secret}"} if self._secret else {}
        self._http = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(timeout),
                                       limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))
        self._counts: Counter[str] = Counter()
        self._times: list[float] = []  # the first request's start, the last answer's end
        self._lock = threading.Lock()
        self.cache = AnswerCache.at(cache_dir)

    # -- counts ------------------------------------------------------------------------------------
    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counts[key] += n

    def traffic(self) -> dict[str, Any]:
        """This client's requests: ``sent`` (HTTP attempts), ``answered``, ``cache_hits``,
        ``retries``, ``failures`` by reason (``429``, ``5xx``, ``connection``, ``timeout``, ``empty``,
        ``unreadable``), ``truncated`` answers, the tokens the server reported, and over the time
        from the first request to the last answer, requests and tokens per second."""
        with self._lock:
            counts, times = dict(self._counts), list(self._times)
        failures = {k.removeprefix("failure:"): v for k, v in sorted(counts.items()) if k.startswith("failure:")}
        seconds = (times[1] - times[0]) if len(times) == 2 else 0.0
        tokens = counts.get("completion_tokens", 0)

        def rate(n: int) -> float | None:
            return round(n / seconds, 3) if seconds > 0 else None

        return {"sent": counts.get("sent", 0), "answered": counts.get("answered", 0),
                "cache_hits": counts.get("cache_hits", 0), "retries": counts.get("retries", 0),
                "failures": failures, "truncated": counts.get("truncated", 0),
                "prompt_tokens": counts.get("prompt_tokens", 0), "completion_tokens": tokens,
                "seconds": round(seconds, 3), "requests_per_s": rate(counts.get("sent", 0)),
                "tokens_per_s": rate(tokens), "in_flight": self.in_flight.state()}

    def _timed(self, start: float, end: float) -> None:
        with self._lock:
            self._times = [min(self._times[0], start), max(self._times[1], end)] if self._times else [start, end]

    # -- requests ----------------------------------------------------------------------------------
    def first_contact(self, path: str) -> dict[str, Any]:
        """``GET path`` as the first request: a refused connection is one sentence at once."""
        answer = self._loop.run(self._request("GET", path, None, first=True))
        if answer is None:
            raise ModelLoadError(self.redact(f"the server at {self.base_url}{path} answered nothing usable."))
        return answer

    def send(self, path: str, bodies: Sequence[dict[str, Any]], progress: Progress | None
             ) -> list[dict[str, Any] | None]:
        """The first choice of each body's answer (None where the server answered nothing usable,
        after the retries): from the cache, else from the server, each answer committed to the
        cache as it arrives."""
        keys = [request_key(self.base_url, path, body, self.served) for body in bodies]
        found: dict[str, dict[str, Any] | None] = dict(self.cache.get_many(keys)) if self.cache else {}
        hits = sum(key in found for key in keys)
        self._count("cache_hits", hits)
        if progress and hits:
            progress(hits)
        todo = {key: body for key, body in zip(keys, bodies, strict=True) if key not in found}
        if todo:
            found.update(self._loop.run(self._fetch(path, todo, keys, progress)))
        return [found[key] for key in keys]

    async def _fetch(self, path: str, todo: Mapping[str, dict[str, Any]], keys: Sequence[str],
                     progress: Progress | None) -> dict[str, dict[str, Any] | None]:
        async def one(key: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
            answer = await self._request("POST", path, body)
            if answer is not None and self.cache:
                self.cache.put(key, answer)  # committed as it arrives: a kill loses nothing answered
            if progress:
                progress(keys.count(key))
            return key, answer

        tasks = [asyncio.ensure_future(one(key, body)) for key, body in todo.items()]
        try:
            return dict(await asyncio.gather(*tasks))
        finally:  # a refusal: what is still open is not waited for
            for task in tasks:
                task.cancel()

    async def _request(self, method: str, path: str, body: dict[str, Any] | None, first: bool = False
                       ) -> dict[str, Any] | None:
        """One request, re-sent after a failure that may pass; its first choice (the JSON itself for
        a GET), or None where every try was empty or unreadable."""
        import httpx

        url, last, attempt, reason = self.base_url + path, "", 0, ""
        while True:
            wait_s: float | None = None  # the server's Retry-After, where it gave one
            limited = False
            async with self.in_flight.slot():
                self._count("sent")
                start = time.monotonic()
                try:
                    status, headers, raw, cut = await self._attempt(method, url, body)
                except httpx.ConnectError as err:
                    if first:
                        raise ModelLoadError(self.redact(
                            f"nothing answers at {self.base_url} ({_first_line(err) or 'connection refused'}): "
                            "start the server, or give its address with --base-url.")) from None
                    reason, last = "connection", f"{type(err).__name__}: {_first_line(err)}"
                except (TimeoutError, httpx.TimeoutException):
                    reason, last = "timeout", f"no whole answer within {self.timeout:g} s"
                except httpx.TransportError as err:
                    reason, last = "connection", f"{type(err).__name__}: {_first_line(err)}"
                else:
                    self._timed(start, time.monotonic())
                    if status == 200:
                        answer, reason = self._read(raw, cut, body)
                        if answer is not None:
                            self.in_flight.answered()
                            return answer
                        last = f"an {reason} answer"
                    elif status in RATE_LIMITS or 500 <= status < 600:
                        reason, last, limited = ("429" if status == 429 else "5xx"), f"HTTP {status}", \
                            status in RATE_LIMITS
                        if limited:
                            self.in_flight.rate_limited()
                            wait_s = _retry_after(headers)
                    else:
                        raise self._refusal(status, raw, url)
            self._count(f"failure:{reason}")
            if attempt >= self.retries * (RATE_LIMIT_TRIES if limited else 1):
                break
            self._count("retries")
            backoff = self.backoff * 2 ** min(attempt, 4) if wait_s is None else wait_s
            await asyncio.sleep(backoff)  # the slot is free meanwhile
            attempt += 1
        if reason in ("empty", "unreadable"):
            return None
        answered_work = self._counts.get("answered", 0) - self._counts.get("listings", 0) + self._counts.get(
            "cache_hits", 0)
        kept = " (what it answered before is kept, so a rerun resumes from there)" if answered_work else ""
        raise ModelLoadError(self.redact(f"the server at {url} did not answer after {attempt + 1} tries "
                                         f"(last: {last}){kept}."))

    async def _attempt(self, method: str, url: str, body: dict[str, Any] | None
                       ) -> tuple[int, Mapping[str, str], bytes, bool]:
        """(status, headers, the answer's bytes up to its bound, whether it was cut there), the
        whole exchange, from connecting to the last byte, bounded by ``timeout``."""
        return await asyncio.wait_for(self._exchange(method, url, body), self.timeout)

    async def _exchange(self, method: str, url: str, body: dict[str, Any] | None
                        ) -> tuple[int, Mapping[str, str], bytes, bool]:
        bound = answer_bound(body)
        async with self._http.stream(method, url, json=body) as response:
            chunks, size, cut = [], 0, False
            async for chunk in response.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > bound:
                    cut = True
                    break
            return response.status_code, dict(response.headers), b"".join(chunks)[:bound], cut

    def _read(self, raw: bytes, cut: bool, body: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
        """(the answer, "") or (None, why it is no answer: ``empty`` or ``unreadable``). A reply
        longer than :data:`REPLY_CHARACTERS` a token, or an answer cut at its bound, is cut and
        counted once under ``truncated``."""
        if cut:
            data: Any = salvage(raw)
        else:
            try:
                data = json.loads(raw)
            except ValueError:
                data = None
        if not isinstance(data, dict):
            return None, "unreadable"
        if body is None:  # a GET: the listing itself
            self._count("answered")
            self._count("listings")  # not an answer to the work
            return data, ""
        choices = data.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else None
        if choice is None or not _text(choice):
            return None, "empty"
        choice, shortened = _bounded(choice, body)
        if cut or shortened:
            self._count("truncated")
        usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
        for key in ("prompt_tokens", "completion_tokens"):
            if isinstance(usage.get(key), int):
                self._count(key, usage[key])
        self._count("answered")
        return {**choice, "usage": usage or None}, ""

    # -- secrets -----------------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        """``text`` with the key's value, a URL's password and any bearer token as ``***``."""
        return redact(text, self._secret)

    def _refusal(self, status: int, raw: bytes, url: str) -> UsageError:
        """A status that no retry will change, as one sentence (the server's own words, cut short)."""
        detail = " ".join(raw.decode("utf-8", "replace").split())[:200]
        if status in (401, 403):
            where = f"the key in ${self.api_key_env}" if self.api_key_env else "no key (give --api-key-env VARIABLE)"
            return UsageError(self.redact(f"the server at {url} refused {where}: HTTP {status} {detail}"))
        return UsageError(self.redact(f"the server at {url} refused the request: HTTP {status} {detail}"))

    def close(self) -> None:
        try:
            self._loop.run(self._http.aclose())
        finally:
            self._loop.stop()
            if self.cache:
                self.cache.close()


def answer_bound(body: Mapping[str, Any] | None) -> int:
    """The most bytes of an answer read: 64 KiB, plus 4 KiB (64 bytes a token, 8 for JSON's
    escapes) per ``max_tokens``, plus 512 bytes per character of a prompt the server echoes."""
    body = body or {}
    tokens = int(body["max_tokens"]) if isinstance(body.get("max_tokens"), int) else 256
    echoed = len(str(body.get("prompt", ""))) if body.get("echo") else 0
    return 65536 + 4096 * tokens + 512 * echoed


def _bounded(choice: dict[str, Any], body: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """A chat choice whose reply is cut at :data:`REPLY_CHARACTERS` per ``max_tokens`` (and whether it was)."""
    message = choice.get("message")
    tokens = body.get("max_tokens")
    if not isinstance(message, dict) or not isinstance(tokens, int):
        return choice, False
    content, bound = str(message.get("content") or ""), REPLY_CHARACTERS * tokens
    if len(content) <= bound:
        return choice, False
    return {**choice, "message": {**message, "content": content[:bound]}}, True


def salvage(raw: bytes) -> dict[str, Any] | None:
    """What an answer cut at its bound said: the start of its first message's content (or completion
    text), as an answer of one choice; None where none can be read."""
    text = raw.decode("utf-8", "ignore")
    found = re.search(r'"(content|text)"\s*:\s*"', text)
    if found is None:
        return None
    rest = text[found.end():]
    end = re.search(r'(?<!\\)(\\\\)*"', rest)
    rest = rest[:end.start() + len(end.group(0)) - 1] if end else re.sub(r"\\u?[0-9a-fA-F]{0,3}$|\\$", "", rest)
    try:
        content = json.loads(f'"{rest}"')
    except ValueError:
        return None
    message = {"role": "assistant", "content": content}
    return {"choices": [{"message": message} if found.group(1) == "content" else {"text": content}]}


def _text(choice: Mapping[str, Any]) -> str:
    """A choice's reply: a chat message's content, or a completion's text (with its log-probabilities)."""
    message = choice.get("message")
    if isinstance(message, dict):
        return str(message.get("content") or "").strip()
    return str(choice.get("text") or "") if choice.get("text") is not None or choice.get("logprobs") else ""


def redact(text: str, secret: str = "") -> str:
    """``text`` without secrets: ``secret``'s value, a URL's ``user:password@``, a bearer token."""
    if secret:
        text = text.replace(secret, "***")
    text = re.sub(r"(?i)(bearer\s+)[^\s\"',;]+", r"\1***", text)
    return re.sub(r"(\w+://)[^/@\s]*@", r"\1***@", text)


def _key(variable: str) -> str:
    value = os.environ.get(variable, "")
    if not value:
        raise UsageError(f"--api-key-env {variable}: the environment variable {variable} is not set.")
    return value


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """The seconds a rate limit's ``Retry-After`` asks for (at most 60); None where it gives none
    (or an HTTP date): then the exponential backoff."""
    try:
        return min(60.0, max(0.0, float(headers["retry-after"])))
    except (KeyError, ValueError):
        return None


def _first_line(err: BaseException) -> str:
    return (str(err).splitlines() or [""])[0][:200]
