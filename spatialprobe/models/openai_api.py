"""Any OpenAI-compatible server as a model: vLLM, SGLang, LMDeploy, TGI, ``transformers serve``,
hosted APIs. One adapter, the one vocabulary of :mod:`spatialprobe.models.base`.

* :meth:`OpenAIServer.generate`: ``POST {base_url}/chat/completions``, one user turn (the image
  first, as a base64 PNG data URL, then the text; the text alone when the request has no image),
  greedy (``temperature`` 0; a sampled request sends its temperature and ``seed``), ``max_tokens`` =
  the request's ``max_new_tokens``. The reply is cut
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
* **Traffic, cache, key**: :class:`~spatialprobe.models.openai_client.ServerClient` (requests in
  flight adaptive from 32 or fixed by ``concurrency``; each bounded in time and size; retried;
  counted by :meth:`OpenAIServer.traffic`, which a run's summary carries; each answer cached as it
  arrives, :mod:`spatialprobe.models.openai_cache`; the key read from ``api_key_env``, never
  recorded nor printed). A run feeds it its whole remaining work (:meth:`OpenAIServer.stream`).
* **Identity.** :meth:`fingerprint`: the endpoint and the served model's entry of
  ``GET {base_url}/models`` (id, owner, vLLM's ``root``); a server holds no weights hash to give.
  A run records it as its model input, so a resume against a server that now serves another model
  under the name is refused.
* **Choice.** Taken by name (``--backend openai-api``); it reads no ``config.json``
  (``reads_config``), and ``--model`` is the server's name for the model.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

from spatialprobe.errors import ModelLoadError, UsageError
from spatialprobe.extras import require
from spatialprobe.models.base import Declared, GenerateRequest, Option, Progress, ScoreRequest, cut
from spatialprobe.models.in_flight import START, feed
from spatialprobe.models.openai_cache import AnswerCache
from spatialprobe.models.openai_client import ServerClient, redact
from spatialprobe.registry import component

RETRIED = "HTTP 429, HTTP 5xx, connection errors, timeouts and empty answers"
MODEL_FIELDS = ("id", "owned_by", "root", "parent", "max_model_len")
"""The fields of a ``/models`` entry that say which model it is (``created`` changes per start)."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
T = TypeVar("T")
R = TypeVar("R")


def read_concurrency(value: Any) -> int | str:
    """``auto`` or a positive number of requests in flight (the ``concurrency`` option)."""
    if str(value).strip().lower() == "auto":
        return "auto"
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1:
        raise UsageError(f"--scorer-arg concurrency={value}: it must be auto or at least 1.")
    return number


@component("model", "openai-api",
           "any OpenAI-compatible server (vLLM, SGLang, TGI, transformers serve, hosted): chat + /completions")
