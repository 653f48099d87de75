"""How many requests a model behind a server has in flight, and how a run feeds it.

* :class:`InFlight`: the requests a client may have open at once (an ``asyncio`` limit). Adaptive by
  default, as Inspect's and lmms-eval's clients are: it starts at :data:`START`, halves on a rate
  limit (HTTP 429 or 503; at most once per round of requests already in flight, never below
  :data:`FLOOR`) and grows back by one after each round of answers that met no rate limit, up to
  where it started. ``fixed=N`` (``--scorer-arg concurrency=N``) holds it at N.
* :func:`feed`: the run's whole remaining work put to an adapter as an iterable: each unit is
  answered by a call (the adapter's ordinary ``generate``/``score`` on one item), as many at once as
  ``width`` allows, and yielded as it finishes, so the run commits each answer as it arrives
  rather than waiting for the slowest of a batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

START = 32
"""Requests in flight an adaptive client starts with (vLLM's and SGLang's providers in Inspect use 32)."""
FLOOR = 8
"""An adaptive client never halves below this many in flight (a quarter of the start; Inspect's floor is 10)."""

T = TypeVar("T")
R = TypeVar("R")


class InFlight:
    """At most :attr:`limit` requests open at once; adaptive unless ``fixed``."""

    def __init__(self, fixed: int | None = None):
        self.fixed = fixed
        self.limit = fixed or START
        self.ceiling = self.limit
        self.open = 0
        self.most = 0
        """The most requests that were ever open at once."""
        self.halvings = 0
        self._answered_since_change = 0
        self._rate_limited_round = False
        self._changed: asyncio.Condition | None = None  # made on the event loop, at the first slot

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Held while one request is open: waits while :attr:`limit` are open."""
        if self._changed is None:
            self._changed = asyncio.Condition()
        async with self._changed:
            await self._changed.wait_for(lambda: self.open < self.limit)
            self.open += 1
            self.most = max(self.most, self.open)
        try:
            yield
        finally:
            async with self._changed:
                self.open -= 1
                self._changed.notify_all()

    def answered(self) -> None:
        """One answer came: after a round of :attr:`limit` answers without a rate limit, one more in flight."""
        if self.fixed:
            return
        self._answered_since_change += 1
        if self._answered_since_change >= self.limit:
            if not self._rate_limited_round and self.limit < self.ceiling:
                self.limit += 1
            self._answered_since_change, self._rate_limited_round = 0, False

    def rate_limited(self) -> None:
        """A 429 or 503: half as many in flight (once per round, so a burst of refusals of the
        requests already open halves it once)."""
        if self.fixed or self._rate_limited_round:
            return
        self.limit = max(FLOOR, self.limit // 2)
        self.halvings += 1
        self._rate_limited_round, self._answered_since_change = True, 0

    def state(self) -> dict[str, int | str]:
        """What the run's summary says of it."""
        return {"concurrency": self.fixed or "adaptive", "start": self.ceiling, "now": self.limit,
                "most_in_flight": self.most, "halvings": self.halvings}


def feed(work: Iterable[T], answer: Callable[[T], R], width: int) -> Iterator[tuple[T, R]]:
    """``(unit, answer(unit))`` for every unit of ``work``, at most ``width`` answered at once (one
    thread each), yielded as each finishes. On the first failure nothing more is started, what is
    running finishes and its answers are yielded, then the failure is raised."""
    units = iter(work)
    failure: BaseException | None = None
    with ThreadPoolExecutor(max(1, width), thread_name_prefix="feed") as pool:
        running: dict[Future[R], T] = {}

        def top_up() -> None:
            while failure is None and len(running) < width:
                try:
                    unit = next(units)
                except StopIteration:
                    return
                running[pool.submit(answer, unit)] = unit

        top_up()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                unit = running.pop(future)
                error = future.exception()
                if error is not None:
                    failure = failure or error
                    continue
                yield unit, future.result()
            top_up()
    if failure is not None:
        raise failure



class LoopThread:
    """An ``asyncio`` event loop running in a daemon thread, for a client that many threads call."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="server-client", daemon=True)
        self._thread.start()

    def run(self, coroutine: Any) -> Any:
        """Run ``coroutine`` on the loop and wait for its result (its exception raised here)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
