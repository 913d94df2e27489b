"""A check that answers within its own deadline even when what it asks does not.

``/readyz`` and the queue series of ``/metrics`` ask the database; a load balancer or a scraper waits
only seconds for them. :class:`DeadlineCall` runs the question on a thread of its own and gives up
waiting after the deadline (the thread finishes in the background, bounded by the store's own limits).
While a question is still out, a new caller waits for its answer instead of asking again, so that checks
of a frozen database never pile up threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

T = TypeVar("T")


class NoAnswer(TimeoutError):
    """The question was not answered within the deadline."""


class DeadlineCall:
    """Ask one question at a time, each waited for at most ``deadline`` seconds."""

    def __init__(self, name: str, deadline: float):
        self.name = name
        self.deadline = deadline
        self._busy: Future[object] | None = None
        self._lock = threading.Lock()

    def __call__(self, fn: Callable[[], T]) -> T:
        """``fn()``'s result or exception; :class:`NoAnswer` after the deadline (call from a thread)."""
        with self._lock:
            future = self._busy
            if future is None or future.done():
                future = Future()
                self._busy = future
                threading.Thread(target=_answer, args=(future, fn), name=f"bqas-{self.name}", daemon=True).start()
        try:
            return future.result(timeout=self.deadline)  # type: ignore[return-value]
        except FutureTimeout:
            raise NoAnswer(f"{self.name}: no answer within {self.deadline:g} s") from None


def _answer(future: Future[object], fn: Callable[[], object]) -> None:
    try:
        future.set_result(fn())
    except BaseException as exc:  # handed to the waiting callers
        future.set_exception(exc)
