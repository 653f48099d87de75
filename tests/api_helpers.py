"""A scripted, fault-injecting OpenAI-compatible server on loopback (``http.server``), for the
openai-api model's tests: it answers each path from a script (a list of (status, JSON, delay) or
:class:`Reply` whose last entry repeats, or a function of the request's body returning a JSON
payload or a :class:`Reply`) and records every request it receives. A :class:`Reply` can misbehave
as servers do: drip its bytes slowly, send a body of any size or bytes, add headers (Retry-After).

:func:`vllm_like` scripts it as vLLM answers: a chat reply that depends on the request's content,
and ``/completions`` with ``echo`` and ``logprobs`` (the prompt split at spaces, each piece's
log-probability a fixed function of its text and position), so the likelihood protocol has
prompt log-probabilities to read.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

MODEL = "tiny"


@dataclass
class Reply:
    """One answer: a status and a JSON payload (or ``raw`` bytes), after ``delay`` seconds, its
    body sent one byte every ``drip`` seconds where set."""

    status: int = 200
    payload: Any = None
    delay: float = 0.0
    raw: bytes | None = None
    drip: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)

    def body(self) -> bytes:
        return self.raw if self.raw is not None else json.dumps(self.payload).encode()


def as_reply(answer: Any) -> Reply:
    if isinstance(answer, Reply):
        return answer
    if isinstance(answer, tuple):
        return Reply(*answer)
    return Reply(200, answer)


class Script:
    """What the server answers, per path; every request received, as (path, headers, body)."""

    def __init__(self, answers: dict[str, Any]):
        self.answers = {"/v1/models": [(200, {"object": "list", "data": [{"id": MODEL, "owned_by": "me",
                                                                          "created": 123}]}, 0.0)],
                        **answers}
        self.received: list[tuple[str, dict[str, str], Any]] = []
        self.lock = threading.Lock()

    def next(self, path: str, body: Any) -> Reply:
        with self.lock:
            queue = self.answers.get(path) or [(404, {"error": "no such path"}, 0.0)]
            if callable(queue):
                return as_reply(queue(body))
            return as_reply(queue.pop(0) if len(queue) > 1 else queue[0])


class Loopback(ThreadingHTTPServer):
    request_queue_size = 128  # 32 clients connecting at once are not left waiting for a SYN retry
    daemon_threads = True


def start(answers: dict[str, Any]) -> tuple[str, Script, ThreadingHTTPServer]:
    """The server on a free loopback port: (its ``/v1`` URL, its script, the server to shut down)."""
    script = Script(answers)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers
        disable_nagle_algorithm = True  # headers and body not held 40 ms for an ACK

        def _answer(self, body: Any) -> None:
            with script.lock:
                script.received.append((self.path, dict(self.headers), body))
            reply = script.next(self.path, body)
            time.sleep(reply.delay)
            data = reply.body()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            try:
                if not reply.drip:
                    self.wfile.write(data)
                for byte in (data if reply.drip else b""):
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(reply.drip)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client hung up (its timeout, its bound): as a real server sees it

        def do_GET(self) -> None:
            self._answer(None)

        def do_POST(self) -> None:
            self._answer(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))

        def log_message(self, *args: Any) -> None:
            pass

    server = Loopback(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1", script, server


def piece_logprob(piece: str, position: int) -> float:
    """A fixed log-probability in (-8, 0] for a prompt piece at a position."""
    digest = hashlib.sha256(f"{position}\x1f{piece}".encode()).digest()
    return -8.0 * int.from_bytes(digest[:4], "big") / 2**32


def echoed(prompt: str) -> dict[str, Any]:
    """vLLM's /completions answer with echo: the prompt's pieces (split before each space), their
    log-probabilities (None for the first, as vLLM gives), and one generated piece. Words and
    punctuation are pieces of their own (``?yes`` is ``?`` + ``yes``), as in real vocabularies."""
    pieces = re.findall(r"\s*\w+|\s*[^\w\s]+|\s+$", prompt) or [prompt]
    offsets = [sum(len(p) for p in pieces[:i]) for i in range(len(pieces))]
    values = [None, *(piece_logprob(p, i) for i, p in enumerate(pieces) if i)]
    return {"choices": [{"index": 0, "text": prompt + " X", "logprobs": {
        "tokens": [*pieces, " X"], "token_logprobs": [*values, -0.5], "text_offset": [*offsets, len(prompt)],
        "top_logprobs": None}}], "usage": {"prompt_tokens": len(pieces), "completion_tokens": 1}}


def chat_reply(body: dict[str, Any]) -> dict[str, Any]:
    """A reply that depends on the request's content only (deterministic, as greedy decoding)."""
    word = ("yes", "no", "left")[hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()[0] % 3]
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": word}}]}


