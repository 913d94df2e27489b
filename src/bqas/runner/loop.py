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


@contextmanager
def progress_bar(name: str, total: int, done: int) -> Iterator[Callable[[int], None]]:
    """The run's progress bar (samples done of total, rate, ETA); yields ``advance(n)``."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}/s"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=False) as progress:
        task = progress.add_task(name, total=total, completed=done, rate="–")

        def advance(n: int) -> None:
            progress.advance(task, n)
            speed = progress.tasks[task].speed
            progress.update(task, rate=f"{speed:.1f}" if speed else "–")

        yield advance