class OpenAIServer(Declared):
    """A model behind an OpenAI-compatible HTTP server, named ``model`` (or ``served_model``) there."""
    gpus: ClassVar[int] = 0
    reads_config: ClassVar[bool] = False
    """Chosen by name: ``--model`` is the server's name for the model, no checkpoint's configuration."""

    name = "openai-api"
    protocols: ClassVar[tuple[str, ...]] = ("score", "generate")
    """``generate`` on any server; ``score`` where ``/completions`` returns prompt log-probabilities."""
    sees_images: ClassVar[bool] = True
    samples: ClassVar[bool] = True
    sampler: ClassVar[str] = ("the server's: temperature T and the request's seed in the body (vLLM and OpenAI "
                              "take a seed)")
    wordings: ClassVar[tuple[str, ...]] = ("question",)
    """A chat server is asked the question (what the ask kind assumed where none was declared)."""
    """Through ``generate`` (a data URL in the chat turn); ``score`` refuses an image."""
    options: ClassVar[dict[str, Option]] = {
        "base_url": Option(str, "http://127.0.0.1:8000/v1", "the server's OpenAI API root (ends in /v1)"),
        "served_model": Option(str, "", "the model's name on the server; empty: the --model value"),
        "api_key_env": Option(str, "", "the NAME of the environment variable holding the key; empty: none"),
        "concurrency": Option(read_concurrency, "auto",
                              f"requests in flight: auto (from {START}, halved on rate limits) or a fixed number"),
        "timeout": Option(float, 120.0, "seconds one whole request may take (connect to last byte), "
                                        "then it is retried"),
        "retries": Option(int, 4, f"re-sends of a request after {RETRIED}"),
        "backoff": Option(float, 1.0, "seconds before the first re-send, doubled at each"),
        "cache_dir": Option(str, "", "folder of the answer cache; empty: $SPATIALPROBE_HOME/cache; off: none"),
    }
    runtime_options: ClassVar[tuple[str, ...]] = ("api_key_env", "concurrency", "timeout", "retries", "backoff",
                                                  "cache_dir")
    """Options that say how requests travel, never what comes back: a run's runtime, not its identity."""

    def __init__(self, model: str, base_url: str = "http://127.0.0.1:8000/v1", served_model: str = "",
                 api_key_env: str = "", concurrency: int | str = "auto", timeout: float = 120.0, retries: int = 4,
                 backoff: float = 1.0, cache_dir: str = "", device: str = "auto", batch_size: int = 8):
        require("httpx", "api", "The openai-api model")
        fixed = read_concurrency(concurrency)
        _check(base_url, api_key_env, fixed, timeout, retries, backoff, device)
        self.base_url, self.model_name = base_url.rstrip("/"), served_model or str(model)
        self.batch_size = batch_size  # unused: a run feeds the whole of its work (stream)
        self.api_key_env = api_key_env
        self.client = ServerClient(self.base_url, api_key_env, None if fixed == "auto" else int(fixed), timeout,
                                   retries, backoff, cache_dir)
        try:
            self._served = self._served_entry()
        except BaseException:
            self.client.close()
            raise
        self.client.served = self._served

    @property
    def cache(self) -> AnswerCache | None:
        """The answer cache (None for ``cache_dir=off``)."""
        return self.client.cache

    # -- identity --------------------------------------------------------------------------------
    def _served_entry(self) -> dict[str, Any]:
        """The served model's entry of ``GET /models``; refused when the server does not serve it."""
        listed = self.client.first_contact("/models").get("data") or []
        entry = next((m for m in listed if isinstance(m, dict) and m.get("id") == self.model_name), None)
        if entry is None:
            names = ", ".join(str(m.get("id")) for m in listed if isinstance(m, dict)) or "none"
            raise UsageError(redact(f"the server at {self.base_url} does not serve {self.model_name!r} (it serves: "
                                    f"{names}); give its name there with --model, or --scorer-arg served_model=NAME."))
        return {key: entry[key] for key in MODEL_FIELDS if key in entry}

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the model: the endpoint and the served model's entry (no weights hash),
        and their digest as the run's model fingerprint (``served:...``)."""
        entry = {"endpoint": redact(self.base_url), "served_model": self._served}
        digest = hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()[:16]
        return {"model": self.model_name, **entry, "fingerprint": f"served:{digest}"}

    def describe(self) -> dict[str, Any]:
        """What changes the numbers: endpoint, served model, prompt, decoding."""
        return {"scorer": self.name, "model": self.model_name, **self.fingerprint(), "weights_sha256": None,
                "prompt": "generate: the server's chat template, one user turn (image as a PNG data URL, then "
                          "text); score: context + option + suffix as plain text to /completions",
                "score": "log-likelihood: the sum of the echoed prompt log-probabilities of the tokens after "
                         "the context's (usage.prompt_tokens of the context alone)",
                "decoding": {"temperature": 0, "max_tokens": "each request's max_new_tokens"},
                "api_key_env": self.api_key_env or None}

    def runtime(self) -> dict[str, Any]:
        """How requests travel (changes no answer)."""
        client = self.client
        return {"concurrency": client.in_flight.fixed or "auto", "timeout": client.timeout,
                "retries": client.retries, "backoff": client.backoff,
                "cache": str(self.cache.path) if self.cache else "off", "requests": self.traffic()}

    def traffic(self) -> dict[str, Any]:
        """Counts of this adapter's requests (:meth:`.ServerClient.traffic`)."""
        return self.client.traffic()

    def stream(self, work: Iterable[T], answer: Callable[[T], R]) -> Iterator[tuple[T, R]]:
        """A run's whole remaining work, each unit answered by ``answer`` (which asks this model),
        as many at once as the requests in flight allow, yielded as each finishes
        (:func:`~spatialprobe.models.in_flight.feed`)."""
        return feed(work, answer, self.client.in_flight.ceiling)

    # -- the two protocols -----------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[str]:
        """The greedy reply to each request, in request order, cut at its first stop string."""
        bodies = [self._chat_body(r) for r in requests]
        answers = self.client.send("/chat/completions", bodies, progress)
        return [cut(str(((a or {}).get("message") or {}).get("content") or ""), r.stop)
                for a, r in zip(answers, requests, strict=True)]  # None: nothing usable, a parse failure

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        """Each option's log-likelihood as the continuation of the request's context."""
        if any(r.image is not None for r in requests):
            raise UsageError(f"the {self.name} model scores options through /completions, which takes no "
                             "image: ask items with images by --protocol generate.")
        cells = [_split(self._context(r), o + r.suffix) for r in requests for o in r.options]
        contexts = list(dict.fromkeys(c for c, _ in cells))
        prompts = contexts + [c + t for c, t in cells]
        answers = self.client.send("/completions", [self._echo_body(p) for p in prompts], None)
        if any(a is None for a in answers):
            raise ModelLoadError(redact(f"the server at {self.base_url} answered /completions with nothing usable "
                                        f"after {self.client.retries + 1} tries."))
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
                                "temperature": request.temperature or 0, "max_tokens": request.max_new_tokens}
        if request.temperature:  # sampled: the draw's seed, so a cached answer is this sample's
            body["seed"] = request.seed
        return body  # no "stop": the reply is cut here (see the module's docstring)

    def _echo_body(self, prompt: str) -> dict[str, Any]:
        return {"model": self.model_name, "prompt": prompt, "max_tokens": 1, "temperature": 0, "echo": True,
                "logprobs": 1}

    def _prompt_logprobs(self, answer: dict[str, Any] | None, prompt: str) -> list[float | None]:
        """The log-probability of each of the prompt's tokens (``usage.prompt_tokens`` of them);
        refused where the server returned none."""
        answer = answer or {}
        values = (answer.get("logprobs") or {}).get("token_logprobs")
        count = (answer.get("usage") or {}).get("prompt_tokens")
        if not values or not isinstance(count, int) or len(values) < count \
                or not str(answer.get("text", "")).startswith(prompt):
            raise UsageError(f"the server at {self.base_url} returned no prompt log-probabilities from "
                             "/completions (it ignores echo and logprobs, as transformers serve does), so the "
                             f"{self.name} model cannot score options there: use --protocol generate, or a "
                             "server that returns them (vLLM does).")
        return list(values[:count])

    def _continuation_logprob(self, answer: dict[str, Any] | None, prompt: str, context_tokens: int) -> float:
        """The sum of the log-probabilities of the prompt's tokens after the context's
        ``context_tokens`` (the continuation is what follows the context's tokens, as the causal
        adapter splits it)."""
        picked = self._prompt_logprobs(answer, prompt)[context_tokens:]
        if not picked or any(v is None for v in picked):
            raise UsageError(f"the server at {self.base_url} gave the option in {prompt!r} no token of its own "
                             "with a log-probability (its text merged into the context's last token?); it "
                             "cannot be scored.")
        return float(sum(v for v in picked if v is not None))

    def close(self) -> None:
        self.client.close()


def png_data_url(image: Any) -> str:
    """The image (a PIL image or a path) as ``data:image/png;base64,...``: lossless, RGB as the
    in-process adapters see it."""
    from spatialprobe.vision import open_image

    buffer = io.BytesIO()
    open_image(image).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _check(base_url: str, api_key_env: str, concurrency: int | str, timeout: float, retries: int, backoff: float,
           device: str) -> None:
    """Each setting out of range refused in one sentence (the key's variable, a URL's password
    never echoed)."""
    if not re.match(r"https?://[^/@\s]+(/|$)", base_url):
        raise UsageError(f"--base-url is an http(s) URL without credentials, such as http://127.0.0.1:8000/v1 (a "
                         f"key goes in a variable named by --api-key-env), not {redact(base_url)!r}.")
    if api_key_env and not _ENV_NAME.fullmatch(api_key_env):
        raise UsageError("--api-key-env takes the NAME of an environment variable (such as OPENAI_API_KEY), "
                         "never the key itself; this value is not a variable name.")
    if retries < 0:
        raise UsageError(f"--scorer-arg retries={retries}: it must be at least 0.")
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

