"""A run's whole remaining work fed to an adapter that takes a stream (a model behind a server),
instead of one batch at a time: the requests in flight are bounded by the adapter's concurrency,
never by ``--batch-size``, and no batch waits for its slowest request.

The adapter declares it by a ``stream(work, answer)`` method
(:meth:`spatialprobe.models.openai_api.OpenAIServer.stream`): it answers each unit of ``work`` by
calling ``answer`` (the run's own computation of one item, which asks the adapter through its
ordinary ``generate``/``score``) as many at once as it keeps in flight, and yields each as it
finishes. :func:`streamed` groups what arrives for the run spine, which commits each group in one
transaction (so a killed run resumes from there, and the adapter's own answer cache holds
everything answered since).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from spatialprobe.runner import Item

GROUP_SECONDS = 0.5
"""Answers that arrived are handed to the spine at least this often (each group one transaction)."""
GROUP_ITEMS = 64
"""... or as soon as this many arrived."""


def takes_stream(model: Any) -> bool:
    """Whether ``model`` takes a run's whole work as a stream (its class has a ``stream`` method;
    read from the class, so a model deferred to a Ray cluster is never built to answer)."""
    return callable(getattr(type(model), "stream", None))


def streamed(model: Any, work: list[Sequence[Item]], compute_one: Callable[[Item], Any]
             ) -> Iterator[tuple[list[Item], list[Any]]]:
    """(items, results) in groups, as ``model.stream`` answers them, in any order."""
    items = [item for batch in work for item in batch]
    answers = model.stream(items, compute_one)
    group: list[tuple[Item, Any]] = []
    since = time.monotonic()
    while True:
        try:
            item, result = next(answers)
        except StopIteration:
            break
        except Exception:
            if group:  # what was answered before the failure is still committed
                yield [i for i, _ in group], [r for _, r in group]
            raise
        group.append((item, result))
        if len(group) >= GROUP_ITEMS or time.monotonic() - since >= GROUP_SECONDS:
            yield [i for i, _ in group], [r for _, r in group]
            group, since = [], time.monotonic()
    if group:
        yield [i for i, _ in group], [r for _, r in group]
