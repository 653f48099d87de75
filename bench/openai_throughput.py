"""Throughput of the openai-api model through the command a user runs, side by side in one run.

A loopback server (stdlib ``http.server``, 127.0.0.1 only) answers each chat completion after a fixed
latency (0.2 s by default), as a model server of that speed would. ``spatialprobe bench posqa
--backend openai-api --protocol generate`` asks it N items (a POSQA-format file written here: N/2
pairs, each asked bigger and smaller), three times, in this process:

1. one request at a time (``--scorer-arg concurrency=1``): the baseline;
2. adaptive concurrency (the default: 32 in flight, halved on rate limits);
3. adaptive again, against a server answering every 3rd request with HTTP 429 (``Retry-After: 0``,
   so no wait): every item must still be answered, with at most 1.5 N requests.

Printed: wall seconds, requests sent, items/s and the speed-up over the baseline. Goal: adaptive at
least 16x the baseline (half the ideal 32x at 0.2 s), and under 429s all N answered in at most
1.5 N requests. No answer cache (``cache_dir=off``), so every run asks the server.

    python bench/openai_throughput.py [--items 400] [--latency 0.2] [--baseline-items 400]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class LatencyServer(ThreadingHTTPServer):
    """A chat-completions endpoint that answers "Yes." after ``latency`` seconds; with ``every``,
    each ``every``-th POST is refused with HTTP 429 at once."""

    request_queue_size = 256
    daemon_threads = True

    def __init__(self, latency: float, every: int = 0):
        self.latency, self.every, self.posts = latency, every, 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body not held 40 ms for an ACK
    server: LatencyServer

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": "bench", "owned_by": "bench"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.posts += 1
            refused = self.server.every and self.server.posts % self.server.every == 0
        if refused:
            self._send(429, {"error": "rate limited"}, {"Retry-After": "0"})
            return
        time.sleep(self.server.latency)
        self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Yes."},
                                      "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 20, "completion_tokens": 2}})

    def log_message(self, *args: Any) -> None:
        pass


def posqa_file(folder: Path, items: int) -> Path:
    """A POSQA-format file of ``items`` questions (``items // 2`` pairs, asked bigger and smaller)."""
    records = {}
    for n in range(items // 2):
        for k, word in enumerate(("bigger", "smaller")):
            label = (n % 2 == 0) == (word == "bigger")
            records[f"{n}_{n + 1}_{k}"] = {
                "h_name": f"thing{n}", "t_name": f"other{n}", "magnitude": ["1", "3", 2], "paras": [],
                "general_question": f"Is the thing{n} {word} than the other{n}", "general_question_label": label,
                "special_question": f"Which one is {word} between thing{n} and other{n}",
                "special_question_label": f"thing{n}" if label else f"other{n}"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "posqa.json"
    path.write_text(json.dumps(records))
    return path


def timed_run(data: Path, server: LatencyServer, out: Path, *extra: str) -> tuple[float, dict[str, Any]]:
    """Seconds ``spatialprobe bench posqa`` takes in this process, and the run's request counts."""
    from spatialprobe.cli import app

    args = ["bench", "posqa", "--data", str(data), "--backend", "openai-api", "--model", "bench",
            "--base-url", server.url, "--protocol", "generate", "--max-new-tokens", "4", "--out", str(out),
            "--scorer-arg", "cache_dir=off", *extra]
    with contextlib.redirect_stdout(io.StringIO()):  # each run's table: only the figures below are printed
        start = time.perf_counter()
        code = app(args, standalone_mode=False)
        seconds = time.perf_counter() - start
    if code:
        raise SystemExit(f"spatialprobe {' '.join(args)} ended with exit code {code}")
    summary = json.loads((out / "summary.json").read_text())
    return seconds, {**summary["details"]["requests"], "n": summary["metrics"]["accuracy"]["n"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--baseline-items", type=int, default=None,
                        help="items of the one-at-a-time run (default: --items); its items/s is what is compared")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = posqa_file(folder, args.items)
        base_data = posqa_file(folder / "baseline", args.baseline_items) if args.baseline_items else data
        plain, limited = LatencyServer(args.latency), LatencyServer(args.latency, every=3)
        for server in (plain, limited):
            threading.Thread(target=server.serve_forever, daemon=True).start()
        warm = posqa_file(folder / "warm", 4)
        timed_run(warm, plain, folder / "warm-run")  # imports and first-call costs out of the timings
        rows = []
        for n, (name, server, file, extra) in enumerate((
                ("one at a time (concurrency=1)", plain, base_data, ["--scorer-arg", "concurrency=1"]),
                ("adaptive (default)", plain, data, []),
                ("adaptive, every 3rd request 429", limited, data, []))):
            seconds, counts = timed_run(file, server, folder / f"run{n}", *extra)
            rows.append((name, seconds, counts))
        for server in (plain, limited):
            server.shutdown()
    base_rate = rows[0][2]["n"] / rows[0][1]
    print(f"openai-api through `spatialprobe bench posqa`, {args.latency:g} s a request, loopback server\n")
    print("| run | items | answered | seconds | requests sent | 429s | items/s | speed-up | most in flight |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, seconds, counts in rows:
        rate = counts["n"] / seconds
        print(f"| {name} | {counts['n']} | {counts['answered'] - 1} | {seconds:.2f} | {counts['sent'] - 1} | "
              f"{counts['failures'].get('429', 0)} | {rate:.1f} | {rate / base_rate:.1f}x | "
              f"{counts['in_flight']['most_in_flight']} |")
    adaptive, limited_row = rows[1], rows[2]
    ratio = adaptive[2]["n"] / adaptive[1] / base_rate
    used = limited_row[2]["sent"] - 1  # less the GET /models
    print(f"\nadaptive / one at a time: {ratio:.1f}x (goal >= 16x); under 429s: {limited_row[2]['answered'] - 1} of "
          f"{args.items} answered with {used} requests (goal: all, <= {int(1.5 * args.items)})")


if __name__ == "__main__":
    main()
