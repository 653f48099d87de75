"""Any OpenAI-compatible server as a model: vLLM, SGLang, LMDeploy, TGI, ``transformers serve``,
hosted APIs. One adapter, the one vocabulary of :mod:`spatialprobe.models.base`.

* :meth:`OpenAIServer.generate`: ``POST {base_url}/chat/completions``, one user turn (the image
  first, as a base64 PNG data URL, then the text; the text alone when the request has no image),
  greedy (``temperature`` 0), ``max_tokens`` = the request's ``max_new_tokens``. The reply is cut
  at the request's first ``stop`` string here, as the in-process adapters cut theirs; ``stop`` is
  not sent, because servers differ on it (``transformers serve`` 5.24 answers HTTP 500 to a stop
  string for a multimodal processor; some keep the stop string in the reply, OpenAI takes at
  most 4) and greedy text up to the stop string is the same either way. The server applies the
  model's own chat template, so against ``transformers serve`` the replies equal ``hf-mllm``'s.
* :meth:`OpenAIServer.score`: ``POST {base_url}/completions`` with ``echo`` and ``logprobs``, the
  prompt ``context + option + suffix`` as plain text (no chat template: the endpoint takes text
  only; the context's trailing spaces go with the option, as lm-eval splits them), and the
  option's score the sum of the log-probabilities of the prompt's tokens after the context's
  tokens, as lm-eval's ``local-completions`` scores. How many tokens the context has is the
  ``usage.prompt_tokens`` of the context sent alone (one request per distinct context), never
  the echoed ``text_offset``, which vLLM counts in raw token strings (``▁larger``), not characters. vLLM returns the
  prompt's log-probabilities; a server that does not (``transformers serve`` ignores ``echo`` and
  ``logprobs``) is refused in one sentence, never given numbers of our making. A request with an
  image is refused the same way (``/completions`` takes no image).
* **Traffic.** At most ``concurrency`` requests in flight (a thread pool over one ``httpx``
  client); HTTP 429, 5xx, connection errors and timeouts are retried up to ``retries`` times,
  waiting ``backoff`` seconds, doubled at each retry (a longer ``Retry-After`` is honoured, up to
  60 s); other statuses are refused at once. Every attempt, failure and cache hit is counted
  (:meth:`OpenAIServer.traffic`, also under ``requests`` in :meth:`describe`, so a run's summary
  shows them).
* **Cache.** Each answer is committed, as it arrives, to an SQLite file (``cache_dir``, default
  ``$SPATIALPROBE_HOME/cache``, file ``openai-api.sqlite``) keyed by the SHA-256 of the request's
  content (base URL, endpoint, JSON body: model, messages with the image's bytes, decoding): a
  rerun, or a resume after the server or the run died, sends nothing already answered.
* **Key.** ``api_key_env`` names an environment variable; its value is read here and sent as a
  bearer token, never recorded (not in :meth:`describe`, not in the cache key, not in an error).
* **Identity.** :meth:`fingerprint`: the endpoint and the served model's entry of
  ``GET {base_url}/models`` (id, owner, vLLM's ``root``); a server holds no weights hash to give.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, ClassVar

from spatialprobe.errors import ModelLoadError, UsageError
from spatialprobe.extras import require
from spatialprobe.models.base import Declared, GenerateRequest, Option, Progress, ScoreRequest, cut

RETRIED = "HTTP 429, HTTP 5xx, connection errors and timeouts"
MODEL_FIELDS = ("id", "owned_by", "root", "parent", "max_model_len")
"""The fields of a ``/models`` entry that say which model it is (``created`` changes per start)."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class OpenAIServer(Declared):
    """A model behind an OpenAI-compatible HTTP server, named ``model`` (or ``served_model``) there."""
    gpus: ClassVar[int] = 0

    name = "openai-api"
    protocols: ClassVar[tuple[str, ...]] = ("score", "generate")
    """``generate`` on any server; ``score`` where ``/completions`` returns prompt log-probabilities."""
    sees_images: ClassVar[bool] = True
    wordings: ClassVar[tuple[str, ...]] = ("question",)
    """A chat server is asked the question (what the ask kind assumed where none was declared)."""
    """Through ``generate`` (a data URL in the chat turn); ``score`` refuses an image."""
    options: ClassVar[dict[str, Option]] = {
        "base_url": Option(str, "http://127.0.0.1:8000/v1", "the server's OpenAI API root (ends in /v1)"),
        "served_model": Option(str, "", "the model's name on the server; empty: the --model value"),
        "api_key_env": Option(str, "", "the NAME of the environment variable holding the key; empty: none"),
        "concurrency": Option(int, 8, "requests in flight at most"),
        "timeout": Option(float, 120.0, "seconds one request may take before it is retried"),
        "retries": Option(int, 4, f"re-sends of a request after {RETRIED}"),
        "backoff": Option(float, 1.0, "seconds before the first re-send, doubled at each"),
        "cache_dir": Option(str, "", "folder of the answer cache; empty: $SPATIALPROBE_HOME/cache; off: none"),
    }
    runtime_options: ClassVar[tuple[str, ...]] = ("concurrency", "timeout", "retries", "backoff", "cache_dir")
    """Options that say how requests travel, never what comes back: a run's runtime, not its identity."""

    def __init__(self, model: str, base_url: str = "http://127.0.0.1:8000/v1", served_model: str = "",
                 api_key_env: str = "", concurrency: int = 8, timeout: float = 120.0, retries: int = 4,
                 backoff: float = 1.0, cache_dir: str = "", device: str = "auto", batch_size: int = 8):
        httpx = require("httpx", "api", "The openai-api model")
        _check(base_url, api_key_env, concurrency, timeout, retries, backoff, device)
        self.base_url, self.model_name = base_url.rstrip("/"), served_model or str(model)
        self.concurrency, self.timeout, self.retries, self.backoff = concurrency, timeout, retries, backoff
        self.batch_size = batch_size  # the run hands this many requests over at a time
        headers = {"Authorization": f"Bearer {_key(api_key_env)}"} if api_key_env else {}
        self.api_key_env = api_key_env
        self._client = httpx.Client(headers=headers, timeout=timeout,
                                    limits=httpx.Limits(max_connections=concurrency))
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.cache = AnswerCache.at(cache_dir)
        self._served = self._served_entry()

    # -- identity --------------------------------------------------------------------------------
    def _served_entry(self) -> dict[str, Any]:
        """The served model's entry of ``GET /models``; refused when the server does not serve it."""
        listed = self._request("GET", "/models", None).get("data") or []
        entry = next((m for m in listed if isinstance(m, dict) and m.get("id") == self.model_name), None)
        if entry is None:
            names = ", ".join(str(m.get("id")) for m in listed if isinstance(m, dict)) or "none"
            raise UsageError(f"the server at {self.base_url} does not serve {self.model_name!r} (it serves: "
                             f"{names}); give its served name with --scorer-arg served_model=NAME.")
        return {key: entry[key] for key in MODEL_FIELDS if key in entry}

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the model: the endpoint and the served model's entry (no weights hash)."""
        return {"endpoint": self.base_url, "served_model": self._served}

    def describe(self) -> dict[str, Any]:
        """What changes the numbers (endpoint, served model, prompt, decoding), and this
        invocation's traffic under ``requests`` (not part of a run's identity)."""
        return {"scorer": self.name, "model": self.model_name, **self.fingerprint(), "weights_sha256": None,
                "prompt": "generate: the server's chat template, one user turn (image as a PNG data URL, then "
                          "text); score: context + option + suffix as plain text to /completions",
                "score": "log-likelihood: the sum of the echoed prompt log-probabilities of the tokens after "
                         "the context's (usage.prompt_tokens of the context alone)",
                "decoding": {"temperature": 0, "max_tokens": "each request's max_new_tokens"},
                "api_key_env": self.api_key_env or None, "requests": self.traffic()}

    def runtime(self) -> dict[str, Any]:
        """How requests travel (changes no answer)."""
        return {"concurrency": self.concurrency, "timeout": self.timeout, "retries": self.retries,
                "backoff": self.backoff, "cache": str(self.cache.path) if self.cache else "off",
                "requests": self.traffic()}

    def traffic(self) -> dict[str, Any]:
        """Counts of this adapter's requests: ``sent`` (HTTP attempts), ``answered``,
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

    # -- the two protocols -----------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[str]:
        """The greedy reply to each request, in request order, cut at its first stop string."""
        bodies = [self._chat_body(r) for r in requests]
        answers = self._send("/chat/completions", bodies, progress)
        return [cut(str((a.get("message") or {}).get("content") or ""), r.stop)
                for a, r in zip(answers, requests, strict=True)]

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        """Each option's log-likelihood as the continuation of the request's context."""
        if any(r.image is not None for r in requests):
            raise UsageError(f"the {self.name} model scores options through /completions, which takes no "
                             "image: ask items with images by --protocol generate.")
        cells = [_split(self._context(r), o + r.suffix) for r in requests for o in r.options]
        contexts = list(dict.fromkeys(c for c, _ in cells))
        answers = self._send("/completions", [self._echo_body(p) for p in contexts + [c + t for c, t in cells]], None)
        context_tokens = {c: len(self._prompt_logprobs(a, c)) for c, a in zip(contexts, answers, strict=False)}
        flat = [self._continuation_logprob(a, c + t, context_tokens[c])
                for a, (c, t) in zip(answers[len(contexts):], cells, strict=True)]
        out, at = [], 0
        for r in requests:
            out.append(tuple(flat[at:at + len(r.options)]))
            at += len(r.options)
        if progress:
            progress(len(requests))
        return out

    @staticmethod
    def _context(request: ScoreRequest) -> str:
        return f"{request.passage}\n\n{request.prefix}" if request.passage else request.prefix

    def _chat_body(self, request: GenerateRequest) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": png_data_url(request.image)}}] \
            if request.image is not None else []
        content.append({"type": "text", "text": request.prompt})
        body: dict[str, Any] = {"model": self.model_name, "messages": [{"role": "user", "content": content}],
                                "temperature": 0, "max_tokens": request.max_new_tokens}
        return body  # no "stop": the reply is cut here (see the module's docstring)

    def _echo_body(self, prompt: str) -> dict[str, Any]:
        return {"model": self.model_name, "prompt": prompt, "max_tokens": 1, "temperature": 0, "echo": True,
                "logprobs": 1}

    def _prompt_logprobs(self, answer: dict[str, Any], prompt: str) -> list[float | None]:
        """The log-probability of each of the prompt's tokens (``usage.prompt_tokens`` of them);
        refused where the server returned none."""
        values = (answer.get("logprobs") or {}).get("token_logprobs")
        count = (answer.get("usage") or {}).get("prompt_tokens")
        if not values or not isinstance(count, int) or len(values) < count \
                or not str(answer.get("text", "")).startswith(prompt):
            raise UsageError(f"the server at {self.base_url} returned no prompt log-probabilities from "
                             "/completions (it ignores echo and logprobs, as transformers serve does), so the "
                             f"{self.name} model cannot score options there: use --protocol generate, or a "
                             "server that returns them (vLLM does).")
        return list(values[:count])

    def _continuation_logprob(self, answer: dict[str, Any], prompt: str, context_tokens: int) -> float:
        """The sum of the log-probabilities of the prompt's tokens after the context's
        ``context_tokens`` (the continuation is what follows the context's tokens, as the causal
        adapter splits it)."""
        picked = self._prompt_logprobs(answer, prompt)[context_tokens:]
        if not picked or any(v is None for v in picked):
            raise UsageError(f"the server at {self.base_url} gave the option in {prompt!r} no token of its own "
                             "with a log-probability (its text merged into the context's last token?); it "
                             "cannot be scored.")
        return float(sum(v for v in picked if v is not None))

    # -- transport ---------------------------------------------------------------------------------
    def _send(self, path: str, bodies: Sequence[dict[str, Any]], progress: Progress | None
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
        answer = self._request("POST", path, body)
        choices = answer.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            raise ModelLoadError(f"the server at {self.base_url} answered {path} with no choices.")
        return {**choices[0], "usage": answer.get("usage")}

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        """One request, re-sent after a retryable failure with exponential backoff; its JSON."""
        import httpx

        url = self.base_url + path
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self._count("retries")
            self._count("sent")
            try:
                response = self._client.request(method, url, json=body)
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
        self._client.close()
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


def png_data_url(image: Any) -> str:
    """The image (a PIL image or a path) as ``data:image/png;base64,...``: lossless, RGB as the
    in-process adapters see it."""
    from spatialprobe.vision import open_image

    buffer = io.BytesIO()
    open_image(image).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _check(base_url: str, api_key_env: str, concurrency: int, timeout: float, retries: int, backoff: float,
           device: str) -> None:
    """Each setting out of range refused in one sentence (the key's variable never echoed)."""
    if not re.match(r"https?://[^/@\s]+(/|$)", base_url):
        raise UsageError(f"--scorer-arg base_url is an http(s) URL without credentials, such as "
                         f"http://127.0.0.1:8000/v1, not {base_url!r}.")
    if api_key_env and not _ENV_NAME.fullmatch(api_key_env):
        raise UsageError("--scorer-arg api_key_env takes the NAME of an environment variable (such as "
                         "OPENAI_API_KEY), never the key itself; this value is not a variable name.")
    for key, value, least in (("concurrency", concurrency, 1), ("retries", retries, 0)):
        if value < least:
            raise UsageError(f"--scorer-arg {key}={value}: it must be at least {least}.")
    for key, number in (("timeout", timeout), ("backoff", backoff)):
        if not number >= 0 or (key == "timeout" and number == 0):
            raise UsageError(f"--scorer-arg {key}={number}: it must be a positive number of seconds.")
    if device not in ("auto", "cpu"):
        raise UsageError(f"--device {device} does not apply to the openai-api model: it runs on its server.")


def _split(context: str, continuation: str) -> tuple[str, str]:
    """(context, continuation) as lm-eval splits them: the context's trailing spaces move to the
    continuation (``An ant is `` + ``larger`` is scored as ``An ant is`` + `` larger``)."""
    kept = context.rstrip()
    return kept, context[len(kept):] + continuation


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

