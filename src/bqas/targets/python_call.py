"""Calling a ``type: python`` target's function so that its ``timeout`` really bounds the run.

A sync function runs in a thread of its own, a daemon thread that nothing joins: Python cannot stop a
thread, so a call past its timeout is abandoned, and an abandoned call must neither hold a worker that
the run's other work (the result writer, large replies parsed off the loop) waits for, as the loop's
default executor would, nor keep the process alive at exit, as ``asyncio.run`` joining that executor
(and any ``ThreadPoolExecutor`` joined at interpreter exit) would. The abandoned thread goes on until the
function returns or the process ends. An async function runs on the loop and is cancelled at its timeout.

What the function does is data about the target, never the end of the run: an exception, ``sys.exit()``
inside it and text that cannot be stored (a lone surrogate) are each that sample's target error.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import itertools
import threading
from collections.abc import Callable
from typing import Any

from bqas.targets.reply import TargetFailure

_thread_numbers = itertools.count(1)


def _storable(text: str) -> str:
    """``text`` with what UTF-8 cannot hold (lone surrogates) written as ``\\udXXX`` escapes."""
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


def _failure_of(spec: str, exc: BaseException) -> TargetFailure:
    if isinstance(exc, SystemExit):
        return TargetFailure(f"{spec} called sys.exit({_storable(repr(exc.code))})", attempts=1)
    return TargetFailure(_storable(f"{spec} raised {type(exc).__name__}: {exc}"), attempts=1)


def _settle(future: asyncio.Future[Any], result: Any, error: TargetFailure | None) -> None:
    if future.done():  # timed out: nobody waits for this call any more
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def _in_own_thread(function: Callable[..., Any], sample: dict[str, Any], spec: str) -> asyncio.Future[Any]:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def work() -> None:
        result: Any = None
        error: TargetFailure | None = None
        try:
            result = context.run(function, sample)
        except BaseException as exc:  # sys.exit() and KeyboardInterrupt raised by the function are its own
            error = _failure_of(spec, exc)
        with contextlib.suppress(RuntimeError):  # the loop has closed: the run ended long ago
            loop.call_soon_threadsafe(_settle, future, result, error)

    threading.Thread(target=work, name=f"bqas-python-target-{next(_thread_numbers)}", daemon=True).start()
    return future


async def call_function(function: Callable[..., Any], sample: dict[str, Any], spec: str, timeout: float) -> Any:
    """``function(sample)`` within ``timeout`` seconds; :class:`TargetFailure` for a timeout, an exception
    or ``sys.exit()`` in the function."""
    try:
        if inspect.iscoroutinefunction(function):
            return await asyncio.wait_for(_guarded(function, sample, spec), timeout)
        return await asyncio.wait_for(_in_own_thread(function, sample, spec), timeout)
    except TimeoutError:
        raise TargetFailure(f"timed out: no answer within {timeout:g} s (target.timeout)", attempts=1) from None


async def _guarded(function: Callable[..., Any], sample: dict[str, Any], spec: str) -> Any:
    # Caught inside the coroutine: a task whose coroutine raises SystemExit re-raises it out of the event
    # loop, past every awaiter, and the run would end with the function's exit code.
    try:
        return await function(sample)
    except (Exception, SystemExit) as exc:
        raise _failure_of(spec, exc) from None


def unstorable_text(value: Any, where: str = "") -> str | None:
    """Where in a returned value a text holds a lone surrogate (no UTF-8 form, so no store can keep it):
    ``response``, ``available_facts[2]``, ``a key of metadata``; None when every text is storable."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where or "the value"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and unstorable_text(key) is not None:
                return f"a key of {where}" if where else "a key"
            found = unstorable_text(item, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = unstorable_text(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None
