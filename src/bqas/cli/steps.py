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
