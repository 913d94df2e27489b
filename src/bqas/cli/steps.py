"""Progress of a command's long steps on stderr (a bar per step), only where a person watches."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

#: ``(what, done, total)``: the step's description and how far it is.
StepHook = Callable[[str, int, int], None]


@contextmanager
def step_progress(show: bool | None = None) -> Iterator[StepHook | None]:
    """A hook that draws one progress bar per step on stderr where a person watches a terminal.

    ``show`` None means: when stderr is a terminal; elsewhere (a pipe, a CI log) the hook draws no bar but
    names each step that takes a while on one line (:func:`slow_step`). ``show`` False: None, nothing is
    said. The bars disappear when the command is done, so what it prints stays the output."""
    if show is None:
        show = sys.stderr.isatty()
        if not show:
            with _step_lines() as named:
                yield named
            return
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


@contextmanager
def _step_lines() -> Iterator[StepHook]:
    """A step hook without bars: each step is a :func:`slow_step` from its first report until it is
    complete (or the next step begins), so a log gets one line per step that takes a while, no counts."""
    from contextlib import ExitStack

    current: list[str] = []
    open_step = ExitStack()

    def hook(what: str, done: int, total: int) -> None:
        if not current or current[0] != what:
            open_step.close()
            current[:] = [what]
            open_step.enter_context(slow_step(what, spinner=False))
        if done >= total:
            open_step.close()

    with open_step:
        yield hook


#: How long a step may run before it says what it is doing (env ``BQAS_SLOW_STEP_SECONDS``; 0 names every step).
SLOW_STEP_SECONDS = 2.0


def _slow_after() -> float:
    import os

    raw = os.environ.get("BQAS_SLOW_STEP_SECONDS", "")
    try:
        value = float(raw) if raw.strip() else SLOW_STEP_SECONDS
    except ValueError:
        return SLOW_STEP_SECONDS
    return value if value >= 0 else SLOW_STEP_SECONDS


def _watched(stream: object) -> bool:
    """Whether ``stream`` is a process stream someone can watch (a terminal, a pipe, a CI log): output
    captured in memory (an embedding program's buffer, a test runner's CliRunner) gets no step lines,
    whose presence would depend on how fast the machine is."""
    try:
        stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return False
    return True


@contextmanager
def slow_step(name: str, after: float | None = None, *, spinner: bool | None = None) -> Iterator[None]:
    """Say what a step is doing once it has taken ``after`` seconds (default :data:`SLOW_STEP_SECONDS`):
    on a terminal a spinner with the step's name (gone when the step ends), in a pipe or a CI log one line
    ``name …`` on stderr. A quick step shows nothing. ``spinner`` None means: when stderr is a terminal."""
    import threading

    if not _watched(sys.stderr):
        yield
        return
    wait = _slow_after() if after is None else after
    finished = threading.Event()
    use_spinner = sys.stderr.isatty() if spinner is None else spinner

    def watch() -> None:
        if finished.wait(wait):
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


def step(name: str, *, bar: bool = False) -> AbstractContextManager[None]:
    """:func:`slow_step` for a step of a command. ``bar``: the step draws its own progress bar on a
    terminal, so there it needs no spinner; in a pipe or a CI log (no bar is drawn) its name still comes
    as one line once it takes a while."""
    if bar and sys.stderr.isatty():
        return nullcontext()
    return slow_step(name)


def quiet_step(name: str, *, bar: bool = False) -> AbstractContextManager[None]:
    """A step of a command run with ``--no-progress``: nothing drawn, no line."""
    return nullcontext()


def steps(progress: bool) -> Callable[..., AbstractContextManager[None]]:
    """The step helper of a command with ``--progress/--no-progress``: :func:`step`, or, with
    ``--no-progress``, one that shows nothing."""
    return step if progress else quiet_step