@pytest.fixture(name="scripted")
def scripted_fixture() -> Iterator[Any]:
    """``scripted(answers)``: a scripted server (:func:`start`) for one test, shut down after it."""
    servers = []

    def begin(answers: dict[str, Any]) -> tuple[str, Script]:
        url, script, server = start(answers)
        servers.append(server)
        return url, script

    yield begin
    for server in servers:
        server.shutdown()
        server.server_close()


def vllm_like() -> tuple[str, Script, ThreadingHTTPServer]:
    """The server scripted as vLLM answers (see the module's docstring)."""
    return start({"/v1/chat/completions": chat_reply, "/v1/completions": lambda body: echoed(body["prompt"])})


def posqa_file(folder: Any, pairs: int = 6) -> Any:
    """A POSQA-format file of ``2 * pairs`` yes/no questions (bench/openai_throughput.py writes it:
    pair n asked "bigger", gold yes for even n, and "smaller")."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from openai_throughput import posqa_file as written

    return written(Path(folder), 2 * pairs)


def question_of(body: dict[str, Any]) -> str:
    """The text of a chat request's user turn."""
    return next(part["text"] for part in body["messages"][0]["content"] if part["type"] == "text")


# -- a real server: transformers serve with a tiny random LLaVA -----------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Served:
    """``transformers serve MODEL`` on 127.0.0.1:port, one thread, started and killed at will."""

    def __init__(self, model: Any, log: Any):
        self.model, self.log, self.port = model, log, free_port()
        self.process: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, wait_s: float = 90.0) -> None:
        import os
        import subprocess
        import sys

        import httpx

        env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
        command = [sys.executable, "-c", "from transformers.cli.transformers import main; main()", "serve",
                   str(self.model), "--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu",
                   "--dtype", "float32"]  # as hf-mllm on a CPU; "auto" reads the config's float16
        self.process = subprocess.Popen(command, env=env, stdout=self.log.open("ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if httpx.get(self.url + "/models", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.25)
        tail = self.log.read_text(errors="replace")[-2000:]
        self.kill()
        pytest.fail(f"transformers serve did not answer within {wait_s:.0f} s:\n{tail}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


@pytest.fixture(scope="module", name="served")
def served_fixture(tmp_path_factory: Any) -> Iterator[Served]:
    """One ``transformers serve`` of a tiny random LLaVA (tests/mllm_helpers.py) for a test module
    (import it there); skipped only where ../shared (the genuine LLaVA processor files) is absent."""
    import importlib.util

    from mllm_helpers import SHARED, build

    if not (SHARED / "llava-1.5-7b-hf").is_dir():
        pytest.skip(f"{SHARED / 'llava-1.5-7b-hf'} is absent")
    missing = [m for m in ("fastapi", "uvicorn", "openai") if importlib.util.find_spec(m) is None]
    if missing:  # declared in the dev extra: a broken install, not a reason to skip
        pytest.fail(f"transformers serve needs {', '.join(missing)}: pip install -e '.[dev]'")
    folder = tmp_path_factory.mktemp("served")
    server = Served(build("llava", folder / "llava"), folder / "serve.log")
    server.start()
    yield server
    server.kill()
