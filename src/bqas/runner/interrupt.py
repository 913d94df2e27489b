"""Ctrl-C and SIGTERM during a run: the judging in flight is cancelled inside the event loop (so every
connection and worker closes while the loop still runs, and nothing is left pending when it closes), what
finished is stored, and the command exits 130 (SIGINT) or 143 (SIGTERM) with one line naming the resume
command."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RunInterrupted(KeyboardInterrupt):
    """The run was stopped by a signal; ``exit_code`` is the shell's 128 + the signal's number."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def exit_code_of(exc: BaseException) -> int:
    """130 for a plain KeyboardInterrupt, 128 + the signal for a RunInterrupted."""
    return exc.exit_code if isinstance(exc, RunInterrupted) else 128 + signal.SIGINT


def run_until_stopped(loop: asyncio.AbstractEventLoop, main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` on ``loop``; SIGINT or SIGTERM cancels it (its ``finally`` blocks run on the loop) and
    raises RunInterrupted. The loop's async generators and default executor are shut down before it
    closes, so no task is destroyed while pending."""
    task = loop.create_task(main)
    caught: list[int] = []

    def stop(signum: int) -> None:
        if not caught:  # a second Ctrl-C while cleaning up changes nothing: the cleanup is short
            caught.append(signum)
            task.cancel()

    installed = []
    for sig in STOP_SIGNALS:
        try:
            loop.add_signal_handler(sig, stop, sig)
            installed.append(sig)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signal support
            pass
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        if not caught:
            raise
        raise RunInterrupted(caught[0]) from None
    except KeyboardInterrupt:
        # A signal that arrived where the handler could not run it as a cancellation: cancel now.
        if not task.done():
            task.cancel()
            # The interruption is what is reported, not how the cancelled work ended.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                loop.run_until_complete(task)
        raise
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises RunInterrupted(SIGTERM) like Ctrl-C raises KeyboardInterrupt
    (outside an event loop: loading, writing the outputs)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise RunInterrupted(signum)

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
