"""The event loop a run judges on and the progress bar that shows it, for the local executor and the Ray
executor alike."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop where available (less CPU per request at high concurrency), else asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def rate_and_eta(completed_now: int, remaining: int, elapsed: float) -> tuple[str, str]:
    """The rate (items finished in this process over its elapsed time, per second or, below one, per
    minute) and the time left at that rate, as shown beside the bar. A windowed speed estimate is wrong
    for slow runs (a few items per minute) and for results that arrive in batches (a Ray run's)."""
    if completed_now <= 0 or elapsed <= 0:
        return "–", "–"
    rate = completed_now / elapsed
    shown = f"{rate:.1f}/s" if rate >= 1 else f"{rate * 60:.1f}/min"
    left = round(remaining / rate)
    return shown, f"{left // 3600}:{left % 3600 // 60:02d}:{left % 60:02d}"


@contextmanager
def progress_bar(name: str, total: int, done: int) -> Iterator[Callable[[int], None]]:
    """The run's progress bar (samples done of total, rate, ETA); yields ``advance(n)``."""
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA {task.fields[eta]}"),
    )
    started = time.monotonic()
    with Progress(*columns, transient=False) as progress:
        task = progress.add_task(name, total=total, completed=done, rate="–", eta="–")

        def advance(n: int) -> None:
            progress.advance(task, n)
            completed = int(progress.tasks[task].completed)
            rate, eta = rate_and_eta(completed - done, total - completed, time.monotonic() - started)
            progress.update(task, rate=rate, eta=eta)

        yield advance
