"""Progress of a command's long steps on stderr (a bar per step), only where a person watches."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: ``(what, done, total)``: the step's description and how far it is.
StepHook = Callable[[str, int, int], None]


@contextmanager
def step_progress(show: bool | None = None) -> Iterator[StepHook | None]:
    """A hook that draws one progress bar per step on stderr, or None where nobody watches.

    ``show`` None means: when stderr is a terminal (a CI log or a pipe gets no bars). The bars disappear
    when the command is done, so what it prints stays the output."""
    if show is None:
        show = sys.stderr.isatty()
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bars:
        tasks: dict[str, TaskID] = {}

        def hook(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bars.add_task(what, total=total)
            bars.update(tasks[what], completed=done, total=total)

        yield hook


#: How long a step may run before it says what it is doing.
SLOW_STEP_SECONDS = 2.0


@contextmanager
def slow_step(name: str, after: float = SLOW_STEP_SECONDS, *, spinner: bool | None = None) -> Iterator[None]:
    """Say what a step is doing once it has taken ``after`` seconds: on a terminal a spinner with the step's
    name (gone when the step ends), in a pipe or a CI log one line ``name …`` on stderr. A quick step shows
    nothing. ``spinner`` None means: when stderr is a terminal."""
    import threading

    finished = threading.Event()
    use_spinner = sys.stderr.isatty() if spinner is None else spinner

    def watch() -> None:
        if finished.wait(after):
            return
        if use_spinner:
            from rich.console import Console

            with Console(stderr=True).status(name):
                finished.wait()
        else:
            print(f"{name} …", file=sys.stderr, flush=True)

    watcher = threading.Thread(target=watch, name="bqas-slow-step", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        finished.set()
        watcher.join()
